// Package proc runs the local cloud's server processes: each in its own
// process group (so its children die with it), with output in a log file and
// a pid file in a shared run directory, so that processes left behind by a
// killed test are found and stopped by the next start.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Spec describes one process to start.
type Spec struct {
	Name string   // short name: log file <Name>.log, pid file <Name>-<pid>.pid
	Path string   // executable
	Args []string // arguments without argv[0]
	Env  []string // extra environment, appended to os.Environ()
	Dir  string   // working directory; "" = the log directory
}

// Process is a started server process.
type Process struct {
	Name    string
	Pid     int
	LogPath string

	cmd     *exec.Cmd
	pidFile string
	logFile *os.File
	done    chan struct{}
	waitErr error
}

// Start starts spec with its output in logDir/<name>.log and records it in
// runDir so that Reap can stop it if this process dies without stopping it.
func Start(spec Spec, logDir, runDir string) (*Process, error) {
	for _, d := range []string{logDir, runDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("start %s: %w", spec.Name, err)
		}
	}
	logPath := filepath.Join(logDir, spec.Name+".log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: open log: %w", spec.Name, err)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Dir = spec.Dir
	if cmd.Dir == "" {
		cmd.Dir = logDir
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Path, err)
	}
	p := &Process{Name: spec.Name, Pid: cmd.Process.Pid, LogPath: logPath, cmd: cmd, logFile: lf, done: make(chan struct{})}
	p.pidFile = filepath.Join(runDir, fmt.Sprintf("%s-%d.pid", spec.Name, p.Pid))
	if err := writePidFile(p.pidFile, p.Pid); err != nil {
		_ = p.Stop(time.Second)
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has exited, and its error if so.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs
// the group, and removes the pid file. It is safe to call more than once.
func (p *Process) Stop(grace time.Duration) error {
	defer p.logFile.Close()
	defer os.Remove(p.pidFile)
	_ = syscall.Kill(-p.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		<-p.done
	}
	// Children that ignored SIGTERM (or outlived the leader) go too.
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	return nil
}

// pidRecord is the content of a pid file: the process, the process that
// owns it (the test or `make cloud`), and their start times, so a recycled
// pid is never mistaken for ours.
type pidRecord struct {
	Pid, Owner           int
	PidStart, OwnerStart string
}

func writePidFile(path string, pid int) error {
	ps, err := startTime(pid)
	if err != nil {
		return err
	}
	owner := os.Getpid()
	os_, err := startTime(owner)
	if err != nil {
		return err
	}
	content := fmt.Sprintf("%d %s %d %s\n", pid, ps, owner, os_)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

func readPidFile(path string) (pidRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return pidRecord{}, err
	}
	f := strings.Fields(string(b))
	if len(f) != 4 {
		return pidRecord{}, fmt.Errorf("pid file %s: malformed", path)
	}
	pid, err1 := strconv.Atoi(f[0])
	owner, err2 := strconv.Atoi(f[2])
	if err := errors.Join(err1, err2); err != nil {
		return pidRecord{}, fmt.Errorf("pid file %s: %w", path, err)
	}
	return pidRecord{Pid: pid, PidStart: f[1], Owner: owner, OwnerStart: f[3]}, nil
}

// startTime returns the process's start time in clock ticks since boot
// (field 22 of /proc/<pid>/stat).
func startTime(pid int) (string, error) {
	f, ok := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	if !ok {
		return "", fmt.Errorf("process %d: no stat", pid)
	}
	return f[19], nil
}

// alive reports whether pid runs (a zombie does not) and started at start.
func alive(pid int, start string) bool {
	st, err := startTime(pid)
	return err == nil && st == start && !zombie(pid)
}

func zombie(pid int) bool {
	f, ok := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	return !ok || f[0] == "Z" || f[0] == "X"
}

// statFields returns the fields of a /proc/<pid>/stat after the command
// name: state, ppid, pgrp, ...
func statFields(path string) ([]string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(s[i+1:])
	return f, len(f) >= 20
}

// Reap stops the processes recorded in runDir whose owner is gone (killed
// tests) and removes their pid files. Processes of a live owner, such as a
// local cloud of a test package running in parallel, are left alone.
func Reap(ctx context.Context, runDir string, log *slog.Logger) error {
	files, err := filepath.Glob(filepath.Join(runDir, "*.pid"))
	if err != nil {
		return fmt.Errorf("reap: %w", err)
	}
	for _, f := range files {
		rec, err := readPidFile(f)
		if err != nil {
			log.WarnContext(ctx, "removing unreadable pid file", "file", f, "err", err)
			_ = os.Remove(f)
			continue
		}
		if alive(rec.Owner, rec.OwnerStart) {
			continue
		}
		if alive(rec.Pid, rec.PidStart) {
			log.InfoContext(ctx, "stopping process left behind by a dead owner", "file", filepath.Base(f), "pid", rec.Pid, "owner", rec.Owner)
			_ = syscall.Kill(-rec.Pid, syscall.SIGKILL)
			waitGone(rec.Pid, rec.PidStart, 5*time.Second)
		}
		_ = os.Remove(f)
	}
	return nil
}

func waitGone(pid int, start string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for alive(pid, start) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// RSS returns the resident set size in bytes of the process and its
// descendants in its process group.
func (p *Process) RSS() (int64, error) {
	return groupRSS(p.Pid)
}

func groupRSS(pgid int) (int64, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err != nil || g != pgid {
			continue
		}
		total += vmRSS(d)
	}
	return total, nil
}

func vmRSS(procDir string) int64 {
	b, err := os.ReadFile(filepath.Join(procDir, "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// GroupAlive reports whether any process of the group pgid still runs.
// Zombies do not count: in a container whose init does not reap orphans,
// a killed child may linger as one.
func GroupAlive(pgid int) bool {
	dirs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, d := range dirs {
		f, ok := statFields(d)
		if !ok || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			return true
		}
	}
	return false
}

// Tail returns the last n lines of the file at path.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const maxRead = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	off := max(st.Size()-maxRead, 0)
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
