package webhookconfig

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFill(t *testing.T) {
	cfg := Configuration(URLPlaceholder, 2)
	got, err := Fill(cfg, "https://abc.lambda-url.us-east-1.on.aws/", "TOKEN123")
	if err != nil || *got.Webhooks[0].ClientConfig.URL != "https://abc.lambda-url.us-east-1.on.aws/TOKEN123" {
		t.Fatalf("fill: %v", err)
	}
	if *cfg.Webhooks[0].ClientConfig.URL != URLPlaceholder {
		t.Fatal("Fill changed its input")
	}
	for _, tc := range []struct {
		url, token, want string
	}{
		{"http://abc.on.aws/", "T", "want https://<host>/"},
		{"https://abc.on.aws/path", "T", "want https://<host>/"},
		{"https://abc.on.aws/?q=1", "T", "want https://<host>/"},
		{"https://abc.on.aws/", "", "token is empty"},
		{"https://abc.on.aws/", "a/b", "single URL path segment"},
	} {
		if _, err := Fill(cfg, tc.url, tc.token); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Fill(%q, %q): %v, want %q", tc.url, tc.token, err, tc.want)
		}
	}
	// A registration filled in already is refused, not overwritten blindly.
	if _, err := Fill(got, "https://abc.on.aws/", "OTHER"); err == nil || !strings.Contains(err.Error(), "is not "+URLPlaceholder) {
		t.Fatalf("refill: %v", err)
	}
}

func TestRemoveAnnotationPatch(t *testing.T) {
	b, err := removeAnnotationPatch("kubectl.kubernetes.io/last-applied-configuration", `{"x":1}`)
	if err != nil {
		t.Fatal(err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(b, &ops); err != nil || len(ops) != 2 ||
		ops[0]["op"] != "test" || ops[0]["value"] != `{"x":1}` || ops[1]["op"] != "remove" ||
		ops[1]["path"] != "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration" {
		t.Fatalf("patch %s", b)
	}
}

func TestRedacted(t *testing.T) {
	if got := Redacted("https://abc.on.aws/" + strings.Repeat("x", 64)); got != "https://abc.on.aws/<token: 64 characters>" {
		t.Fatalf("redacted %q", got)
	}
}
