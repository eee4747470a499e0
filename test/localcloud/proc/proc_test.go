package proc

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sleeper(t *testing.T, dir string) *Process {
	t.Helper()
	// A shell with a child: stopping the group must end both.
	p, err := Start(Spec{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", "sleep 60 & echo started; wait"}}, filepath.Join(dir, "logs"), filepath.Join(dir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(time.Second) })
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(Tail(p.LogPath, 5), "started") {
		if time.Now().After(deadline) {
			t.Fatal("sleeper did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p
}

func TestStopEndsTheProcessGroup(t *testing.T) {
	dir := t.TempDir()
	p := sleeper(t, dir)
	if !GroupAlive(p.Pid) {
		t.Fatal("group not alive after start")
	}
	if n, err := p.RSS(); err != nil || n <= 0 {
		t.Errorf("RSS = %d, %v", n, err)
	}
	if err := p.Stop(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if GroupAlive(p.Pid) {
		t.Error("process group still alive after Stop")
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "run", "*.pid")); len(files) != 0 {
		t.Errorf("pid files left: %v", files)
	}
}

func TestReapStopsOrphansOfDeadOwnersOnly(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	orphan := sleeper(t, dir)
	mine := sleeper(t, t.TempDir())
	// Rewrite the orphan's pid file as if its owner had died: an owner
	// start time that matches no running process.
	rec, err := readPidFile(orphan.pidFile)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("%d %s %d %s\n", rec.Pid, rec.PidStart, rec.Owner, "1")
	if err := os.WriteFile(orphan.pidFile, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// A pid file of a live owner in the same run dir stays.
	live := filepath.Join(run, "live.pid")
	if err := writePidFile(live, mine.Pid); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "junk.pid"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Reap(context.Background(), run, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if GroupAlive(orphan.Pid) {
		t.Error("orphan of a dead owner still alive after Reap")
	}
	if !GroupAlive(mine.Pid) {
		t.Error("process of a live owner was reaped")
	}
	for _, f := range []string{orphan.pidFile, filepath.Join(run, "junk.pid")} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s not removed", f)
		}
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("live owner's pid file removed: %v", err)
	}
}

func TestTail(t *testing.T) {
	f := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(f, []byte("a\nb\nc\nd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Tail(f, 2); got != "c\nd" {
		t.Errorf("Tail = %q", got)
	}
	if got := Tail(filepath.Join(t.TempDir(), "none"), 2); !strings.Contains(got, "no log") {
		t.Errorf("Tail of a missing file = %q", got)
	}
}
