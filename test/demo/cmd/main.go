// Command demo runs the user manual's walkthrough on the dev cluster
// (make demo): each kubectl command and its output, checked step by step.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sidecarset-operator/sidecarset-operator/test/demo"
)

func main() {
	os.Exit(run())
}

func run() int {
	kubeconfig := flag.String("kubeconfig", "bin/dev/kubeconfig", "Kubeconfig of the dev cluster (make dev).")
	kubectl := flag.String("kubectl", "bin/k8s/kubectl", "The kubectl binary.")
	dir := flag.String("dir", "bin/dev/demo", "Where the demo writes its manifests.")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := demo.Run(ctx, demo.Options{Kubectl: *kubectl, Kubeconfig: *kubeconfig, Dir: *dir, Out: os.Stdout}); err != nil {
		fmt.Fprintln(os.Stderr, "\ndemo FAILED:", err)
		return 1
	}
	return 0
}
