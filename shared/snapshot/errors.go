package snapshot

import (
	"fmt"
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
)

// Error is a problem with one object of a snapshot: where it was read
// (source, document, List item), which object (Kind namespace/name), which
// field, and what is wrong. Its text follows package apis' loader errors:
//
//	pods.yaml: document 1 item 3 (Pod default/web-1): spec.containers[0].resources.requests.cpu: quantities must match ...
type Error struct {
	Source    string
	Document  int // 1-based position of the document in Source (0: unknown)
	Item      int // 1-based position in a List document (0: not in a List)
	Kind      string
	Namespace string
	Name      string
	Field     string
	Err       error
}

// Error renders "source: document N item M (Kind ns/name): field: problem".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Document > 0 {
		fmt.Fprintf(&b, ": document %d", e.Document)
		if e.Item > 0 {
			fmt.Fprintf(&b, " item %d", e.Item)
		}
	}
	if obj := e.object(); obj != "" {
		if e.Document > 0 {
			fmt.Fprintf(&b, " (%s)", obj)
		} else {
			fmt.Fprintf(&b, ": %s", obj)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying problem.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) object() string {
	switch {
	case e.Kind == "":
		return ""
	case e.Name == "":
		return e.Kind
	case e.Namespace == "":
		return e.Kind + " " + e.Name
	default:
		return e.Kind + " " + e.Namespace + "/" + e.Name
	}
}

// Errors is every problem found in a snapshot, in source order, one per
// line (the same aggregate the configuration loader returns).
type Errors = apis.Errors
