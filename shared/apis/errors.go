package apis

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// FieldError is one problem with one field: the field's path (as
// "spec.template.spec.requirements[2].operator") and a detail that names the
// offending value.
type FieldError struct {
	Field  string
	Detail string
}

// Error returns "path: detail".
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Detail
	}
	return e.Field + ": " + e.Detail
}

// fieldErrorf builds a FieldError with a formatted detail.
func fieldErrorf(path, format string, args ...any) *FieldError {
	return &FieldError{Field: path, Detail: fmt.Sprintf(format, args...)}
}

// ErrorList is the aggregate of FieldErrors that Validate returns, in a
// deterministic order (by field path, with list indexes compared as numbers).
type ErrorList []*FieldError

// Error joins the errors, one per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the individual errors to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// asError returns nil for an empty list and the sorted list otherwise, so
// callers can `return errs.asError()` without the typed-nil trap.
func (l ErrorList) asError() error {
	if len(l) == 0 {
		return nil
	}
	return l.sorted()
}

// sorted returns a copy ordered by field path; errors on the same field keep
// their order.
func (l ErrorList) sorted() ErrorList {
	out := make(ErrorList, len(l))
	copy(out, l)
	sort.SliceStable(out, func(i, j int) bool { return naturalLess(out[i].Field, out[j].Field) })
	return out
}

// DocumentError is an error in one document of a source file (or one item of
// a List document). Err is a *FieldError for problems with a field.
type DocumentError struct {
	Source string
	Index  int // 1-based position of the document in Source
	Item   int // 1-based position in a List document, 0 outside a List
	Kind   string
	Name   string
	Err    error
}

// Error returns "source: document N (Kind name): error".
func (e *DocumentError) Error() string {
	if loc := e.location(); loc != "" {
		return loc + ": " + e.Err.Error()
	}
	return e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *DocumentError) Unwrap() error { return e.Err }

func (e *DocumentError) location() string {
	var b strings.Builder
	if e.Source != "" {
		b.WriteString(e.Source)
	}
	if e.Index > 0 {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		fmt.Fprintf(&b, "document %d", e.Index)
		if e.Item > 0 {
			fmt.Fprintf(&b, " item %d", e.Item)
		}
	}
	what := ""
	if e.Kind != "" {
		what = strings.TrimSpace(e.Kind + " " + e.Name)
	}
	switch {
	case what == "":
	case b.Len() > 0 && e.Index > 0:
		fmt.Fprintf(&b, " (%s)", what)
	case b.Len() > 0:
		fmt.Fprintf(&b, ": %s", what)
	default:
		b.WriteString(what)
	}
	return b.String()
}

// Errors is the aggregate that Parse, LoadFiles, LoadDir and Config.Validate
// return: every problem found, one DocumentError (or plain error) per line, in
// source order.
type Errors []error

// Error joins the errors, one per line.
func (l Errors) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the individual errors to errors.Is and errors.As.
func (l Errors) Unwrap() []error { return l }

func (l Errors) asError() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// naturalLess orders field paths so that "requirements[2]" sorts before
// "requirements[10]": runs of digits compare as numbers.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		ra, rb := rune(a[0]), rune(b[0])
		if unicode.IsDigit(ra) && unicode.IsDigit(rb) {
			na, restA := leadingDigits(a)
			nb, restB := leadingDigits(b)
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = restA, restB
			continue
		}
		if ra != rb {
			return ra < rb
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func leadingDigits(s string) (digits, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	// Leading zeros do not change the number's order.
	d := strings.TrimLeft(s[:i], "0")
	return d, s[i:]
}
