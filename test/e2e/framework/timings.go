package framework

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// TimingsFile is where a suite writes the real timings its specs measured
// (in the environment's directory); make test prints it.
const TimingsFile = "real-node-timings.txt"

// Timings are the real timings a suite's specs measured, by spec.
type Timings struct {
	mu    sync.Mutex
	lines []string
}

// Record adds a spec's measured time.
func (t *Timings) Record(spec, line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, spec+": "+line)
}

// Write writes the timings to the environment's TimingsFile (removed when
// there are none).
func (t *Timings) Write(e *Env) error {
	if e == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	path := filepath.Join(e.Dir, TimingsFile)
	if len(t.lines) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return os.WriteFile(path, []byte(strings.Join(t.lines, "\n")+"\n"), 0o644)
}
