package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a program run on this host beside the cluster: the operator's
// manager (the binary runtime has no pod network, so the API server reaches
// its webhooks on localhost), and the real node's containerd, kubelet and
// registry.
type Process struct {
	// Binary is the executable.
	Binary string
	// Args are its command-line arguments.
	Args []string
	// Env is added to the process environment.
	Env []string
	// LogPath receives standard output and error.
	LogPath string
	// PIDPath, if set, records the process ID so another process can stop it.
	PIDPath string
	// ReadyURL is polled by WaitReady (the manager's /readyz, the kubelet's
	// /healthz).
	ReadyURL string

	cmd *exec.Cmd
}

// Start starts the process. A detached process runs in its own session and
// outlives the caller (make dev); otherwise it is the caller's child.
func (m *Process) Start(detached bool) error {
	if err := os.MkdirAll(filepath.Dir(m.LogPath), 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(m.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }() // the child holds its own descriptor
	cmd := exec.Command(m.Binary, m.Args...)
	cmd.Env = append(os.Environ(), m.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: detached}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", m.Binary, err)
	}
	m.cmd = cmd
	if m.PIDPath != "" {
		if err := os.WriteFile(m.PIDPath, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			return err
		}
	}
	if detached {
		return cmd.Process.Release()
	}
	go func() { _ = cmd.Wait() }() // reap the child; Stop observes the exit through the process
	return nil
}

// WaitReady polls ReadyURL until it answers 200 or the context ends. It fails
// early, with the end of the log, if a child process exits.
func (m *Process) WaitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.ReadyURL, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if m.cmd != nil && m.cmd.ProcessState != nil {
			return fmt.Errorf("%s exited: %s\n%s", filepath.Base(m.Binary), m.cmd.ProcessState, m.logTail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is not ready at %s: %w\n%s", filepath.Base(m.Binary), m.ReadyURL, ctx.Err(), m.logTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop terminates a child process gracefully (SIGTERM, then SIGKILL after
// the timeout).
func (m *Process) Stop(timeout time.Duration) error {
	if m.cmd == nil || m.cmd.Process == nil {
		return nil
	}
	return stopPID(m.cmd.Process.Pid, timeout)
}

// Kill kills a child process at once, as a crash would.
func (m *Process) Kill() error {
	if m.cmd == nil || m.cmd.Process == nil {
		return nil
	}
	if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return WaitGone(m.cmd.Process.Pid, 10*time.Second)
}

// PID returns the process ID of the last child process started, or 0 if
// none was.
func (m *Process) PID() int {
	if m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// StopFromPIDFile stops the process recorded in a PID file, if it still
// runs, and removes the file.
func StopFromPIDFile(path string, timeout time.Duration) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("malformed PID file %s: %w", path, err)
	}
	if err := stopPID(pid, timeout); err != nil {
		return err
	}
	return os.Remove(path)
}

func stopPID(pid int, timeout time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	if WaitGone(pid, timeout) == nil {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return WaitGone(pid, 5*time.Second)
}

// WaitGone waits until no process has the PID (or it is a zombie, that its
// parent will reap).
func WaitGone(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) || isZombie(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("process %d still runs after %s", pid, timeout)
}

func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func (m *Process) logTail() string {
	data, err := os.ReadFile(m.LogPath)
	if err != nil {
		return ""
	}
	return lastLines(string(data), 30)
}
