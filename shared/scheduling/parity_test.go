package scheduling_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// caseRef is how a test names a case of Karpenter's suites it mirrors.
var caseRef = regexp.MustCompile(`"((?:scheduling|topology|instance_selection|provisioning|requirements|requirement|aws/instancetype):\d+)"`)

// TestKarpenterParity checks docs/karpenter-parity.md against the tests:
// every case the page calls mirrored or different is named by some test of
// the repository, every case a test names is one of those, and the counts
// of its summary add up to its rows.
func TestKarpenterParity(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.Open(filepath.Join(root, "docs", "karpenter-parity.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer doc.Close()
	row := regexp.MustCompile(`^\| ((?:scheduling|topology|instance_selection|provisioning|requirements|requirement|aws/instancetype):\d+) \| .* \| (mirrored|different|n/a) \| (.*) \|$`)
	sum := regexp.MustCompile(`^\| ([a-z_/]+) \| ` + "`" + `[^` + "`" + `]+` + "`" + ` \| .* \| (\d+) \(.*\) \| (\d+) \| (\d+) \| (\d+) \|$`)
	status := map[string]string{}
	counts := map[string][4]int{} // per suite: cases, mirrored, different, n/a
	seen := map[string][4]int{}
	sc := bufio.NewScanner(doc)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := row.FindStringSubmatch(line); m != nil {
			if _, dup := status[m[1]]; dup {
				t.Errorf("case %s listed twice", m[1])
			}
			status[m[1]] = m[2]
			if strings.TrimSpace(m[3]) == "" {
				t.Errorf("case %s has neither a test nor a reason", m[1])
			}
			suite := m[1][:strings.LastIndexByte(m[1], ':')]
			c := seen[suite]
			c[0]++
			c[map[string]int{"mirrored": 1, "different": 2, "n/a": 3}[m[2]]]++
			seen[suite] = c
			continue
		}
		if m := sum.FindStringSubmatch(line); m != nil {
			var c [4]int
			for i := range c {
				c[i], _ = strconv.Atoi(m[i+2])
			}
			counts[m[1]] = c
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(status) < 500 || len(counts) != 7 {
		t.Fatalf("read %d cases and %d suites from the page", len(status), len(counts))
	}
	for suite, c := range counts {
		if seen[suite] != c {
			t.Errorf("suite %s: summary says %v (cases, mirrored, different, n/a), rows say %v", suite, c, seen[suite])
		}
	}
	named := map[string]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "cdk.out") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range caseRef.FindAllStringSubmatch(string(data), -1) {
			named[m[1]] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for ref, path := range named {
		switch status[ref] {
		case "mirrored", "different":
		case "":
			t.Errorf("%s names case %s, which the page does not list", path, ref)
		default:
			t.Errorf("%s names case %s, which the page calls %s", path, ref, status[ref])
		}
	}
	for ref, s := range status {
		if (s == "mirrored" || s == "different") && named[ref] == "" {
			t.Errorf("the page calls case %s %s, but no test names it", ref, s)
		}
	}
}
