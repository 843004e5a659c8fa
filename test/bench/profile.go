package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
)

// profiler takes CPU profiles of the API server and the manager during a
// measurement, for finding where the time goes (bench --profile-dir).
type profiler struct {
	dir         string
	managerAddr string
	seconds     int
}

// lasting returns the profiler with its profiles as long as d, rounded up
// to a second: a profile of a creation covers all of it, not a few seconds
// of its start (too few samples to split).
func (p *profiler) lasting(d time.Duration) *profiler {
	if p == nil {
		return nil
	}
	q := *p
	q.seconds = max(1, int(math.Ceil(d.Seconds())))
	return &q
}

// start begins a CPU profile of both processes, named after the
// measurement; the returned function waits for them to be written.
func (p *profiler) start(ctx context.Context, e *env, label string) func() {
	if p == nil || p.dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(p.dir, 0o750); err != nil {
		fmt.Fprintf(os.Stderr, "bench: profiles: %v\n", err)
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		raw, err := e.clientset.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", fmt.Sprint(p.seconds)).DoRaw(ctx)
		p.write(p.path(label, "apiserver"), raw, err)
	})
	if p.managerAddr != "" {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, time.Duration(p.seconds+30)*time.Second)
			defer cancel()
			raw, err := readPprof(ctx, p.managerAddr, fmt.Sprintf("profile?seconds=%d", p.seconds))
			p.write(p.path(label, "manager"), raw, err)
		})
	}
	return wg.Wait
}

// readPprof reads one of the manager's pprof endpoints, served at addr.
func readPprof(ctx context.Context, addr, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the manager's pprof %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	return io.ReadAll(resp.Body)
}

// path is where the profile of a process (apiserver, manager) during the
// measurement label goes; empty when profiles are not taken.
func (p *profiler) path(label, process string) string {
	if p == nil || p.dir == "" {
		return ""
	}
	name := strings.NewReplacer(" ", "-", "(", "", ")", "", ",", "").Replace(label)
	return filepath.Join(p.dir, name+"."+process+".pprof")
}

func (p *profiler) write(path string, raw []byte, err error) {
	writeProfile(path, raw, err)
}

// writeProfile saves a profile, or says why it could not be taken.
func writeProfile(path string, raw []byte, err error) {
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(path), 0o750); err == nil {
			err = os.WriteFile(path, raw, 0o600)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: profile %s: %v\n", path, err)
	}
}

// cpuPart is a part of a process's work in a CPU profile: the samples
// with a function whose name starts with prefix on their stack. A part at a
// greater depth is within the part above it: its samples are those of that
// part with its own prefix on the stack too.
type cpuPart struct {
	label, prefix string
	depth         int
}

const module = "github.com/sidecarset-operator/sidecarset-operator/"

// admissionParts are what the manager does while pods are created, as the
// CPU-per-pod target's miss is explained.
var admissionParts = []cpuPart{
	{"serving webhook calls (TLS, HTTP, the handlers)", "net/http.(*conn).serve", 0},
	{"the pod webhook's handler", module + "webhooks.(*PodInjector).ServeHTTP", 1},
	{"reading the AdmissionReview (the pod decoded)", module + "webhooks.decodePodReview", 2},
	{"deciding and injecting", module + "webhooks.(*PodInjector).handle", 2},
	{"writing the answer", module + "webhooks.writePodReview", 2},
	{"garbage collection, in the background", "runtime.gcBgMarkWorker", 0},
	{"informers: watch events decoded", "k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive", 0},
	{"informers: the stores and the pod cache's transform", "k8s.io/client-go/tools/cache.(*Reflector)", 0},
	{"informers: event handlers", "k8s.io/client-go/tools/cache.(*processorListener)", 0},
	{"SidecarSet reconciles", module + "controllers.(*SidecarSetReconciler).Reconcile", 0},
}

// apiserverAdmissionParts are what the API server does for the mutating
// webhooks while pods are created: what calling the pod webhook adds to a
// pod's creation.
var apiserverAdmissionParts = []cpuPart{
	{"the mutating webhooks, in all", "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating.(*mutatingDispatcher).Dispatch", 0},
	{"choosing the webhooks to call (rules, selectors, matchConditions)", "k8s.io/apiserver/pkg/admission/plugin/webhook/generic.(*Webhook).ShouldCallHook", 1},
	{"of which the matchConditions (CEL)", "k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions.(*matcher).Match", 2},
	{"encoding the AdmissionReview", "k8s.io/client-go/rest.(*Request).Body", 1},
	{"the call (HTTP, TLS, the answer read)", "k8s.io/client-go/rest.(*Request).Do", 1},
	{"decoding JSON (the answer, the patched pod)", "k8s.io/apimachinery/pkg/runtime/serializer/json.(*Serializer).Decode", 1},
	{"decoding and applying the JSON patch", "gopkg.in/evanphx/json-patch", 1},
	{"reinvocationPolicy IfNeeded (the pod compared after each webhook)", "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating.(*webhookReinvokeContext)", 1},
}

// rolloutParts are what the manager does during an in-place rollout, as its
// CPU per upgraded pod is explained.
var rolloutParts = []cpuPart{
	{"SidecarSet reconciles", module + "controllers.(*SidecarSetReconciler).Reconcile", 0},
	{"planning (rollout.Compute)", module + "controllers/rollout.Compute", 1},
	{"listing and matching the pods", module + "controllers.(*SidecarSetReconciler).matchedPods", 1},
	{"status writes", module + "controllers.(*SidecarSetReconciler).patchStatus", 1},
	{"the in-flight tracking", module + "controllers.(*inFlight)", 1},
	{"pod patches (the writers)", module + "controllers.(*SidecarSetReconciler).applyUpdates", 0},
	{"informers: watch events decoded", "k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive", 0},
	{"informers: the stores and the pod cache's transform", "k8s.io/client-go/tools/cache.(*Reflector)", 0},
	{"informers: event handlers", "k8s.io/client-go/tools/cache.(*processorListener)", 0},
	{"HTTP/2 to the API server (reading answers)", "golang.org/x/net/http2.(*ClientConn).readLoop", 0},
	{"event writes", "k8s.io/client-go/tools/events.", 0},
	{"serving the conversion webhook", module + "webhooks/serving.(*Converter)", 0},
	{"garbage collection, in the background", "runtime.gcBgMarkWorker", 0},
}

// summarizeProfile reads a CPU profile and returns its sampled CPU time and
// the time of each part (with its callees; a sample counts once per part).
func summarizeProfile(path string, parts []cpuPart) (total time.Duration, times []time.Duration, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = f.Close() }()
	p, err := profile.Parse(f)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	value := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			value = i
		}
	}
	if value < 0 {
		return 0, nil, fmt.Errorf("%s: not a CPU profile", path)
	}
	times = make([]time.Duration, len(parts))
	parent := parentParts(parts)
	counted := make([]bool, len(parts))
	for _, s := range p.Sample {
		v := time.Duration(s.Value[value])
		total += v
		for i, part := range parts {
			counted[i] = (parent[i] < 0 || counted[parent[i]]) && onStack(s, part.prefix)
			if counted[i] {
				times[i] += v
			}
		}
	}
	return total, times, nil
}

// parentParts returns the index of the part each part is within (the last
// part before it one level up), -1 for a part at the top.
func parentParts(parts []cpuPart) []int {
	parent := make([]int, len(parts))
	for i, part := range parts {
		parent[i] = -1
		for j := i - 1; j >= 0 && part.depth > 0; j-- {
			if parts[j].depth == part.depth-1 {
				parent[i] = j
				break
			}
		}
	}
	return parent
}

// onStack reports whether a function whose name starts with prefix is on
// the sample's stack.
func onStack(s *profile.Sample, prefix string) bool {
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function != nil && strings.HasPrefix(line.Function.Name, prefix) {
				return true
			}
		}
	}
	return false
}

// printCPUProfile prints what a CPU profile of a process's work on pods
// holds: its sampled time per pod, and its parts.
func printCPUProfile(path string, pods int, parts []cpuPart) {
	total, times, err := summarizeProfile(path, parts)
	if err != nil {
		fmt.Printf("  (the profile cannot be read: %v)\n", err)
		return
	}
	perPod := func(d time.Duration) string {
		return fmt.Sprintf("%.3f ms", float64(d)/float64(pods)/float64(time.Millisecond))
	}
	fmt.Printf("  the profile sampled %.1f s of CPU over %d pods, %s per pod:\n", total.Seconds(), pods, perPod(total))
	rest := total
	for i, part := range parts {
		fmt.Printf("  %s- %s: %s per pod (%.0f%%)\n", strings.Repeat("  ", part.depth), part.label, perPod(times[i]), 100*float64(times[i])/float64(total))
		if part.depth == 0 {
			rest -= times[i]
		}
	}
	fmt.Printf("  - the rest: %s per pod (%.0f%%)\n", perPod(rest), 100*float64(rest)/float64(total))
}
