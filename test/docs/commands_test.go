package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The getting-started commands that run offline run as written, from the
// repository's root: every `nodewright validate` and `nodewright plan` line
// in the code blocks of docs/getting-started/local.md, with the CLI built
// from cmd/nodewright. (docs/getting-started/aws.md's lines name the
// reader's own directory, path/to/karpenter-yaml: templates, not commands.) (The
// example paths, ../shared/examples, are the team's reference files beside
// the repository, where shared/refdata finds them.) `make synth` is not run
// here: infra's TestRunSynthesizes runs the same CDK app with the same
// context (demo-cluster, infra/config) into a temporary directory; this
// test checks that the page's `make synth` line names the target and the
// variables the Makefile defines, and that the Makefile passes the context
// keys the app reads.
func TestGettingStartedCommands(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "nodewright")
	build := exec.Command("go", "build", "-o", bin, "./cmd/nodewright")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/nodewright: %v\n%s", err, out)
	}
	ran := map[string]int{}
	for _, rel := range []string{"docs/getting-started/local.md"} {
		p := readPage(t, rel)
		for i, l := range p.lines {
			if !p.code[i] {
				continue
			}
			line, _, _ := strings.Cut(strings.TrimSpace(l), " #")
			fields := strings.Fields(line)
			if len(fields) < 2 || fields[0] != "nodewright" || (fields[1] != "validate" && fields[1] != "plan") {
				continue
			}
			if strings.ContainsAny(line, "|<>$;&") {
				t.Errorf("%s:%d: %q: an offline command must be a plain command line", rel, i+1, line)
				continue
			}
			cmd := exec.Command(bin, fields[1:]...)
			cmd.Dir = root
			cmd.Stdin = strings.NewReader("")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s:%d: %s: %v\n%s", rel, i+1, line, err, out)
			}
			ran[fields[1]]++
		}
	}
	if ran["validate"] == 0 || ran["plan"] == 0 {
		t.Errorf("ran %v: the getting-started pages must show nodewright validate and nodewright plan", ran)
	}
}

func TestGettingStartedSynth(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(mk)
	if !regexp.MustCompile(`(?m)^synth:`).MatchString(makefile) {
		t.Fatal("the Makefile has no synth target")
	}
	// The recipe passes the two context keys the app requires.
	keys := contextKeys(t)
	for _, k := range []string{"cluster", "config"} {
		found := false
		for _, c := range keys {
			found = found || c == k
		}
		if !found || !strings.Contains(makefile, `"nodewright:`+k+`":`) {
			t.Errorf("make synth does not pass nodewright:%s, or the app no longer reads it", k)
		}
	}
	p := readPage(t, "docs/getting-started/aws.md")
	n := 0
	for i, l := range p.lines {
		fields := strings.Fields(strings.TrimSpace(l))
		if !p.code[i] || len(fields) < 2 || fields[0] != "make" || fields[1] != "synth" {
			continue
		}
		n++
		for _, f := range fields[2:] {
			if strings.HasPrefix(f, "#") {
				break
			}
			name, _, ok := strings.Cut(f, "=")
			if !ok || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+` \?=`).MatchString(makefile) {
				t.Errorf("docs/getting-started/aws.md:%d: %s is not a variable of the Makefile", i+1, f)
			}
		}
	}
	if n == 0 {
		t.Error("docs/getting-started/aws.md shows no make synth line")
	}
}
