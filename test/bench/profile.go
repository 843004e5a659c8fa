package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
)

// profiler takes CPU profiles of the API server and the manager during a
// measurement, for finding where the time goes (bench --profile-dir).
type profiler struct {
	dir         string
	managerAddr string
	seconds     int
}

// lasting returns the profiler with its profiles as long as d, rounded up
// to a second: a profile of a creation covers all of it, not a few seconds
// of its start (5 s of a 10 s creation caught too few samples to split).
func (p *profiler) lasting(d time.Duration) *profiler {
	if p == nil {
		return nil
	}
	q := *p
	q.seconds = max(1, int(math.Ceil(d.Seconds())))
	return &q
}

// start begins a CPU profile of both processes, named after the
// measurement; the returned function waits for them to be written.
func (p *profiler) start(ctx context.Context, e *env, label string) func() {
	if p == nil || p.dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(p.dir, 0o750); err != nil {
		fmt.Fprintf(os.Stderr, "bench: profiles: %v\n", err)
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		raw, err := e.clientset.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", fmt.Sprint(p.seconds)).DoRaw(ctx)
		p.write(p.path(label, "apiserver"), raw, err)
	})
	if p.managerAddr != "" {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, time.Duration(p.seconds+30)*time.Second)
			defer cancel()
			raw, err := readPprof(ctx, p.managerAddr, fmt.Sprintf("profile?seconds=%d", p.seconds))
			p.write(p.path(label, "manager"), raw, err)
		})
	}
	return wg.Wait
}

// readPprof reads one of the manager's pprof endpoints, served at addr.
func readPprof(ctx context.Context, addr, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the manager's pprof %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	return io.ReadAll(resp.Body)
}

// path is where the profile of a process (apiserver, manager) during the
// measurement label goes; empty when profiles are not taken.
func (p *profiler) path(label, process string) string {
	if p == nil || p.dir == "" {
		return ""
	}
	name := strings.NewReplacer(" ", "-", "(", "", ")", "", ",", "").Replace(label)
	return filepath.Join(p.dir, name+"."+process+".pprof")
}

func (p *profiler) write(path string, raw []byte, err error) {
	writeProfile(path, raw, err)
}

// writeProfile saves a profile, or says why it could not be taken.
func writeProfile(path string, raw []byte, err error) {
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(path), 0o750); err == nil {
			err = os.WriteFile(path, raw, 0o600)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: profile %s: %v\n", path, err)
	}
}

// summarizeProfile reads a CPU profile and returns its sampled CPU time and
// the functions that took the most of it, with their callees (cumulative),
// at most top of them: what the bench prints under a missed CPU target, so
// that the miss is explained where it is reported. Functions on nearly
// every stack (the goroutines' entry points) say nothing and are left out.
func summarizeProfile(path string, top int) (total time.Duration, rows []profileRow, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = f.Close() }()
	p, err := profile.Parse(f)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	value := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			value = i
		}
	}
	if value < 0 {
		return 0, nil, fmt.Errorf("%s: not a CPU profile", path)
	}
	cum := map[string]int64{}
	var sum int64
	for _, s := range p.Sample {
		v := s.Value[value]
		sum += v
		seen := map[string]bool{}
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil && !seen[line.Function.Name] {
					seen[line.Function.Name] = true
					cum[line.Function.Name] += v
				}
			}
		}
	}
	for name, v := range cum {
		if float64(v) < 0.9*float64(sum) {
			rows = append(rows, profileRow{name, time.Duration(v)})
		}
	}
	slices.SortFunc(rows, func(a, b profileRow) int {
		return cmp.Or(cmp.Compare(b.cum, a.cum), strings.Compare(a.function, b.function))
	})
	return time.Duration(sum), rows[:min(top, len(rows))], nil
}

// profileRow is a function of a profile and the CPU time it and its callees
// took.
type profileRow struct {
	function string
	cum      time.Duration
}

// printCPUProfile prints what a CPU profile of pods created holds: its
// sampled time per pod, and the functions that took the most of it.
func printCPUProfile(path string, pods int) {
	total, rows, err := summarizeProfile(path, 12)
	if err != nil {
		fmt.Printf("  (the profile cannot be read: %v)\n", err)
		return
	}
	perPod := func(d time.Duration) string {
		return fmt.Sprintf("%.3f ms", float64(d)/float64(pods)/float64(time.Millisecond))
	}
	fmt.Printf("  the profile sampled %.1f s of CPU over %d pods (%s per pod); with their callees:\n", total.Seconds(), pods, perPod(total))
	for _, r := range rows {
		fmt.Printf("    %5.1f%%  %s per pod  %s\n", 100*float64(r.cum)/float64(total), perPod(r.cum), r.function)
	}
}
