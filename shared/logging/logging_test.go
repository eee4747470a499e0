package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", `""`},
		{"running", `"running"`},
		{"a\"b\n", `"a\"b\n"`},
		{strings.Repeat("x", MaxQuoted), `"` + strings.Repeat("x", MaxQuoted) + `"`},
		{strings.Repeat("x", 2<<20), `"` + strings.Repeat("x", MaxQuoted) + `"... (2097152 bytes)`},
		// A three-byte rune straddling the cut is dropped whole.
		{strings.Repeat("x", MaxQuoted-1) + "€" + "y", `"` + strings.Repeat("x", MaxQuoted-1) + `"... (131 bytes)`},
	}
	for _, tc := range cases {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%d bytes) = %.200s, want %.200s", len(tc.in), got, tc.want)
		}
	}
}

func TestNewLevels(t *testing.T) {
	for level, debug := range map[string]bool{"debug": true, "DEBUG": true, "info": false, "": false, "bogus": false} {
		var buf bytes.Buffer
		New(&buf, "f", level).Debug("d")
		if got := buf.Len() > 0; got != debug {
			t.Errorf("level %q: debug logged %v", level, got)
		}
	}
	var buf bytes.Buffer
	New(&buf, "webhook", "warn").Warn("w", "k", 1)
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m["function"] != "webhook" || m["msg"] != "w" {
		t.Fatalf("line %s: %v", buf.String(), err)
	}
}

func TestErr(t *testing.T) {
	if Err(nil) != "" || Err(errors.New("short")) != "short" {
		t.Fatal("short errors are kept")
	}
	var v struct{ N int }
	err := json.Unmarshal([]byte(`{"N":1`+strings.Repeat("0", 2<<20)+`}`), &v)
	if err == nil || len(err.Error()) < 2<<20 {
		t.Fatalf("premise: encoding/json quotes the literal whole (%d bytes)", len(err.Error()))
	}
	got := Err(err)
	if len(got) > MaxError+40 || !strings.HasSuffix(got, " bytes)") {
		t.Fatalf("Err kept %d bytes: %.80s...", len(got), got)
	}
}
