package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// managerMemory reads a real process's /proc status: this test's own.
func TestManagerMemory_ReadsProcStatus(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := (&env{pidFile: pidFile}).managerMemory()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"VmHWM", "VmRSS", "RssAnon", "RssFile"} {
		if m[key] <= 0 {
			t.Errorf("%s = %v MiB, want a positive size", key, m[key])
		}
	}
	if m["VmHWM"] < m["VmRSS"] {
		t.Errorf("VmHWM %v MiB below VmRSS %v MiB", m["VmHWM"], m["VmRSS"])
	}
	if _, err := (&env{pidFile: filepath.Join(t.TempDir(), "missing")}).managerMemory(); err == nil {
		t.Error("a missing PID file gives no error")
	}
}
