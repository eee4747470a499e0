// Package awscalls records the AWS operations a client configuration makes,
// for end-to-end tests: an SDK middleware notes each call's service package
// and operation, so a suite can check that what the functions actually called
// is among the operations the static scan of their source found (package
// infra/sdkcalls), which is what their IAM policies are checked against.
package awscalls

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"
)

// servicePathPrefix is the import path prefix of the SDK's service packages.
const servicePathPrefix = "github.com/aws/aws-sdk-go-v2/service/"

// Call is one operation: the SDK service package's name ("ec2") and the
// operation ("CreateFleet").
type Call struct {
	Service   string
	Operation string
}

func (c Call) String() string { return c.Service + ":" + c.Operation }

// Recorder counts the operations of the clients made from configurations it
// instrumented. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	calls map[Call]int
}

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{calls: map[Call]int{}} }

// Instrument returns a copy of cfg whose clients record every operation they
// start (once per call, whatever its retries or its outcome).
func (r *Recorder) Instrument(cfg aws.Config) aws.Config {
	out := cfg.Copy()
	out.APIOptions = append(append([]func(*middleware.Stack) error(nil), cfg.APIOptions...), r.addMiddleware)
	return out
}

func (r *Recorder) addMiddleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("awscalls.Record",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if c, ok := CallOf(in.Parameters); ok {
				r.mu.Lock()
				r.calls[c]++
				r.mu.Unlock()
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// CallOf names the operation whose input is params (a *<svc>.<Op>Input of
// an SDK service package).
func CallOf(params any) (Call, bool) {
	t := reflect.TypeOf(params)
	if t == nil {
		return Call{}, false
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	svc, ok := strings.CutPrefix(t.PkgPath(), servicePathPrefix)
	if !ok || strings.Contains(svc, "/") {
		return Call{}, false
	}
	op, ok := strings.CutSuffix(t.Name(), "Input")
	if !ok || op == "" {
		return Call{}, false
	}
	return Call{Service: svc, Operation: op}, true
}

// Calls returns the operations recorded so far with their counts.
func (r *Recorder) Calls() map[Call]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[Call]int, len(r.calls))
	for c, n := range r.calls {
		out[c] = n
	}
	return out
}

// Outside returns the recorded operations that are not in allowed (keyed by
// Call.String()), sorted.
func (r *Recorder) Outside(allowed map[string]bool) []string {
	var out []string
	for c := range r.Calls() {
		if !allowed[c.String()] {
			out = append(out, c.String())
		}
	}
	sort.Strings(out)
	return out
}
