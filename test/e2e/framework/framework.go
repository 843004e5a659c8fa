// Package framework sets up the end-to-end environment: a kwok cluster
// (binary runtime) with the operator's manager running on the host, built
// from this checkout, and clients to drive them.
package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/install"
	"github.com/sidecarset-operator/sidecarset-operator/test/cluster"
	"github.com/sidecarset-operator/sidecarset-operator/test/node"
)

// Ports of the e2e manager; they differ from `make dev`'s so that both can
// run at the same time.
const (
	HealthAddr  = "127.0.0.1:18081"
	MetricsAddr = "127.0.0.1:18080"
	WebhookPort = 19443
	// OperatorNamespace holds the ControllerRevisions and the whitelist.
	OperatorNamespace = "kruise-system"
)

// Scheme knows the built-in types, CRDs and the SidecarSet API.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(Scheme))
	install.Install(Scheme)
}

// Env is a running e2e environment.
type Env struct {
	RepoRoot  string
	Dir       string
	Cluster   *cluster.Cluster
	Config    *rest.Config
	Client    client.Client
	Clientset kubernetes.Interface
	Manager   *cluster.Process
	// Node is the real node joined to the cluster (Options.RealNode), or
	// nil.
	Node *node.Node
}

// Options shape the environment.
type Options struct {
	// Name names the environment: its cluster (sidecarset-<name>) and its
	// directory (bin/<name>); "e2e" when empty. Suites that run one after
	// the other each have their own.
	Name string
	// Nodes is the number of kwok nodes.
	Nodes int
	// InCluster leaves the operator to the suite, which installs it into
	// the cluster (from its image, on the real node): no manager is started
	// on the host and no local webhook configuration is installed.
	InCluster bool
	// ManagerArgs are added to the manager's command line.
	ManagerArgs []string
	// RealNode joins a real node (test/node) to the cluster beside the kwok
	// nodes. It needs root, and no other real node on the machine.
	RealNode bool
	// Out receives the real node's progress lines; nil discards them.
	Out io.Writer
	// Install is the kustomization, relative to the repository root, that
	// the cluster gets before the host manager starts; config/e2e when
	// empty. WebhookConfigurations names its mutating and validating
	// webhook configurations, which the manager keeps; config/e2e's when
	// empty.
	Install               string
	WebhookConfigurations [2]string
}

// RealNodeName is the name of the e2e cluster's real node.
const RealNodeName = "real-node"

// Setup creates the cluster (replacing a leftover one) and joins the real
// node if asked; then, unless the suite installs the operator itself
// (InCluster), installs the CRD and the webhook configurations, builds the
// manager and starts it on the host.
func Setup(ctx context.Context, o Options) (*Env, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	if o.Name == "" {
		o.Name = "e2e"
	}
	dir := filepath.Join(root, "bin", o.Name)
	c := &cluster.Cluster{Name: "sidecarset-" + o.Name, RepoRoot: root, WorkDir: dir,
		WebhookHosts: []string{net.JoinHostPort("localhost", strconv.Itoa(WebhookPort))}}
	realNode := &node.Node{Name: RealNodeName, RepoRoot: root, BinDir: filepath.Join(root, "bin"),
		Dir: filepath.Join(dir, "node"), Cluster: c, Out: o.Out}
	if o.RealNode {
		if os.Geteuid() != 0 {
			return nil, errors.New("the e2e suite's real-node specs need root: run it as root, or leave them out (make test REAL_NODE=off)")
		}
		// A node an earlier run left: its mounts are under dir.
		if err := realNode.Down(ctx); err != nil {
			return nil, fmt.Errorf("the e2e suite needs the machine's real node (make dev-down removes the dev cluster's): %w", err)
		}
	}
	if err := c.Delete(ctx); err != nil {
		return nil, fmt.Errorf("removing a leftover e2e cluster: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if err := c.Create(ctx, o.Nodes); err != nil {
		return nil, err
	}
	e := &Env{RepoRoot: root, Dir: dir, Cluster: c}
	if err := e.connect(); err != nil {
		return e, err
	}
	if !o.InCluster {
		if err := e.startHostManager(ctx, o); err != nil {
			return e, err
		}
	}
	if o.RealNode {
		e.Node = realNode
		if err := realNode.Up(ctx); err != nil {
			return e, fmt.Errorf("joining the real node: %w", err)
		}
	}
	return e, nil
}

// startHostManager installs the CRD and the local webhook configurations
// (config/e2e, or Options.Install), builds the manager and starts it on the host, as the
// manager's ServiceAccount.
func (e *Env) startHostManager(ctx context.Context, o Options) error {
	c, root, dir := e.Cluster, e.RepoRoot, e.Dir
	install, webhooks := o.Install, o.WebhookConfigurations
	if install == "" {
		install = filepath.Join("config", "e2e")
	}
	if webhooks == [2]string{} {
		webhooks = [2]string{"sidecarset-operator-local-mutating", "sidecarset-operator-local-validating"}
	}
	if _, err := c.RunKubectl(ctx, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(root, install)); err != nil {
		return err
	}
	if err := waitEstablished(ctx, c, "sidecarsets.apps.kruise.io", time.Minute); err != nil {
		return err
	}
	kubeconfig, err := e.serviceAccountKubeconfig(ctx)
	if err != nil {
		return err
	}
	binary := filepath.Join(dir, "manager")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/manager")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the manager: %w\n%s", err, out)
	}
	e.Manager = &cluster.Process{
		Binary: binary,
		Args: append([]string{
			"--kubeconfig=" + kubeconfig,
			"--health-probe-bind-address=" + HealthAddr,
			"--metrics-bind-address=" + MetricsAddr,
			"--metrics-secure=false",
			"--namespace=" + OperatorNamespace,
			"--webhook-host=127.0.0.1",
			"--webhook-port=" + strconv.Itoa(WebhookPort),
			"--webhook-cert-dir=" + filepath.Join(dir, "certs"),
			"--cert-dns-name=localhost",
			"--mutating-webhook-configuration=" + webhooks[0],
			"--validating-webhook-configuration=" + webhooks[1],
		}, append(c.WebhookClientArgs(), o.ManagerArgs...)...),
		LogPath:  filepath.Join(dir, "manager.log"),
		ReadyURL: "http://" + HealthAddr + "/readyz",
	}
	return e.StartManager(ctx)
}

// InstallHostManager applies the install again and starts the host
// manager with a new token of its ServiceAccount: installing the operator
// anew after make undeploy removed it (and the account).
func (e *Env) InstallHostManager(ctx context.Context, o Options) error {
	return e.startHostManager(ctx, o)
}

// StartManager starts the manager and waits until it is ready. It fails at
// once if the manager's ports are taken: a manager left over by an earlier
// run would otherwise answer the readiness check in the new one's place.
func (e *Env) StartManager(ctx context.Context) error {
	for _, addr := range []string{HealthAddr, MetricsAddr, net.JoinHostPort("127.0.0.1", strconv.Itoa(WebhookPort))} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("the manager's address %s is in use (a manager of an earlier run still running?): %w", addr, err)
		}
		if err := l.Close(); err != nil {
			return err
		}
	}
	if err := e.Manager.Start(false); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	return e.Manager.WaitReady(ctx)
}

// Teardown stops the manager, removes the real node and deletes the
// cluster. With keep set (a failed run), the cluster and the logs are left
// for inspection; the real node is removed whatever happened (its logs stay),
// since it changes the host.
func (e *Env) Teardown(ctx context.Context, keep bool) error {
	if e == nil {
		return nil
	}
	var errs []error
	if e.Node != nil {
		errs = append(errs, e.Node.Down(ctx))
	}
	if e.Manager != nil {
		errs = append(errs, e.Manager.Stop(15*time.Second))
	}
	if !keep {
		errs = append(errs, e.Cluster.Delete(ctx))
	}
	return errors.Join(errs...)
}

func (e *Env) connect() error {
	cfg, err := e.Cluster.RESTConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	e.Config = cfg
	if e.Client, err = client.New(cfg, client.Options{Scheme: Scheme}); err != nil {
		return err
	}
	e.Clientset, err = kubernetes.NewForConfig(cfg)
	return err
}

// waitEstablished waits until the CRD is Established. It polls rather than
// running kubectl wait, which fails at once when the CRD has no conditions
// yet ("accessor error").
func waitEstablished(ctx context.Context, c *cluster.Cluster, crd string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		out, err := c.RunKubectl(ctx, "get", "crd", crd, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		if err == nil && string(out) == "True" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s is not established (last: %q, %w): %w", crd, out, err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "PROJECT")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (PROJECT) not found above the working directory")
		}
		dir = parent
	}
}

// ManagerServiceAccount is the account the manager runs as: the one a real
// install creates, with the RBAC generated from the code's markers.
const ManagerServiceAccount = "sidecarset-operator"

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// manager's ServiceAccount (a token from the TokenRequest API), so that the
// manager runs with its least-privilege RBAC rather than as cluster-admin.
func (e *Env) serviceAccountKubeconfig(ctx context.Context) (string, error) {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(24 * 3600))}}
	tok, err := e.Clientset.CoreV1().ServiceAccounts(OperatorNamespace).CreateToken(ctx, ManagerServiceAccount, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating a token for %s/%s: %w", OperatorNamespace, ManagerServiceAccount, err)
	}
	admin, err := clientcmd.LoadFromFile(e.Cluster.KubeconfigPath())
	if err != nil {
		return "", err
	}
	ctxName := admin.CurrentContext
	cluster := admin.Clusters[admin.Contexts[ctxName].Cluster]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = cluster
	cfg.AuthInfos[ManagerServiceAccount] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["manager"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: ManagerServiceAccount}
	cfg.CurrentContext = "manager"
	path := filepath.Join(e.Dir, "manager.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}
