package docs

import (
	"os"
	"path/filepath"
	"testing"
)

// maxReadme is the README's budget: what Nodewright is, the two commands,
// deploy, the docs index, status, the map and the license. Everything else
// belongs in docs/.
const maxReadme = 10 * 1000

func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > maxReadme {
		t.Errorf("README.md is %d bytes, over %d: move the detail to docs/", len(data), maxReadme)
	}
}
