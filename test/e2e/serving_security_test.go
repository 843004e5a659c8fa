package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// The webhook server of the running manager, as any pod of the cluster
// could reach it (security review N1): every path reads a bounded body, and
// the admission paths serve only the API server's client certificate.
var _ = ginkgo.Describe("Webhook serving", ginkgo.Label("security", "serving"), ginkgo.Ordered, func() {
	var (
		base      = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(framework.WebhookPort))
		anonymous *http.Client // no client certificate
		apiServer *http.Client // the API server's webhook client certificate
	)

	ginkgo.BeforeAll(func() {
		gomega.Expect(env.Manager).NotTo(gomega.BeNil(), "the manager runs on the host")
		cert, err := tls.LoadX509KeyPair(env.Cluster.WebhookClientCertPath(), env.Cluster.WebhookClientKeyPath())
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the e2e cluster's API server presents a webhook client certificate")
		anonymous = webhookClient(nil)
		apiServer = webhookClient(&cert)
	})

	ginkgo.It("reads at most a bounded body on every path: 300 MB POSTs leave the manager's memory as it was", func(ctx ginkgo.SpecContext) {
		pid := env.Manager.PID()
		before := vmRSS(pid)
		peak := &rssPeak{}
		stop := peak.watch(pid)
		const size = 300 << 20
		// The admission paths with the API server's certificate (without
		// one they refuse before reading); /convert needs none; an
		// unknown path answers 404 unread.
		paths := []struct {
			path   string
			client *http.Client
			prefix string
		}{
			{names.ConversionPath, anonymous, `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"1","desiredAPIVersion":"apps.kruise.io/v1beta1","objects":[{"x":"`},
			{names.PodInjectionPath, apiServer, admissionPrefix},
			{names.SidecarSetDefaultPath, apiServer, admissionPrefix},
			{names.SidecarSetValidatePath, apiServer, admissionPrefix},
			{names.LegacySidecarSetDefaultPath, apiServer, admissionPrefix},
			{names.LegacySidecarSetValidatePath, apiServer, admissionPrefix},
			{"/debug/pprof/heap", apiServer, admissionPrefix},
		}
		for _, p := range paths {
			body := &generated{prefix: p.prefix, n: size}
			code, answer, err := post(ctx, p.client, base+p.path, body)
			refused := err != nil || code >= 400 || strings.Contains(answer, `"allowed":false`) || strings.Contains(answer, `"status":"Failure"`)
			gomega.Expect(refused).To(gomega.BeTrue(), "%s answered %d %.300q to a 300 MB body", p.path, code, answer)
			ginkgo.GinkgoWriter.Printf("%s: %d (%v), sent %d MB, answer %.120q\n", p.path, code, err, body.sent.Load()>>20, answer)
		}
		stop()
		gomega.Expect(env.Manager.PID()).To(gomega.Equal(pid), "the manager did not restart")
		// The Go runtime returns freed memory to the system over seconds.
		var after int64
		gomega.Eventually(func() int64 {
			after = vmRSS(pid)
			return after - before
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(2*time.Second).Should(gomega.BeNumerically("<", 20<<20),
			"the manager's RSS came back within 20 MB of before")
		ginkgo.GinkgoWriter.Printf("manager RSS: %d MB before, at most %d MB during, %d MB after\n", before>>20, peak.max.Load()>>20, after>>20)
		gomega.Expect(peak.max.Load()-before).To(gomega.BeNumerically("<", 100<<20),
			"the manager's RSS never grew by a body's size (300 MB)")
	}, ginkgo.SpecTimeout(5*time.Minute))

	ginkgo.It("refuses forged admission reviews without the API server's certificate, while the API server's requests inject", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "serving")
		ss := createSidecarSet(ctx, sidecarSet(ns, "secret-sidecar", "busybox:1.36").Obj())

		forgedPod := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"CREATE","namespace":%q,`+
			`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},`+
			`"object":{"metadata":{"namespace":%q,"labels":{"app":"web"}},"spec":{"containers":[{"name":"x","image":"x"}]}}}}`, ns, ns)
		forgedSidecarSet := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"2","operation":"CREATE",` +
			`"kind":{"group":"apps.kruise.io","version":"v1beta1","kind":"SidecarSet"},"resource":{"group":"apps.kruise.io","version":"v1beta1","resource":"sidecarsets"},` +
			`"userInfo":{"username":"victim@example.com","groups":["system:authenticated"]},` +
			`"object":{"apiVersion":"apps.kruise.io/v1beta1","kind":"SidecarSet","metadata":{"name":"probe"},"spec":{"selector":{"matchLabels":{"app":"web"}},"containers":[{"name":"c","image":"x"}]}}}}`
		for _, f := range []struct{ path, review string }{
			{names.PodInjectionPath, forgedPod},
			{names.SidecarSetDefaultPath, forgedSidecarSet},
			{names.SidecarSetValidatePath, forgedSidecarSet},
		} {
			code, answer, err := post(ctx, anonymous, base+f.path, strings.NewReader(f.review))
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(code).To(gomega.Equal(http.StatusUnauthorized), "%s answered %q", f.path, answer)
			gomega.Expect(answer).To(gomega.ContainSubstring("present its admission client certificate"))
			gomega.Expect(answer).NotTo(gomega.ContainSubstring("patch"))
		}
		// The certificate is what it takes: the same forged review with it
		// gets the sidecars (the API server holds that key, no pod does).
		code, answer, err := post(ctx, apiServer, base+names.PodInjectionPath, strings.NewReader(forgedPod))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(code).To(gomega.Equal(http.StatusOK))
		gomega.Expect(answer).To(gomega.ContainSubstring(`"patch"`))

		// The API server presents it: a pod the SidecarSet selects is
		// injected.
		pod := builder.MakePod("web", ns).Label("app", "web").Obj()
		expectInjects(ctx, ns, pod.Labels, ss.Name)
		gomega.Expect(env.Client.Create(ctx, pod)).To(gomega.Succeed())
		gomega.Expect(containerNames(pod.Spec.Containers)).To(gomega.ContainElement("secret-sidecar"))
	}, ginkgo.SpecTimeout(3*time.Minute))
})

// admissionPrefix opens an AdmissionReview whose uid never ends.
const admissionPrefix = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"`

// webhookClient is a client of the webhook server, which does not verify
// the server (an attacker need not), presenting cert if given.
func webhookClient(cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{InsecureSkipVerify: true} // the caller plays a pod that does not check whom it attacks
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
}

// post sends body (streamed, without a declared length) and reads at most
// 64 KiB of the answer.
func post(ctx context.Context, c *http.Client, url string, body io.Reader) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(answer), err
}

// generated streams a prefix then 'a's up to n bytes, holding none of them.
type generated struct {
	prefix string
	n      int64
	sent   atomic.Int64
}

func (g *generated) Read(p []byte) (int, error) {
	sent := g.sent.Load()
	if sent >= g.n {
		return 0, io.EOF
	}
	i := 0
	for ; i < len(p) && sent+int64(i) < g.n; i++ {
		if pos := sent + int64(i); pos < int64(len(g.prefix)) {
			p[i] = g.prefix[pos]
		} else {
			p[i] = 'a'
		}
	}
	g.sent.Add(int64(i))
	return i, nil
}

// vmRSS reads a process's resident set size, in bytes.
func vmRSS(pid int) int64 {
	rss, err := readRSS(pid)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return rss
}

// readRSS reads VmRSS from /proc/<pid>/status.
func readRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// rssPeak records the highest RSS of a process while it is watched.
type rssPeak struct{ max atomic.Int64 }

// watch samples the RSS every 20 ms until the returned function is called.
func (r *rssPeak) watch(pid int) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if rss, err := readRSS(pid); err == nil && rss > r.max.Load() {
				r.max.Store(rss)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
