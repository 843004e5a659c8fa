// Command kubectl-sidecarset is the kubectl plugin of the SidecarSet
// operator: with it on the PATH, `kubectl sidecarset explain` and
// `kubectl sidecarset inject` run the pod webhook's decision for a pod or a
// manifest, and `kubectl sidecarset rollout` follows, lists, undoes,
// pauses and resumes a SidecarSet's rollout (see docs/kubectl-plugin.md).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/sidecarset-operator/sidecarset-operator/cmd/kubectl-sidecarset/internal/cli"
)

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmd := cli.NewCommand(cli.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return cli.ExitCode(err)
	}
	return cli.ExitOK
}
