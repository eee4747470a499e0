// Package coldstart measures each function's init duration as Lambda counts
// it: from the process's start to its first request for an event
// (GET /runtime/invocation/next), which is the part of a cold start a
// binary's size and its packages' init work decide. Each function is built
// as the stack builds it (lambda.norpc, -trimpath, -s -w) for the host's
// architecture, run against a stand-in for Lambda's Runtime API with
// placeholder AWS variables (nothing is called at init), and stopped once it
// asks for an event. The set-up a function does on its first invocation
// (the API server's lists, the state table) is measured by
// test/provision's BenchmarkColdStart. `make bench-e2e` runs both.
package coldstart

import (
	"context"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/names"
)

// BenchmarkInit reports init-ms, the mean init duration over b.N starts,
// for each function.
func BenchmarkInit(b *testing.B) {
	bins := build(b)
	api := newRuntimeAPI(b)
	for _, fn := range slices.Sorted(maps.Keys(bins)) {
		b.Run(fn, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				total += api.initOnce(b, bins[fn])
			}
			b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "init-ms")
		})
	}
}

// build compiles every function under the module's functions/ into a
// temporary directory, by name.
func build(b *testing.B) map[string]string {
	b.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		b.Fatal(err)
	}
	out := b.TempDir()
	args := []string{"build", "-tags", "lambda.norpc", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", out + string(filepath.Separator)}
	bins := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			args = append(args, "./functions/"+e.Name())
			bins[e.Name()] = filepath.Join(out, e.Name())
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build the functions: %v\n%s", err, msg)
	}
	return bins
}

// runtimeAPI stands in for Lambda's Runtime API: it reports each request
// for an event and answers none (the process is stopped instead).
type runtimeAPI struct {
	addr string
	next chan time.Time
}

func newRuntimeAPI(b *testing.B) *runtimeAPI {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	api := &runtimeAPI{addr: l.Addr().String(), next: make(chan time.Time, 1)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/2018-06-01/runtime/invocation/next" {
			http.Error(w, "not served", http.StatusNotFound)
			return
		}
		select {
		case api.next <- time.Now():
		default:
		}
		<-r.Context().Done() // no event: the process is stopped
	})}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() { _ = srv.Close() })
	return api
}

// initOnce starts bin and returns how long it took to ask for an event.
func (api *runtimeAPI) initOnce(b *testing.B, bin string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(),
		"AWS_LAMBDA_RUNTIME_API="+api.addr,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=placeholder", "AWS_SECRET_ACCESS_KEY=placeholder",
		"AWS_EC2_METADATA_DISABLED=true",
		names.EnvQueueURL+"=http://127.0.0.1:1/queue", names.EnvLogLevel+"=error")
	var stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	exited := make(chan error, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { exited <- cmd.Wait() }()
	b.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case at := <-api.next:
		d := at.Sub(start)
		_ = cmd.Process.Kill()
		<-exited
		return d
	case err := <-exited:
		b.Fatalf("%s exited before asking for an event: %v\n%s", filepath.Base(bin), err, stderr.b)
	case <-ctx.Done():
		b.Fatalf("%s did not ask for an event within 30 s\n%s", filepath.Base(bin), stderr.b)
	}
	return 0
}

// limitedBuffer keeps the first 4 KB a process writes, for a failure's
// message.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}
