// Command bench measures the operator on the dev cluster (make dev) and
// prints each result next to a floor measured in the same run:
//
//	go run ./test/bench webhook   # pod admission latency and throughput
//	go run ./test/bench rollout   # in-place rollout time, writes per pod, manager memory
//	go run ./test/bench scale     # 10 000 pods and 5 000 SidecarSets: admission, rollouts, memory, start
//	go run ./test/bench start     # the manager's start alone, with what a scale run left (--keep)
//
// Results are ratios to the floor, never absolute timings: the machines are
// noisy, the ratio is what the operator adds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sidecarset-operator/sidecarset-operator/api/install"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	install.Install(scheme)
}

// env is the cluster under test.
type env struct {
	config    *rest.Config
	client    client.Client
	clientset kubernetes.Interface
	// pidFile holds the dev manager's process ID (for its memory).
	pidFile string
	// managerMetrics is the dev manager's metrics address.
	managerMetrics string
	// kubeconfig is the dev cluster's kubeconfig file.
	kubeconfig string
	// bare is the bare webhook's process, while it runs.
	bare *bareWebhook
}

func main() {
	os.Exit(run())
}

func run() int {
	// The bench prints its own tables; the API server's warnings (such as
	// what a SidecarSet update does to running pods) are expected here.
	ctrllog.SetLogger(logr.Discard())
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench webhook|rollout|scale|start [flags]")
		return 2
	}
	verb := os.Args[1]
	if verb == bareVerb {
		return runBareWebhook(os.Args[2:])
	}
	fs := flag.NewFlagSet("bench "+verb, flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "bin/dev/kubeconfig", "Kubeconfig of the dev cluster.")
	pidFile := fs.String("manager-pid-file", "bin/dev/manager.pid", "PID file of the dev cluster's manager.")
	wo := webhookOptions{}
	fs.IntVar(&wo.pods, "pods", 500, "Pods created per measurement (webhook).")
	fs.IntVar(&wo.creators, "creators", 20, "Concurrent pod creators (webhook).")
	fs.BoolVar(&wo.bare, "bare-webhook", true, "In each round with 1 SidecarSet, also create the pods with a bare webhook in place of the operator's: the same patch for every pod, no decision, the pods watched (webhook, scale).")
	fs.IntVar(&wo.rounds, "rounds", 3, "Rounds per configuration, each against its own floor; the median is reported (webhook, rollout).")
	counts := fs.String("sidecarsets", "0,1,100,1000", "Numbers of SidecarSets to measure with (webhook).")
	prof := &profiler{}
	fs.StringVar(&prof.dir, "profile-dir", "", "If set, write CPU profiles of the API server and the manager here, and print their parts (webhook: of one more creation with 1 SidecarSet after the measured ones; rollout: the second round of the largest size's rollouts).")
	fs.StringVar(&prof.managerAddr, "manager-pprof", "", "The manager's --pprof-bind-address, to profile it too (with --profile-dir).")
	fs.IntVar(&prof.seconds, "profile-seconds", 5, "Length of each CPU profile (with --profile-dir).")
	// The webhook bench profiles one creation after the measured ones, not
	// the measured ones (a profile takes CPU from the measurement).
	wo.profile = &profiler{}
	ro := rolloutOptions{profile: prof}
	fs.IntVar(&ro.writers, "writers", 32, "Parallel pod patches of the floor client; the manager's --pod-writers default (rollout, scale).")
	fs.IntVar(&ro.compared, "compared-writers", 20, "Parallel pod patches of a second floor client measured beside the first in each round of the image rollouts; 0: none (rollout).")
	fs.BoolVar(&ro.resizes, "resizes", true, "Also resize the sidecars of the largest Deployment in place (rollout).")
	rolloutSizes := fs.String("rollout-pods", "200,1000", "Pods of the Deployments rolled out in turn; the largest is also resized and profiled (rollout).")
	so := scaleOptions{}
	sizes := fs.String("sizes", "1000,3000,10000", "Numbers of pods measured in turn (scale).")
	fs.IntVar(&so.namespaces, "namespaces", 100, "Namespaces the pods are spread over, one Deployment each (scale).")
	fs.IntVar(&so.sidecarSets, "scale-sidecarsets", 5000, "SidecarSets present while the pods are measured (scale).")
	fs.IntVar(&so.selecting, "selecting", 50, "How many of them select pods (scale).")
	managerMetrics := fs.String("manager-metrics", "127.0.0.1:8080", "The dev manager's metrics address (plain HTTP, as make dev serves it).")
	fs.BoolVar(&so.rollouts, "rollouts", true, "Run the rollouts at each size (scale); false: memory and start only, in a fraction of the time, and the run reports a missed target.")
	fs.StringVar(&so.figures, "figures", "", "Write the manager's figures at the largest size to this JSON file (scale; make bench-scale: test/bench/scale-figures.json, which the manager's memory-limit test reads).")
	fs.BoolVar(&so.keep, "keep", false, "Leave the scale run's SidecarSets, namespaces and pods in place (scale), for bench start.")
	fs.StringVar(&so.healthAddr, "manager-health", "127.0.0.1:8081", "The dev manager's health probe address (scale).")
	if err := fs.Parse(os.Args[2:]); err != nil {
		return 2
	}
	for c := range strings.SplitSeq(*counts, ",") {
		if strings.TrimSpace(c) == "" {
			continue // none: the scale benchmark skips admission
		}
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: --sidecarsets:", err)
			return 2
		}
		wo.counts = append(wo.counts, n)
	}
	for c := range strings.SplitSeq(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: --sizes:", err)
			return 2
		}
		so.sizes = append(so.sizes, n)
	}
	for c := range strings.SplitSeq(*rolloutSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "bench: --rollout-pods: want positive numbers:", c)
			return 2
		}
		ro.sizes = append(ro.sizes, n)
	}
	ro.rounds = wo.rounds
	if prof.dir != "" {
		wo.afterward = prof
	}
	so.writers, so.webhook = ro.writers, wo
	// The scale run profiles the manager at rest, at its start, and
	// admitting pods in one creation after the measured ones, not during
	// them: that creation is profiled only when the manager's is taken
	// too, which is the one the scale run reads.
	so.pprofAddr, so.profileDir = prof.managerAddr, prof.dir
	if prof.managerAddr == "" {
		so.webhook.afterward = nil
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	e, err := connect(*kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	e.pidFile, e.managerMetrics, e.kubeconfig = *pidFile, *managerMetrics, *kubeconfig
	var ok bool
	switch verb {
	case "webhook":
		ok, err = benchWebhook(ctx, e, wo)
	case "rollout":
		ok, err = benchRollout(ctx, e, ro)
	case "scale":
		ok, err = benchScale(ctx, e, so)
	case "start":
		ok, err = benchStart(ctx, e, so)
	default:
		err = fmt.Errorf("unknown benchmark %q: want webhook, rollout, scale or start", verb)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if !ok {
		fmt.Fprintln(os.Stderr, "bench: a target was missed (see the table)")
		return 1
	}
	return 0
}

func connect(kubeconfig string) (*env, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading %s (run make dev first): %w", kubeconfig, err)
	}
	// The load generator must not be the bottleneck.
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &env{config: cfg, client: c, clientset: cs}, nil
}
