package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// page is one Markdown file: its path from the root and its lines, with
// fenced code blocks marked.
type page struct {
	path  string
	lines []string
	code  []bool // lines[i] is code: inside a fenced block (or its fence), or indented
}

func readPage(t *testing.T, rel string) page {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	p := page{path: rel, lines: strings.Split(string(data), "\n")}
	in, indented := false, false
	for i, l := range p.lines {
		fence := strings.HasPrefix(strings.TrimSpace(l), "```")
		// An indented code block: lines indented by four spaces or a tab,
		// after a blank line (or more of the block).
		ind := !in && !fence && (strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t")) &&
			(i == 0 || strings.TrimSpace(p.lines[i-1]) == "" || indented)
		indented = ind || (indented && strings.TrimSpace(l) == "")
		p.code = append(p.code, in || fence || ind)
		if fence {
			in = !in
		}
	}
	return p
}

// pages returns README.md and every docs/**/*.md, sorted.
func pages(t *testing.T) []page {
	t.Helper()
	out := []page{readPage(t, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, readPage(t, filepath.ToSlash(rel)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkRE    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeRE    = regexp.MustCompile("`[^`]*`")
)

// heading returns the level and text of a heading line, or 0.
func (p page) heading(i int) (int, string) {
	if p.code[i] {
		return 0, ""
	}
	m := headingRE.FindStringSubmatch(p.lines[i])
	if m == nil {
		return 0, ""
	}
	return len(m[1]), m[2]
}

// anchors returns the GitHub anchors of the page's headings: the text
// lowercased, characters other than letters, digits, spaces, hyphens and
// underscores dropped, spaces turned into hyphens; a repeated anchor gets
// -1, -2, ... as GitHub numbers them.
func (p page) anchors() map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for i := range p.lines {
		if level, text := p.heading(i); level > 0 {
			a := anchor(text)
			if n := seen[a]; n > 0 {
				out[a+"-"+itoa(n)] = true
			} else {
				out[a] = true
			}
			seen[a]++
		}
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// anchor is GitHub's anchor of a heading's text. Inline markup is removed
// first (backticks, emphasis, a link's target), as GitHub renders it.
func anchor(text string) string {
	text = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// sections returns the line ranges [start, end) under each heading whose
// text matches name exactly: from the heading to the next heading of the
// same or a higher level.
func (p page) section(name string) (int, int, bool) {
	for i := range p.lines {
		level, text := p.heading(i)
		if level == 0 || text != name {
			continue
		}
		end := len(p.lines)
		for j := i + 1; j < len(p.lines); j++ {
			if l, _ := p.heading(j); l > 0 && l <= level {
				end = j
				break
			}
		}
		return i + 1, end, true
	}
	return 0, 0, false
}

// tableKeys returns the code spans that open the first cell of each table
// row in lines [start, end): what a reference page names. Header and
// separator rows have no code span in their first cell and are skipped.
func (p page) tableKeys(start, end int) []string {
	var out []string
	for i := start; i < end; i++ {
		l := strings.TrimSpace(p.lines[i])
		if p.code[i] || !strings.HasPrefix(l, "|") {
			continue
		}
		cell := strings.TrimSpace(strings.SplitN(strings.TrimPrefix(l, "|"), "|", 2)[0])
		for _, span := range codeRE.FindAllString(cell, -1) {
			out = append(out, strings.Trim(span, "`"))
		}
	}
	return out
}
