package stack

import (
	"os"
	"path/filepath"
	"testing"
)

// maxFunctionBytes is the ceiling of a function's arm64 binary. It guards
// against a dependency that drags in a large package (client-go's typed
// clientset alone would add about 12 MB), not a budget to shave bytes
// under: the functions sit near 20 MB, and a library type that costs a
// quarter of a megabyte costs a cold start far less than a hand-written
// copy of it costs its readers. Cold start is measured by make bench-e2e.
const maxFunctionBytes = 30_000_000

// Every function's arm64 binary, built as the stack builds it, stays under
// maxFunctionBytes; a dependency that drags in a large package fails here
// rather than in a cold start.
func TestFunctionBinariesUnderTarget(t *testing.T) {
	assets := functionAssets(t)
	for _, fn := range FunctionNames() {
		st, err := os.Stat(filepath.Join(assets[fn], "bootstrap"))
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		t.Logf("%s: %.2f MB", fn, float64(st.Size())/1e6)
		if st.Size() >= maxFunctionBytes {
			t.Errorf("%s is %d bytes (%.2f MB): over the %.2f MB ceiling; see what it links with go list -deps and go tool nm -size", fn, st.Size(), float64(st.Size())/1e6, float64(maxFunctionBytes)/1e6)
		}
	}
}
