// Package logging builds the functions' JSON loggers and bounds what a
// request can put in a log line.
//
// It exists apart from shared/handlers so that a function that needs only a
// logger (the webhook) does not link the controllers' packages: what a
// function links is what its IAM role is checked to grant, and what its cold
// start loads.
package logging

import (
	"io"
	"log/slog"
	"strconv"
	"strings"
)

// New returns a JSON slog logger writing to w, tagged with the function's
// name, at level ("debug", "info", "warn", "error"; anything else is info).
func New(w io.Writer, function, level string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})).With("function", function)
}

// MaxQuoted is how many bytes of a value Quote keeps.
const MaxQuoted = 128

// Quote quotes a value that came from a request (an event field, a header,
// a name) for an error or log message, keeping at most MaxQuoted bytes of it
// and saying how long it was: a 2 MiB field must not become a 2 MiB log line.
// It never splits a UTF-8 sequence.
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	cut := MaxQuoted
	for cut > 0 && cut < len(s) && !utf8Start(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// utf8Start reports whether b can begin a UTF-8 sequence.
func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// MaxError is how many bytes of an error's text Err keeps.
const MaxError = 1024

// Err is err's text for a log line, at most MaxError bytes: decoding errors
// can carry a request's value (encoding/json quotes a number literal whole).
func Err(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) <= MaxError {
		return s
	}
	cut := MaxError
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "... (" + strconv.Itoa(len(s)) + " bytes)"
}
