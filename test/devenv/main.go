// Command devenv runs `make dev`, `make dev-node` and `make dev-down`: a
// local kwok cluster (binary runtime, no Docker) with the operator's manager
// as a host process and the seed example applied, and a real node joined to
// it on request.
//
//	go run ./test/devenv up      --dir bin/dev   # create or refresh
//	go run ./test/devenv node-up --dir bin/dev   # join the real node (root)
//	go run ./test/devenv node-down --dir bin/dev # remove it alone
//	go run ./test/devenv down    --dir bin/dev   # remove everything
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/cmd/manager/app"

	"github.com/sidecarset-operator/sidecarset-operator/test/cluster"
	"github.com/sidecarset-operator/sidecarset-operator/test/node"
	"github.com/sidecarset-operator/sidecarset-operator/test/node/images"
)

const (
	clusterName = "sidecarset-dev"
	// nodes hold 110 pods each: room for the benchmarks' 1000-pod
	// Deployment next to the other pods.
	nodes       = 12
	healthAddr  = "127.0.0.1:8081"
	metricsAddr = "127.0.0.1:8080"
	webhookPort = "9443"
	// realNodeNamespace's pods run on the real node.
	realNodeNamespace = "real-node"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("devenv", flag.ExitOnError)
	dir := fs.String("dir", "bin/dev", "Directory of the dev environment: cluster state, kubeconfig, manager log.")
	binDir := fs.String("bin-dir", "bin", "Directory of the tools and the manager binary.")
	nodeCount := fs.Int("nodes", nodes, "Number of kwok nodes (110 pods each); an existing cluster is scaled to it.")
	pprofAddr := fs.String("manager-pprof", "", "If set, the manager serves Go pprof on this address (for the benchmarks' profiles).")
	name := fs.String("name", clusterName, "Name of the kwok cluster (kwok cluster names are global to the machine).")
	health := fs.String("health-addr", healthAddr, "The manager's health probe address.")
	metrics := fs.String("metrics-addr", metricsAddr, "The manager's metrics address.")
	webhook := fs.String("webhook-port", webhookPort, "The manager's webhook port.")
	config := fs.String("config", "config/dev", "The kustomization installed: the CRD and the webhook configurations, whose URLs name the webhook port "+
		"(config/e2e: port 19443).")
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: devenv up|node-up|node-down|down [--dir DIR] [--bin-dir DIR]")
		return 2
	}
	verb := os.Args[1]
	if err := fs.Parse(os.Args[2:]); err != nil {
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	env, err := newEnv(*dir, *binDir, *name)
	if err == nil {
		env.nodes, env.pprofAddr = *nodeCount, *pprofAddr
		env.healthAddr, env.metricsAddr, env.webhookPort, env.config = *health, *metrics, *webhook, *config
		env.cluster.WebhookHosts = []string{net.JoinHostPort("localhost", *webhook)}
	}
	if err == nil {
		switch verb {
		case "up":
			err = env.up(ctx)
		case "node-up":
			err = env.nodeUp(ctx)
		case "node-down":
			err = env.realNode().Down(ctx)
		case "down":
			err = env.down(ctx)
		default:
			err = fmt.Errorf("unknown command %q: want up, node-up, node-down or down", verb)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devenv:", err)
		return 1
	}
	return 0
}

type env struct {
	dir       string
	binDir    string
	cluster   *cluster.Cluster
	nodes     int
	pprofAddr string
	// The manager's addresses: a second environment on the same machine
	// (another name, other ports) does not disturb the first.
	healthAddr, metricsAddr, webhookPort string
	// config is the kustomization of the CRD and webhook configurations.
	config string
}

func newEnv(dir, binDir, name string) (*env, error) {
	root, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if binDir, err = filepath.Abs(binDir); err != nil {
		return nil, err
	}
	return &env{dir: dir, binDir: binDir, cluster: &cluster.Cluster{Name: name, RepoRoot: root, WorkDir: dir}}, nil
}

func (e *env) up(ctx context.Context) error {
	c := e.cluster
	log, err := os.OpenFile(filepath.Join(e.dir, "kwokctl.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		defer func() { _ = log.Close() }()
		c.Out = log
	} else if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return err
	}
	switch {
	case !c.Exists():
		step("Creating the kwok cluster %s with %d nodes", c.Name, e.nodes)
		if err := c.Create(ctx, e.nodes); err != nil {
			return err
		}
	case !e.apiServerUp(ctx):
		step("Starting the stopped kwok cluster %s", c.Name)
		if err := c.Start(ctx); err != nil {
			return err
		}
	default:
		step("Reusing the running kwok cluster %s", c.Name)
	}
	// A cluster made by an older version may have fewer nodes.
	if err := c.Scale(ctx, e.nodes); err != nil {
		return err
	}

	step("Installing the CRD and the operator's namespace (%s)", e.config)
	if _, err := c.RunKubectl(ctx, "apply", "--server-side", "--force-conflicts", "--field-manager=devenv", "-k", e.config); err != nil {
		return err
	}
	if _, err := c.RunKubectl(ctx, "wait", "--for=condition=Established", "crd/sidecarsets.apps.kruise.io", "--timeout=60s"); err != nil {
		return err
	}

	step("Starting the manager (log: %s)", e.managerLog())
	if err := cluster.StopFromPIDFile(e.pidFile(), 15*time.Second); err != nil {
		return fmt.Errorf("stopping the previous manager: %w", err)
	}
	m := &cluster.Process{
		Binary: filepath.Join(e.binDir, "manager"),
		Args: []string{
			"--kubeconfig=" + c.KubeconfigPath(),
			"--health-probe-bind-address=" + e.healthAddr,
			"--metrics-bind-address=" + e.metricsAddr,
			"--metrics-secure=false",
			"--namespace=kruise-system",
			"--webhook-host=127.0.0.1",
			"--webhook-port=" + e.webhookPort,
			"--webhook-cert-dir=" + filepath.Join(e.dir, "certs"),
			"--cert-dns-name=localhost",
			"--mutating-webhook-configuration=sidecarset-operator-local-mutating",
			"--validating-webhook-configuration=sidecarset-operator-local-validating",
		},
		LogPath:  e.managerLog(),
		PIDPath:  e.pidFile(),
		ReadyURL: "http://" + e.healthAddr + "/readyz",
	}
	if e.pprofAddr != "" {
		m.Args = append(m.Args, "--pprof-bind-address="+e.pprofAddr)
	}
	// A cluster made before its API server presented a webhook client
	// certificate gives none: the manager then serves unauthenticated.
	m.Args = append(m.Args, c.WebhookClientArgs()...)
	env, err := shippedMemoryEnv("config/manager/manager.yaml")
	if err != nil {
		return err
	}
	m.Env = env
	if err := m.Start(true); err != nil {
		return err
	}
	readyCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := m.WaitReady(readyCtx); err != nil {
		return err
	}

	step("Applying the seed example (config/samples)")
	if _, err := c.RunKubectl(ctx, "apply", "-k", "config/samples"); err != nil {
		return err
	}
	e.printUsage()
	return nil
}

// realNode is the dev cluster's real node.
func (e *env) realNode() *node.Node {
	return &node.Node{
		Name: node.DefaultName, RepoRoot: e.cluster.RepoRoot, BinDir: e.binDir,
		Dir: filepath.Join(e.dir, "node"), Cluster: e.cluster, Out: os.Stdout,
	}
}

func (e *env) nodeUp(ctx context.Context) error {
	if !e.cluster.Exists() || !e.apiServerUp(ctx) {
		return fmt.Errorf("no dev cluster runs in %s: make dev first", e.dir)
	}
	if !e.cluster.ReadyForRealNodes() {
		return errors.New("the dev cluster was made by an older make dev, without what a real node needs: make dev-down && make dev")
	}
	n := e.realNode()
	if err := n.Up(ctx); err != nil {
		return err
	}
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: realNodeNamespace, Annotations: node.NamespaceAnnotations()}}
	manifest, err := yaml.Marshal(ns)
	if err != nil {
		return err
	}
	if _, err := e.cluster.RunKubectlStdin(ctx, manifest, "apply", "--server-side", "--field-manager=devenv", "-f", "-"); err != nil {
		return err
	}
	fmt.Printf(`
The real node %[1]s is Ready beside the kwok nodes: a kubelet with containerd
and runc on this host (logs: %[2]s). Only pods that ask for it run there:
every pod of the namespace %[6]s, as written (the manual's walkthrough runs
there unchanged after kubectl config set-context --current --namespace=%[6]s),
and any pod with

  spec:
    nodeSelector: {%[3]s: "true"}
    tolerations: [{key: %[3]s, operator: Exists}]

Its images are the ones the user manual and the docs name (nginx:1.15.1,
centos:6.7, centos:7, busybox:latest, openkruise/hotupgrade-sample:*, ...),
served by its registry on %[4]s; %[5]s crash-loops; any other
reference fails to pull. kubectl logs and exec work.

  make dev-down   removes the node, every change it made to the host, and the cluster
`, n.Name, rel(n.Paths().Logs), node.Label, n.Registry(), images.CrashLoopImage, realNodeNamespace)
	return nil
}

func (e *env) down(ctx context.Context) error {
	step("Removing the real node, if any")
	if err := e.realNode().Down(ctx); err != nil {
		return err
	}
	step("Stopping the manager")
	if err := cluster.StopFromPIDFile(e.pidFile(), 15*time.Second); err != nil {
		return err
	}
	step("Deleting the kwok cluster %s", e.cluster.Name)
	if err := e.cluster.Delete(ctx); err != nil {
		return err
	}
	if err := os.RemoveAll(e.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	step("Done: nothing of the dev environment is left")
	return nil
}

func (e *env) apiServerUp(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := e.cluster.RunKubectl(ctx, "get", "--raw", "/readyz")
	return err == nil
}

func (e *env) managerLog() string { return filepath.Join(e.dir, "manager.log") }
func (e *env) pidFile() string    { return filepath.Join(e.dir, "manager.pid") }

// rel is p relative to the working directory, if it can be.
func rel(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, p); err == nil {
			return r
		}
	}
	return p
}

func (e *env) printUsage() {
	kc := rel(e.cluster.KubeconfigPath())
	fmt.Printf(`
The dev cluster %[1]s is ready: %[2]d kwok nodes, the SidecarSet operator
running on this host (log: %[3]s), the seed example applied.

  export KUBECONFIG=%[4]s
  kubectl get sidecarsets
  kubectl get nodes

kubectl v1.37.1 is in bin/k8s/kubectl. Pods of any Deployment run on the kwok
nodes; changing a container image of a running pod restarts that container in
place (new image and imageID in its status) after about a second; an image
whose tag ends in "invalid" never becomes ready.

  make dev        rebuilds and restarts the operator on the same cluster
  make dev-down   removes the cluster and stops the operator
`, e.cluster.Name, e.nodes, rel(e.managerLog()), kc)
}

func step(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

// shippedMemoryEnv is the Go runtime's memory settings the shipped
// Deployment gives the manager: the soft limit the manager sets itself from
// its container's memory limit (internal/app.SetMemoryLimit, 85% of it),
// which a manager running on the host cannot read, and the container's own
// GOGC or GOMEMLIMIT if it sets them. The dev manager, and the benchmarks
// measuring it, run with the same.
func shippedMemoryEnv(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for doc := range strings.SplitSeq(string(raw), "\n---") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != "manager" {
				continue
			}
			env := []string{fmt.Sprintf("GOMEMLIMIT=%d", int64(float64(c.Resources.Limits.Memory().Value())*app.MemoryLimitRatio))}
			for _, v := range c.Env {
				if v.Name == "GOGC" || v.Name == "GOMEMLIMIT" {
					env = append(env, v.Name+"="+v.Value)
				}
			}
			return env, nil
		}
	}
	return nil, fmt.Errorf("%s: no manager container", path)
}
