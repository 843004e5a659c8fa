package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// profiler takes CPU profiles of the API server and the manager during a
// measurement, for finding where the time goes (bench --profile-dir).
type profiler struct {
	dir         string
	managerAddr string
	seconds     int
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
