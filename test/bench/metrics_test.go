package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
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

// A start that was not measured (the restart failed, or the manager never
// became ready) is reported as such, never as a start within the target.
func TestStartFigures_NotMeasuredIsMissed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f    startFigures
		want string
		met  bool
	}{
		{startFigures{ready: 3400 * time.Millisecond, firstStatus: 3300 * time.Millisecond},
			"webhooks serving after 3.4 s, first status written after 3.3 s", true},
		{startFigures{ready: 12 * time.Second, firstStatus: 3 * time.Second},
			"webhooks serving after 12.0 s, first status written after 3.0 s", false},
		{startFigures{err: errors.New("open /proc/1/environ: no such file or directory")},
			"not measured (open /proc/1/environ: no such file or directory)", false},
		{startFigures{ready: time.Second}, "not measured (the manager did not become ready)", false},
	} {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.f, got, tc.want)
		}
		if got := tc.f.met(); got != tc.met {
			t.Errorf("%+v: met %v, want %v", tc.f, got, tc.met)
		}
	}
}

// Every round is listed in the order it ran, against its own floor, so a
// reader sees the spread the median hides.
func TestRoundsByFloor_EachRoundAgainstItsFloor(t *testing.T) {
	t.Parallel()
	created := func(pods int, elapsed time.Duration) creation {
		return creation{latencies: make([]time.Duration, pods), elapsed: elapsed}
	}
	pr := pairing{label: "5000 SidecarSets",
		runs:   []creation{created(300, time.Second), created(600, 2*time.Second), created(250, time.Second)},
		floors: []creation{created(500, time.Second), created(400, time.Second), created(1000, 2*time.Second)},
	}
	want := "5000 SidecarSets 0.60× (300 vs 500 pods/s), 0.75× (300 vs 400 pods/s), 0.50× (250 vs 500 pods/s)"
	if got := roundsByFloor(pr); got != want {
		t.Errorf("roundsByFloor:\n got %s\nwant %s", got, want)
	}
}
