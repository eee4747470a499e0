package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: no input makes the scenario parser panic, and every error it
// returns names the file.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../scenarios/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: x\nsteps:\n  - bogus: {}\n"))
	f.Add([]byte("steps: [{scale: {deployment: a/b, replicas: -1}}]\n"))
	f.Add([]byte("expect: {pdbViolations: {min: 3, max: 1}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse("fuzz.yaml", data)
		if err != nil && !strings.Contains(err.Error(), "fuzz.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
