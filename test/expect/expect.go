// Package expect holds the checks the table tests of several packages share.
package expect

import "testing"

// Error checks an error against the message a test case wants, "" meaning
// no error, and fails the test otherwise. It reports whether the case is
// done: an error was wanted, and there is no result to check.
func Error(tb testing.TB, err error, want string) bool {
	tb.Helper()
	if want == "" {
		if err != nil {
			tb.Fatalf("unexpected error: %v", err)
		}
		return false
	}
	if err == nil || err.Error() != want {
		tb.Fatalf("error = %v, want %q", err, want)
	}
	return true
}
