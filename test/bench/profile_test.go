package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// The profile of a start outlasts the wait for the pprof endpoint to
// listen: it is written whole, not cut by that wait's deadline.
func TestStartProfile_OutlastsTheWaitToListen(t *testing.T) {
	asked := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/profile") {
			asked <- r.URL.RawQuery
			time.Sleep(300 * time.Millisecond) // longer than the wait below
		}
		_, _ = w.Write([]byte("profile of " + r.URL.Path))
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "start.cpu.pprof")
	o := scaleOptions{pprofAddr: strings.TrimPrefix(srv.URL, "http://")}
	(&env{}).startProfile(context.Background(), o, path, 7, 100*time.Millisecond)()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no profile written: %v", err)
	}
	if query := <-asked; string(raw) != "profile of /debug/pprof/profile" || query != "seconds=7" {
		t.Fatalf("wrote %q after asking for %q", raw, query)
	}
}

// A CPU profile is summarized by part: a sample counts once for a part
// however often its functions recur on the stack, and for every part on it;
// for a part within another only when it is within that one too.
func TestSummarizeProfile_TimeByPart(t *testing.T) {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	locs := map[string]*profile.Location{}
	sample := func(ms int64, stack ...string) { // leaf first, as pprof writes stacks
		s := &profile.Sample{Value: []int64{1, ms * int64(time.Millisecond)}}
		for _, n := range stack {
			if locs[n] == nil {
				f := &profile.Function{ID: uint64(len(locs) + 1), Name: n}
				locs[n] = &profile.Location{ID: f.ID, Line: []profile.Line{{Function: f}}}
				p.Function, p.Location = append(p.Function, f), append(p.Location, locs[n])
			}
			s.Location = append(s.Location, locs[n])
		}
		p.Sample = append(p.Sample, s)
	}
	sample(50, "decode", "decode", "serve", "goexit")
	sample(30, "encode", "serve", "goexit")
	sample(20, "markWorker", "goexit")
	sample(10, "decode", "watch", "goexit") // decoding outside serving
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(p.Write(f), f.Close()); err != nil {
		t.Fatal(err)
	}
	parts := []cpuPart{{"serving", "serve", 0}, {"decoding", "decode", 1}, {"marking", "mark", 0}, {"none", "absent", 0}}
	total, times, err := summarizeProfile(path, parts)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{80 * time.Millisecond, 50 * time.Millisecond, 20 * time.Millisecond, 0}
	if total != 110*time.Millisecond || !slices.Equal(times, want) {
		t.Fatalf("summarized %v: %v, want 110ms: %v", total, times, want)
	}
	if _, _, err := summarizeProfile(filepath.Join(t.TempDir(), "none"), parts); err == nil {
		t.Fatal("a missing profile was summarized")
	}
}
