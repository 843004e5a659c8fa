package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/cluster"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
)

// prometheusAddr is where the spec's Prometheus serves its API.
const prometheusAddr = "127.0.0.1:19090"

// promAlert is an alert of Prometheus' /api/v1/alerts.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

// promGet decodes the data of a Prometheus API answer.
func promGet(ctx context.Context, path string, data any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+prometheusAddr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return err
	}
	if answer.Status != "success" {
		return fmt.Errorf("GET %s: %s %s", path, answer.Status, answer.Error)
	}
	return json.Unmarshal(answer.Data, data)
}

// alertState is the state of the alert of that name whose labels include
// the given ones ("" when there is none).
func alertState(alerts []promAlert, name string, labels map[string]string) string {
	for _, a := range alerts {
		if a.Labels["alertname"] != name {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && a.Labels[k] == v
		}
		if match {
			return a.State
		}
	}
	return ""
}

// withSecureMetrics restarts the host manager with its metrics served as in
// a cluster (HTTPS, callers authenticated and authorized by the API
// server) and with leader election, and restores it when the spec ends.
func withSecureMetrics(ctx context.Context) {
	plain := slices.Clone(env.Manager.Args)
	gomega.Expect(env.Manager.Stop(15 * time.Second)).To(gomega.Succeed())
	env.Manager.Args = append(slices.Clone(plain), "--metrics-secure=true", "--leader-elect=true")
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(env.Manager.Stop(15 * time.Second)).To(gomega.Succeed())
		env.Manager.Args = plain
		gomega.Expect(env.StartManager(ctx)).To(gomega.Succeed())
	})
	gomega.Expect(env.StartManager(ctx)).To(gomega.Succeed())
}

// prometheusReader creates a ServiceAccount for Prometheus, bound to the
// metrics-reader role by config/prometheus's own binding (its subject
// replaced), and returns a token of it.
func prometheusReader(ctx context.Context, ns string) string {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: ns}}
	gomega.Expect(env.Client.Create(ctx, sa)).To(gomega.Succeed())
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, "config", "prometheus", "metrics_reader_binding.yaml"))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	binding := &rbacv1.ClusterRoleBinding{}
	gomega.Expect(yaml.UnmarshalStrict(data, binding)).To(gomega.Succeed())
	binding.Name = "e2e-" + binding.Name
	binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}
	gomega.Expect(env.Client.Create(ctx, binding)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, binding))).To(gomega.Succeed())
	})
	tr, err := env.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
	}, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return tr.Status.Token
}

// startPrometheus writes the Prometheus configuration derived from the
// shipped ServiceMonitor and the rules extracted from the shipped
// PrometheusRule (test/monitoring's promfiles), then runs the Prometheus
// of bin/prometheus on the host until the spec ends.
func startPrometheus(ctx context.Context, token string) {
	dir := filepath.Join(env.Dir, "prometheus")
	gomega.Expect(os.RemoveAll(dir)).To(gomega.Succeed())
	gomega.Expect(os.MkdirAll(dir, 0o750)).To(gomega.Succeed())
	tokenFile := filepath.Join(dir, "token")
	gomega.Expect(os.WriteFile(tokenFile, []byte(token), 0o600)).To(gomega.Succeed())
	gen := exec.CommandContext(ctx, "go", "run", "./cmd/promfiles", "-root", env.RepoRoot, "-out", dir,
		"-target", framework.MetricsAddr, "-token-file", tokenFile, "-scrape-interval", "1s", "-evaluation-interval", "1s")
	gen.Dir = filepath.Join(env.RepoRoot, "test", "monitoring")
	out, err := gen.CombinedOutput()
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), string(out))
	config, err := os.ReadFile(filepath.Join(dir, "prometheus.yml"))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.AddReportEntry("prometheus.yml (from the shipped ServiceMonitor)", string(config))

	binary := filepath.Join(env.RepoRoot, "bin", "prometheus", "prometheus")
	_, err = os.Stat(binary)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "make tools builds bin/prometheus")
	p := &cluster.Process{
		Binary: binary,
		Args: []string{"--config.file=" + filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + prometheusAddr},
		LogPath:  filepath.Join(dir, "prometheus.log"),
		ReadyURL: "http://" + prometheusAddr + "/-/ready",
	}
	gomega.Expect(p.Start(false)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func() {
		gomega.Expect(p.Stop(15 * time.Second)).To(gomega.Succeed())
	})
	ready, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	gomega.Expect(p.WaitReady(ready)).To(gomega.Succeed())
}

// The operator's monitoring on a real Prometheus: it scrapes the manager as
// the shipped ServiceMonitor says (HTTPS, the bearer token of a
// ServiceAccount bound to the metrics-reader role), evaluates the shipped
// rules, and the alerts of a denied pod, a rollout that paused itself and a
// rollout past its progress deadline fire.
var _ = ginkgo.Describe("Monitoring with the shipped ServiceMonitor and PrometheusRule", ginkgo.Label("monitoring"), func() {
	ginkgo.It("should scrape the manager with the ServiceMonitor's settings and fire the alerts of a denied pod and of failing rollouts", func(ctx ginkgo.SpecContext) {
		withSecureMetrics(ctx)
		ns := createNamespace(ctx, "monitoring")
		startPrometheus(ctx, prometheusReader(ctx, ns))

		ginkgo.By("scraping the manager over HTTPS with the token")
		gomega.Eventually(func(g gomega.Gomega) {
			var targets struct {
				ActiveTargets []struct {
					Health    string `json:"health"`
					LastError string `json:"lastError"`
					ScrapeURL string `json:"scrapeUrl"`
				} `json:"activeTargets"`
			}
			g.Expect(promGet(ctx, "/api/v1/targets", &targets)).To(gomega.Succeed())
			g.Expect(targets.ActiveTargets).To(gomega.HaveLen(1))
			t := targets.ActiveTargets[0]
			g.Expect(t.ScrapeURL).To(gomega.Equal("https://" + framework.MetricsAddr + "/metrics"))
			g.Expect(t.Health).To(gomega.Equal("up"), t.LastError)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(gomega.Succeed())

		ginkgo.By("a rollout onto an image that never becomes ready, with a failure budget of 1: it pauses itself")
		paused := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(2)).
			Annotation(appsv1beta1.FailureBudgetAnnotation, "1").
			Annotation(appsv1beta1.FailureWindowAnnotation, "5").Obj())
		runDeployment(ctx, app(ns, "web", 4).Obj(), paused.Name)
		expectStatus(ctx, paused.Name, 1, counts{Matched: 4, Updated: 4, Ready: 4, UpdatedReady: 4})

		ginkgo.By("a rollout onto that image with a progress deadline of 10s: it stalls")
		other := createNamespace(ctx, "monitoring-deadline")
		stalled := createSidecarSet(ctx, sidecarSet(other, "sidecar", v1).MaxUnavailable(intstr.FromInt32(1)).
			Annotation(appsv1beta1.ProgressDeadlineAnnotation, "10").Obj())
		runDeployment(ctx, app(other, "web", 2).Obj(), stalled.Name)
		expectStatus(ctx, stalled.Name, 1, counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2})
		// Prometheus sees the counters at 0 before they move.
		time.Sleep(3 * time.Second)
		setImage(ctx, paused.Name, "sidecar", badImage)
		setImage(ctx, stalled.Name, "sidecar", badImage)

		ginkgo.By("a pod whose SidecarSet annotation cannot be read: the webhook denies it")
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "unreadable", Namespace: ns, Labels: appLabels,
				Annotations: map[string]string{appsv1beta1.SidecarSetHashAnnotation: "{not json"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.25"}}},
		}
		err := env.Client.Create(ctx, pod)
		gomega.Expect(err).To(gomega.HaveOccurred())
		gomega.Expect(err.Error()).To(gomega.ContainSubstring("denied the request"))

		ginkgo.By("the alerts fire in Prometheus")
		start := time.Now()
		var alerts []promAlert
		gomega.Eventually(func(g gomega.Gomega) {
			var data struct {
				Alerts []promAlert `json:"alerts"`
			}
			g.Expect(promGet(ctx, "/api/v1/alerts", &data)).To(gomega.Succeed())
			alerts = data.Alerts
			g.Expect(alertState(alerts, "SidecarSetPodsDenied", nil)).To(gomega.Equal("firing"), "%v", alerts)
			g.Expect(alertState(alerts, "SidecarSetRolloutAutoPaused", map[string]string{"sidecarset": paused.Name})).To(gomega.Equal("firing"), "%v", alerts)
			g.Expect(alertState(alerts, "SidecarSetRolloutStalled", map[string]string{"sidecarset": stalled.Name})).To(gomega.Equal("firing"), "%v", alerts)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(gomega.Succeed())
		ginkgo.AddReportEntry("alerts firing after", time.Since(start).Round(time.Second).String())
		for _, a := range alerts {
			ginkgo.AddReportEntry("alert", fmt.Sprintf("%s %s %v", a.State, a.Labels["alertname"], a.Labels))
		}
		for _, a := range alerts {
			if a.State == "firing" {
				gomega.Expect(a.Annotations).To(gomega.HaveKeyWithValue("runbook_url",
					"https://github.com/sidecarset-operator/sidecarset-operator/blob/main/docs/runbooks.md#"+strings.ToLower(a.Labels["alertname"])))
			}
		}

		ginkgo.By("the paused rollout, and it only, is reported paused")
		gomega.Eventually(func(g gomega.Gomega) {
			var vector struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  []any             `json:"value"`
				} `json:"result"`
			}
			g.Expect(promGet(ctx, "/api/v1/query?query="+url.QueryEscape(`sidecarset_rollout_paused{sidecarset=~"`+paused.Name+"|"+stalled.Name+`"}`), &vector)).To(gomega.Succeed())
			g.Expect(vector.Result).To(gomega.HaveLen(1))
			g.Expect(vector.Result[0].Metric).To(gomega.HaveKeyWithValue("sidecarset", paused.Name))
			g.Expect(vector.Result[0].Value).To(gomega.HaveLen(2))
			g.Expect(vector.Result[0].Value[1]).To(gomega.Equal("1"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(gomega.Succeed())

		ginkgo.By("the manager is up and leads: neither its down nor its leader alert is pending or firing")
		gomega.Expect(alertState(alerts, "SidecarSetOperatorDown", nil)).To(gomega.BeEmpty())
		gomega.Expect(alertState(alerts, "SidecarSetLeaderMissing", nil)).To(gomega.BeEmpty())
		gomega.Expect(alertState(alerts, "SidecarSetRolloutAutoPaused", map[string]string{"sidecarset": stalled.Name})).To(gomega.BeEmpty())
	})
})
