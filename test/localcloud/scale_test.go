package localcloud

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHeartbeatStages: the heartbeat stage is rewritten with the delay
// (jitter half of it), the others kept; a stage without kwok's delay is
// an error, not a silent no-op.
func TestHeartbeatStages(t *testing.T) {
	src, out := t.TempDir(), t.TempDir()
	hb := filepath.Join(src, "node-heartbeat.yaml")
	other := filepath.Join(src, "pod-ready.yaml")
	if err := os.WriteFile(hb, []byte("delay:\n  durationMilliseconds: 20000\n  jitterDurationMilliseconds: 25000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := heartbeatStages([]string{other, hb}, 10*time.Minute, out)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != other || got[1] != filepath.Join(out, "node-heartbeat.yaml") {
		t.Fatalf("stages %v", got)
	}
	b, _ := os.ReadFile(got[1])
	if !strings.Contains(string(b), "durationMilliseconds: 600000") || !strings.Contains(string(b), "jitterDurationMilliseconds: 300000") {
		t.Errorf("heartbeat stage:\n%s", b)
	}
	if err := os.WriteFile(hb, []byte("delay: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := heartbeatStages([]string{hb}, time.Minute, out); err == nil {
		t.Error("a heartbeat stage without kwok's delay: no error")
	}
}
