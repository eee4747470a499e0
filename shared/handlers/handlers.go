// Package handlers holds the entry points of the provision, interruption and
// consolidation functions: plain Go functions of (context, event) that the
// functions' main packages hand to lambda.Start and tests call directly.
//
// For now they decode and log their triggers and stop there: the provision,
// interruption and consolidation flows themselves land in later work. What is
// final already is the contract with Lambda: triggers are decoded strictly, a
// malformed SQS message fails only its own item (ReportBatchItemFailures), and
// no panic reaches the Lambda runtime.
package handlers

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"

	"github.com/nodewright/nodewright/shared/logging"
	"github.com/nodewright/nodewright/shared/names"
)

// Env is the configuration the stack passes to the functions.
type Env struct {
	Cluster    string
	Table      string
	QueueURL   string
	ConfigDir  string
	ConfigHash string
}

// EnvFrom reads Env through getenv (os.Getenv in a function).
func EnvFrom(getenv func(string) string) Env {
	return Env{
		Cluster:    getenv(names.EnvClusterName),
		Table:      getenv(names.EnvTableName),
		QueueURL:   getenv(names.EnvQueueURL),
		ConfigDir:  getenv(names.EnvConfigDir),
		ConfigHash: getenv(names.EnvConfigHash),
	}
}

// NewLogger returns a JSON slog logger writing to w, tagged with the function's
// name, at level ("debug", "info", "warn", "error"; anything else is info).
func NewLogger(w io.Writer, function, level string) *slog.Logger {
	return logging.New(w, function, level)
}

// recovered turns a panic into an error (logged with its stack) so that it
// never reaches the Lambda runtime. Use as `defer recovered(log, &err)`.
func recovered(log *slog.Logger, err *error) {
	if r := recover(); r != nil {
		log.Error("panic", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = fmt.Errorf("panic: %v", r)
	}
}

var errNoSetup = errors.New("handler has no Setup")
