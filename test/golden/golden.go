// Package golden compares test output with expected files kept next to the
// tests, and rewrites them when REFRESH_GOLDEN=true (as istio's
// pilot/test/util does).
package golden

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Refresh is set when the expected files are rewritten instead of compared.
var Refresh = os.Getenv("REFRESH_GOLDEN") == "true"

// Compare fails the test with a line diff unless got is the content of the
// file at path; with Refresh, it writes got there instead.
func Compare(tb testing.TB, path string, got []byte) {
	tb.Helper()
	if Refresh {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run with REFRESH_GOLDEN=true to create it)", err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
		tb.Errorf("%s is stale (-want +got; REFRESH_GOLDEN=true rewrites it):\n%s", path, diff)
	}
}
