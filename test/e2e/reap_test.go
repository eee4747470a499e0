package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/localcloud/proc"
)

// TestKilledOwnerLeavesNothing: a test process that is killed (SIGKILL, no
// cleanup) leaves its local cloud running; the next Start stops it.
func TestKilledOwnerLeavesNothing(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+t.TempDir())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if line == "ready" {
			break
		}
		var pid int
		var name string
		if n, _ := fmt.Sscanf(line, "pid %d %s", &pid, &name); n == 2 {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 6 {
		t.Fatalf("owner reported %d processes, want 6", len(pids))
	}
	t.Logf("owner's local cloud up after %s", time.Since(begin).Round(10*time.Millisecond))
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for _, pid := range pids {
		if !proc.GroupAlive(pid) {
			t.Fatalf("pid %d died with its owner: the test proves nothing", pid)
		}
	}

	begin = time.Now()
	lc := localcloud.StartForTest(t, localcloud.Options{})
	t.Logf("next local cloud up after %s", time.Since(begin).Round(10*time.Millisecond))
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for proc.GroupAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if proc.GroupAlive(pid) {
			t.Errorf("process %d of the killed owner still running after the next Start", pid)
		}
	}
	if _, err := lc.Kube.Discovery().ServerVersion(); err != nil {
		t.Errorf("the new local cloud does not answer: %v", err)
	}
}
