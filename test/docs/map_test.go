package docs

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's map ("Where code lives") names each top-level folder of the
// tree, and the development page's map each folder under shared/, exactly
// as the tree has them: no more, no less. Hidden folders and the build outputs .gitignore lists at
// the root are not part of the tree.
func TestReadmeMapMatchesTree(t *testing.T) {
	ignored := map[string]bool{}
	f, err := os.Open(filepath.Join(root, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		if l := strings.TrimSpace(s.Text()); strings.HasPrefix(l, "/") && strings.HasSuffix(l, "/") {
			ignored[strings.Trim(l, "/")] = true
		}
	}
	want := map[string]bool{}
	dirs := func(rel, prefix string) {
		entries, err := os.ReadDir(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !(rel == "." && ignored[e.Name()]) {
				want[prefix+e.Name()+"/"] = true
			}
		}
	}
	dirs(".", "")
	dirs("shared", "shared/")
	if !want["shared/"] || len(want) < 10 {
		t.Fatalf("the tree read %v: is root right?", sortedSet(want))
	}
	got := append(keysUnder(t, "README.md", "Where code lives"), keysUnder(t, "docs/development/index.md", "Where code lives")...)
	seen := map[string]bool{}
	for _, k := range got {
		if seen[k] {
			t.Errorf("the maps name %s twice", k)
		}
		seen[k] = true
	}
	for _, k := range sortedSet(want) {
		if !seen[k] {
			t.Errorf("README.md's and docs/development/index.md's maps lack %s (a folder of the tree)", k)
		}
	}
	for _, k := range sortedSet(seen) {
		if !want[k] {
			t.Errorf("the maps name %s, which is not a top-level folder or a folder under shared/", k)
		}
	}
}
