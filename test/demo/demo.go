// Package demo runs the user manual's walkthrough against a cluster with
// the operator, step by step, printing each kubectl command and its output,
// and checking that each step behaves as the manual says. `make demo` runs it
// on the dev cluster; the e2e suite runs it on its own cluster.
package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Options say where to run the demo.
type Options struct {
	// Kubectl is the kubectl binary.
	Kubectl string
	// Kubeconfig is the cluster's kubeconfig.
	Kubeconfig string
	// Dir holds the manifests the demo writes for kubectl apply -f.
	Dir string
	// Out receives the transcript.
	Out io.Writer
}

// Run runs every step. It returns the first step that did not behave as
// the manual says.
func Run(ctx context.Context, o Options) error {
	d := &demo{Options: o}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	d.cleanup(ctx)
	steps := []struct {
		title string
		run   func(context.Context) error
	}{
		{"Create the SidecarSet of the manual (sidecarset.yaml)", d.createSidecarSet},
		{"Create a pod matching it: the sidecar is injected (2/2)", d.createPod},
		{"The SidecarSet status counts the pod", d.statusAfterInjection},
		{"Update the sidecar image to centos:7 (kubectl edit)", d.updateImage},
		{"The sidecar was upgraded in place: only sidecar1 restarted", d.upgradedInPlace},
		{"A partition + maxUnavailable rollout over a Deployment of 10 pods", d.partitionRollout},
		{"patchPodMetadata needs the whitelist; tuning the ConfigMap takes effect live", d.patchPodMetadata},
	}
	for i, s := range steps {
		d.printf("\n### Step %d: %s\n\n", i+1, s.title)
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, s.title, err)
		}
	}
	d.printf("\nThe demo behaved as the user manual says.\n")
	d.cleanup(ctx)
	return nil
}

type demo struct {
	Options
}

func (d *demo) printf(format string, args ...any) { _, _ = fmt.Fprintf(d.Out, format, args...) }

// kubectl runs and prints a kubectl command (as a user would type it).
func (d *demo) kubectl(ctx context.Context, args ...string) (string, error) {
	return d.kubectlWithEnv(ctx, nil, args...)
}

func (d *demo) kubectlWithEnv(ctx context.Context, env []string, args ...string) (string, error) {
	d.printf("$ kubectl %s\n", strings.Join(args, " "))
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.Kubectl, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+d.Kubeconfig), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	d.printf("%s", indent(out.String()))
	if err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// quiet runs kubectl without printing (checks and cleanup).
func (d *demo) quiet(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.Kubectl, append([]string{"--kubeconfig", d.Kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// eventually retries check every half second until it succeeds or the
// timeout passes; it returns the last error.
func eventually(ctx context.Context, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// write saves a manifest for kubectl apply -f and returns its path.
func (d *demo) write(name, content string) (string, error) {
	path := filepath.Join(d.Dir, name)
	return path, os.WriteFile(path, []byte(strings.TrimLeft(content, "\n")), 0o644)
}

func (d *demo) cleanup(ctx context.Context) {
	for _, args := range [][]string{
		{"delete", "pod", "test-pod", "--ignore-not-found", "--grace-period=0", "--wait=true"},
		{"delete", "deployment", "demo-web", "--ignore-not-found", "--wait=true"},
		{"delete", "pod", "-l", "app=demo-metadata", "--ignore-not-found", "--grace-period=0"},
		{"delete", "sidecarset", "test-sidecarset", "demo-rollout", "demo-metadata", "--ignore-not-found"},
		{"delete", "configmap", "kruise-configuration", "-n", "kruise-system", "--ignore-not-found"},
	} {
		_, _ = d.quiet(ctx, args...)
	}
	_ = eventually(ctx, time.Minute, func() error {
		out, err := d.quiet(ctx, "get", "pods", "-l", "app in (nginx,demo-web,demo-metadata)", "-o", "name")
		if err == nil && strings.TrimSpace(out) != "" {
			return fmt.Errorf("pods still terminating: %s", out)
		}
		return err
	})
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

func mustMatch(out, pattern, what string) error {
	if !regexp.MustCompile(pattern).MatchString(out) {
		return fmt.Errorf("%s: the output does not match %q", what, pattern)
	}
	return nil
}
