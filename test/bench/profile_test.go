package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
