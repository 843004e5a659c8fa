package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
	"github.com/sidecarset-operator/sidecarset-operator/test/node"
	"github.com/sidecarset-operator/sidecarset-operator/test/node/counter"
)

// realNodeLabel labels the specs whose pods run on the real node (a kubelet
// with containerd and runc joined to the e2e cluster: test/node). Without
// the real node (SIDECARSET_REAL_NODE=off) they are left out.
const realNodeLabel = "realnode"

// createRealNodeNamespace creates a namespace for one spec whose pods all
// run on the real node, as written (the API server adds the node selector
// and the toleration), deleted when the spec ends. It first waits until the
// node holds no pod of another namespace, so that every spec finds it empty
// (the room a deferred resize needs is counted).
func createRealNodeNamespace(ctx context.Context, prefix string) string {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		g.Expect(realNodePods(ctx, g)).To(gomega.BeEmpty(), "pods of earlier specs still on the real node")
	}).WithContext(ctx).Should(gomega.Succeed())
	ns := builder.MakeNamespace(prefix).Obj()
	ns.Annotations = node.NamespaceAnnotations()
	gomega.Expect(env.Client.Create(ctx, ns)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, ns))).To(gomega.Succeed())
	})
	return ns.Name
}

// realNodePods lists the pods bound to the real node, by namespace/name.
func realNodePods(ctx context.Context, g gomega.Gomega) []string {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, list)).To(gomega.Succeed())
	var out []string
	for _, p := range list.Items {
		if p.Spec.NodeName == framework.RealNodeName {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	return out
}

// onRealNode checks that a pod runs on the real node.
func onRealNode(g gomega.Gomega, p *corev1.Pod) {
	g.ExpectWithOffset(1, p.Spec.NodeName).To(gomega.Equal(framework.RealNodeName), "pod %s", p.Name)
}

// serverCounter reads the counter a pod's server answers on a port (the
// node's server images: test/node/nodebox).
func serverCounter(ctx context.Context, p *corev1.Pod, port int) (counter.Counter, error) {
	var c counter.Counter
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port))+"/", nil)
	if err != nil {
		return c, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return c, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("%s: %s", req.URL, resp.Status)
	}
	return c, json.NewDecoder(resp.Body).Decode(&c)
}

// expectServing reads a pod's counter on a port, and checks it answers.
func expectServing(ctx context.Context, g gomega.Gomega, p *corev1.Pod, port int) counter.Counter {
	c, err := serverCounter(ctx, p, port)
	g.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "pod %s on port %d", p.Name, port)
	return c
}

// expectCountedOn checks that a server kept running since an earlier read:
// the same start, more requests.
func expectCountedOn(g gomega.Gomega, before, now counter.Counter, what string) {
	g.ExpectWithOffset(1, now.Started).To(gomega.Equal(before.Started), "%s restarted", what)
	g.ExpectWithOffset(1, now.Requests).To(gomega.BeNumerically(">", before.Requests), "%s did not count on", what)
}

// timings are the real-node specs' measured times, reported with each spec
// and written at the end of the suite.
var timings framework.Timings

// timing records a measured time of the current spec.
func timing(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	ginkgo.AddReportEntry("real node", line, ginkgo.ReportEntryVisibilityAlways)
	timings.Record(ginkgo.CurrentSpecReport().LeafNodeText, line)
}

// seconds formats a duration as seconds, one decimal.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}
