package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The plugin's exit codes (ExitCode).
const (
	// ExitOK: the command did what it was asked.
	ExitOK = 0
	// ExitFailed: the operation itself failed: a rollout failed, was not
	// complete when --timeout passed, or has no rollout (NotUpdate); the
	// webhook would refuse a pod; a SidecarSet, pod or revision does not
	// exist; pause of a paused SidecarSet.
	ExitFailed = 1
	// ExitUsage: the command line is wrong: an unknown command or flag, a
	// missing or extra argument, a value a flag does not take.
	ExitUsage = 2
	// ExitCluster: the API server cannot be reached, or refuses the user:
	// no usable kubeconfig, a connection or TLS error, 401 Unauthorized,
	// 403 Forbidden, 503 Service Unavailable.
	ExitCluster = 3
)

// exitCodesHelp is the table of exit codes, for the root command's help.
const exitCodesHelp = "Exit codes:\n" +
	"  0  success\n" +
	"  1  the operation failed: a rollout failed or was not complete within --timeout, a SidecarSet has no rollout\n" +
	"     (NotUpdate), the webhook would refuse a pod, an object does not exist\n" +
	"  2  usage: an unknown command or flag, a wrong argument or flag value\n" +
	"  3  the API server cannot be reached or refuses the user (kubeconfig, connection, TLS, 401, 403, 503)"

// usageError is a wrong command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usage error.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// asUsage marks an error of the command line as a usage error.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// clusterError is an error of reaching the API server (the kubeconfig).
type clusterError struct{ err error }

func (e clusterError) Error() string { return e.err.Error() }
func (e clusterError) Unwrap() error { return e.err }

// ExitCode is the exit code of a command's error: ExitUsage for a wrong
// command line, ExitCluster when the API server could not be reached or
// refused the user, ExitFailed otherwise, ExitOK without error.
func ExitCode(err error) int {
	var (
		usage   usageError
		cluster clusterError
		urlErr  *url.Error
		netErr  net.Error
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		return ExitUsage
	case errors.Is(err, context.Canceled): // interrupted
		return ExitFailed
	case errors.As(err, &cluster), errors.As(err, &urlErr), errors.As(err, &netErr),
		apierrors.IsUnauthorized(err), apierrors.IsForbidden(err), apierrors.IsServiceUnavailable(err):
		return ExitCluster
	}
	return ExitFailed
}

// usageArgs makes the errors of a positional-argument check usage errors.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return asUsage(check(cmd, args))
	}
}

// groupCommand makes cmd, a command of subcommands, print its help when
// called alone and refuse an unknown subcommand as a usage error (cobra
// would print the help and succeed).
func groupCommand(cmd *cobra.Command) *cobra.Command {
	cmd.SuggestionsMinimumDistance = 2
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", s[0])
		}
		return usageError{errors.New(msg)}
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return cmd
}
