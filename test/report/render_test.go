package report

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// chromium finds headless Chromium: $NODEWRIGHT_CHROMIUM, the link `make
// tools` leaves in the tools directory, or Debian's chromium on PATH.
func chromium() (string, error) {
	if c := os.Getenv("NODEWRIGHT_CHROMIUM"); c != "" {
		if _, err := os.Stat(c); err != nil {
			return "", fmt.Errorf("headless Chromium is missing: NODEWRIGHT_CHROMIUM=%s: %w", c, err)
		}
		return c, nil
	}
	tools := os.Getenv("NODEWRIGHT_TOOLS")
	if tools == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		tools = filepath.Join(cache, "nodewright", "tools")
	}
	candidates := []string{filepath.Join(tools, "bin", "chromium")}
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			candidates = append(candidates, p)
		}
	}
	candidates = append(candidates, "/usr/bin/chromium")
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c, nil
		}
	}
	return "", fmt.Errorf("headless Chromium is missing (looked for %v): the report render check needs Debian's chromium package; run `make tools` (it installs it with apt-get) or `apt-get install -y chromium`", candidates)
}

// renderDOM loads an HTML file in headless Chromium and returns the DOM
// after its scripts ran.
func renderDOM(t *testing.T, file string) string {
	t.Helper()
	bin, err := chromium()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	profile := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+profile, "--virtual-time-budget=5000", "--dump-dom", "file://"+file)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s --dump-dom: %v\n%s", bin, err, stderr)
	}
	return string(out)
}

// TestRenderInChromium: report.html, made from a fixed timeline, rendered
// by headless Chromium: every chart was drawn by the page's script (its
// SVG holds the series paths with one point per sample, and the counts
// the script wrote), which markup alone cannot produce.
func TestRenderInChromium(t *testing.T) {
	r := fixture()
	_, htmlPath, err := r.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	dom := renderDOM(t, htmlPath)
	t.Logf("rendered in %s (%d bytes of DOM)", time.Since(start).Round(time.Millisecond), len(dom))
	if m := regexp.MustCompile(`<body[^>]*data-charts-drawn="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] != strconv.Itoa(len(Charts)) {
		t.Fatalf("body's data-charts-drawn %v, want %d: the script did not run to the end", m, len(Charts))
	}
	series := map[string]int{Charts[0]: 2, Charts[1]: 2, Charts[2]: 1}
	for _, id := range Charts {
		svg := regexp.MustCompile(`(?s)<svg id="` + id + `"[^>]*>(.*?)</svg>`).FindStringSubmatch(dom)
		if svg == nil {
			t.Errorf("chart %s: no svg in the rendered DOM", id)
			continue
		}
		drawn := regexp.MustCompile(`<svg id="` + id + `"[^>]*data-drawn="(\d+)"`).FindStringSubmatch(dom)
		if want := strconv.Itoa(series[id] * len(r.Samples)); drawn == nil || drawn[1] != want {
			t.Errorf("chart %s: data-drawn %v, want %s (points of every series)", id, drawn, want)
		}
		paths := regexp.MustCompile(`<path [^>]*class="series"[^>]*>`).FindAllString(svg[1], -1)
		if len(paths) != series[id] {
			t.Errorf("chart %s: %d series paths, want %d", id, len(paths), series[id])
		}
		for _, p := range paths {
			d := regexp.MustCompile(` d="([^"]*)"`).FindStringSubmatch(p)
			if d == nil {
				t.Errorf("chart %s: a path without d: %s", id, p)
				continue
			}
			// One M and then one H+V pair per further sample.
			if n := len(regexp.MustCompile(`[MH]`).FindAllString(d[1], -1)); n != len(r.Samples) {
				t.Errorf("chart %s: path with %d points, want %d", id, n, len(r.Samples))
			}
		}
	}
	for _, want := range []string{"default-abc12", "spot interruption warning", "&lt;script&gt;alert(1)&lt;/script&gt;"} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(dom) {
			t.Errorf("the rendered timeline lacks %q", want)
		}
	}
}
