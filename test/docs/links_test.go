package docs

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// Every relative link in README.md and docs/ names a file or directory of
// the tree, and every #anchor a heading of its page (GitHub's anchors).
// Links to other sites are not followed.
func TestLinksResolve(t *testing.T) {
	all := pages(t)
	byPath := map[string]page{}
	for _, p := range all {
		byPath[p.path] = p
	}
	links := 0
	for _, p := range all {
		for i, l := range p.lines {
			if p.code[i] {
				continue
			}
			for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				where := p.path + ":" + itoa(i+1)
				file, frag, _ := strings.Cut(target, "#")
				dest := p.path
				if file != "" {
					dest = path.Clean(path.Join(path.Dir(p.path), file))
					if strings.HasPrefix(dest, "../") {
						t.Errorf("%s: %s leaves the repository", where, target)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s: %s: no such file or directory %s", where, target, dest)
						continue
					}
				}
				if frag == "" {
					continue
				}
				dp, ok := byPath[dest]
				if !ok {
					t.Errorf("%s: %s: an anchor into %s, which is not a checked Markdown page", where, target, dest)
					continue
				}
				if !dp.anchors()[frag] {
					t.Errorf("%s: %s: %s has no heading with anchor #%s", where, target, dest, frag)
				}
			}
		}
	}
	if links < 50 {
		t.Errorf("only %d relative links found: is the link pattern still right?", links)
	}
}

func TestAnchor(t *testing.T) {
	for text, want := range map[string]string{
		"Two commands":                     "two-commands",
		"`make run`":                       "make-run",
		"What it costs when idle":          "what-it-costs-when-idle",
		"Metrics (`shared/metrics`)":       "metrics-sharedmetrics",
		"One launch path, one termination": "one-launch-path-one-termination",
		"[Link](x.md) and more":            "link-and-more",
	} {
		if got := anchor(text); got != want {
			t.Errorf("anchor(%q) = %q, want %q", text, got, want)
		}
	}
	p := page{path: "x.md", lines: []string{"# A", "## A", "```", "# B", "```", "## A"}, code: []bool{false, false, true, true, true, false}}
	got := p.anchors()
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !got[want] {
			t.Errorf("anchors %v lack %s", got, want)
		}
	}
	if got["b"] {
		t.Error("a heading inside a code block has an anchor")
	}
}
