package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodewright/nodewright/test/report"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // error substring; "" for none
	}{
		{nil, ""},
		{[]string{"-scenario", "x.yaml", "-replicas", "5", "-keep", "-v", "-timeout", "1m", "-boot-delay", "1s", "-out", "d"}, ""},
		{[]string{"x.yaml"}, `unexpected argument "x.yaml" (a scenario file is given with -scenario or SCENARIO=)`},
		{[]string{"-replicas", "-2"}, "-replicas -2: want at least 1"},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
	} {
		f, err := parseFlags(tc.args, &bytes.Buffer{})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
		if tc.args == nil && (f.scenario != DefaultScenario || f.replicas != 0 || f.timeout != 30*time.Minute) {
			t.Errorf("defaults %+v", f)
		}
	}
	var help bytes.Buffer
	if _, err := parseFlags([]string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "-scenario") {
		t.Errorf("-h: %v\n%s", err, help.String())
	}
}

func TestSummary(t *testing.T) {
	r := &report.Report{Scenario: "s", Seconds: 12.3, Summary: report.Summary{PodsToRunningP50Seconds: 2.5, PodsToRunningP99Seconds: 4, PodsMeasured: 30,
		NodesLaunched: 3, NodesAtEnd: 1, PricePerHourPeak: 0.1412, PricePerHourEnd: 0.0355, FixedNodeGroupPricePerHourPeak: 0.384, FixedNodeGroupNodesPeak: 2, FixedNodeGroupUnplaced: 1},
		Expect:     []report.Expectation{{Name: "pdbViolations", Want: "= 0", Got: int64(0), OK: true}, {Name: "nodesAtEnd", Want: "<= 1", Got: int64(2), OK: false}},
		NodeClaims: []report.NodeClaim{{Name: "default-a", Ready: "True"}, {Name: "default-b", Ready: "Unknown"}}}
	got := Summary(r)
	for _, want := range []string{"scenario s: FAILED in 12.3 s", "p50 2.5 s, p99 4.0 s (30 pods)", "3 launched, 1 at the end", "$0.1412 peak, $0.0355 at the end",
		"$0.3840 at the peak (2 nodes; 1 pods it cannot run)", "nodesAtEnd     want <= 1  got 2  FAILED",
		"NodeClaims (kubectl get nodeclaims)", "2 at the end, 1 Ready"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

// TestInterruptStopsEverything: make run's binary, interrupted (Ctrl-C)
// while it plays, exits non-zero saying so, writes its report, and leaves
// none of the local cloud's processes behind.
func TestInterruptStopsEverything(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "run")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := t.TempDir()
	cmd := exec.Command(bin, "-scenario", "../../scenarios/default.yaml", "-out", out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(3 * time.Minute)
	var seen []string
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("make run ended before playing:\n%s\n%s", strings.Join(seen, "\n"), stderr.String())
			}
			seen = append(seen, l)
			if strings.Contains(l, "step 2: wait for pods") {
				break wait
			}
		case <-deadline:
			t.Fatalf("no step 2 within 3 minutes:\n%s", strings.Join(seen, "\n"))
		}
	}
	children, groups := descendantsOf(cmd.Process.Pid)
	if len(children) < 5 {
		t.Fatalf("%d processes below make run (%v): want the local cloud's servers", len(children), children)
	}
	delete(groups, cmd.Process.Pid) // make run's own group: the test's cleanup ends it
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	go func() {
		for l := range lines {
			seen = append(seen, l)
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("make run did not end within a minute of Ctrl-C")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("exit %v, stderr %q: want a non-zero exit that says it was interrupted", err, stderr.String())
	}
	for _, pid := range children {
		if alive(pid) {
			t.Errorf("process %d (%s) outlived make run", pid, comm(pid))
		}
	}
	if len(groups) == 0 {
		t.Error("the local cloud's servers run in make run's own process group: want groups of their own, so that Ctrl-C in a terminal reaches make run first")
	}
	for _, pid := range inGroups(groups) {
		t.Errorf("process %d (%s) of a local-cloud process group outlived make run", pid, comm(pid))
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
		t.Errorf("no report after the interruption: %v", err)
	}
}

// descendantsOf lists every process below pid (children, their children
// and so on), with the process groups they run in: the local cloud's
// servers run in groups of their own, so a signal to make run's group
// alone would not reach them.
func descendantsOf(pid int) (pids []int, groups map[int]bool) {
	parent := map[int][]int{}
	pgrp := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f := statFields(p)
		// state ppid pgrp ...
		if len(f) < 3 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		g, _ := strconv.Atoi(f[2])
		parent[pp] = append(parent[pp], p)
		pgrp[p] = g
	}
	groups = map[int]bool{}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range parent[p] {
			pids = append(pids, c)
			groups[pgrp[c]] = true
			queue = append(queue, c)
		}
	}
	return pids, groups
}

// inGroups lists the live processes of the given process groups.
func inGroups(groups map[int]bool) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(p); len(f) >= 3 && f[0] != "Z" {
			if g, _ := strconv.Atoi(f[2]); groups[g] {
				out = append(out, p)
			}
		}
	}
	return out
}

// statFields are /proc/PID/stat's fields after the command name (which may
// hold spaces): state, ppid, pgrp, ...
func statFields(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && f[0] != "Z"
}

func comm(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	return strings.TrimSpace(string(b))
}
