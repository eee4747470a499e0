package stack

import (
	"os"
	"path/filepath"
	"testing"
)

// maxFunctionBytes is the size target of a function's binary: size is
// cold-start time (README, "The functions").
const maxFunctionBytes = 20_000_000

// allowanceBytes is what a function may link beyond the target, and why.
var allowanceBytes = map[string]int64{
	// The SQS client (shared/redelivery) that brings a failed message
	// back within names.InterruptionRetryVisibility: 0.26 MB, most of it
	// the SDK's serialization schemas, registered at init.
	FnInterruption: 300_000,
}

// Every function's arm64 binary, built as the stack builds it, stays under
// the 20 MB target (plus its allowance); a dependency that drags in a large package fails here
// rather than in a cold start.
func TestFunctionBinariesUnderTarget(t *testing.T) {
	assets := functionAssets(t)
	for _, fn := range FunctionNames() {
		st, err := os.Stat(filepath.Join(assets[fn], "bootstrap"))
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		t.Logf("%s: %.2f MB", fn, float64(st.Size())/1e6)
		if limit := maxFunctionBytes + allowanceBytes[fn]; st.Size() >= limit {
			t.Errorf("%s is %d bytes (%.2f MB): over its %.2f MB target; see what it links with go list -deps and go tool nm -size", fn, st.Size(), float64(st.Size())/1e6, float64(limit)/1e6)
		}
	}
}
