// Package expect holds the checks the table tests of several packages share.
package expect

import (
	"testing"
	"time"
)

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

// Returned waits for the result a function run in a goroutine sends on
// done, and returns it; the test fails if it does not come within 5 s.
// what names the wait in that failure ("Start after its context ended").
func Returned(tb testing.TB, done <-chan error, what string) error {
	tb.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		tb.Fatalf("%s: no return within 5s", what)
		return nil
	}
}
