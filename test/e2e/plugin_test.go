package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/cmd/kubectl-sidecarset/explain"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

// The kubectl plugin, built from this checkout, run by kubectl (which finds
// it on the PATH) against the e2e cluster with its kubeconfig.
var _ = ginkgo.Describe("The kubectl plugin", ginkgo.Label("plugin"), ginkgo.Ordered, func() {
	ginkgo.BeforeAll(buildPlugin)

	sidecarset := func(ctx context.Context, args ...string) string {
		out, err := runPlugin(ctx, args...)
		gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
		return out
	}

	ginkgo.It("should explain why a running pod has one SidecarSet and not another", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "plugin-explain")
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", "busybox:1.36").Obj())
		other := createSidecarSet(ctx, builder.MakeSidecarSet(ns+"-other", "app", "api").Namespace(ns).
			Containers(builder.MakeContainer("other", "busybox:1.36").Command("sleep", "999d")).Obj())
		pod := runPod(ctx, builder.MakePod("web", ns).Name("web").Label("app", "web").
			Containers(builder.MakeContainer("main", "nginx:1.25")).Obj(), s.Name, true)

		text := sidecarset(ctx, "explain", "pod/"+pod.Name, "-n", ns)
		ginkgo.AddReportEntry("kubectl sidecarset explain pod/"+pod.Name, text)
		gomega.Expect(text).To(gomega.ContainSubstring("Pod " + ns + "/web (an existing pod"))
		gomega.Expect(text).To(gomega.ContainSubstring("  " + s.Name + " [required]: " + inject.ReasonAlreadyInjected))
		gomega.Expect(text).To(gomega.ContainSubstring("  " + other.Name + " [required]: " + inject.ReasonPodNotSelected + "\n" +
			"    its selector does not match the pod's labels\n    selector: app=api\n"))
		gomega.Expect(text).To(gomega.ContainSubstring("  mpod.sidecarset-operator.dev (failurePolicy Fail, in sidecarset-operator-local-mutating): called"))
		gomega.Expect(text).To(gomega.ContainSubstring("injected list: " + s.Name))
		gomega.Expect(text).To(gomega.ContainSubstring("Result: If this pod were created now: admitted unchanged"))

		// The same pod as a manifest, without what injection wrote: the
		// sidecar is what the webhook would add.
		manifest := builder.MakePod("web", ns).Name("web").Label("app", "web").Containers(builder.MakeContainer("main", "nginx:1.25")).Obj()
		path := writeManifest(manifest)
		var r explain.Report
		// The scope is rewritten within a second of a SidecarSet change.
		gomega.Eventually(func(g gomega.Gomega) {
			out, err := runPlugin(ctx, "explain", "-f", path, "-o", "json")
			g.Expect(err).NotTo(gomega.HaveOccurred())
			r = explain.Report{}
			g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed())
			g.Expect(r.Scope.Stale).To(gomega.BeFalse(), "%+v", r.Scope)
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Expect(r.Scope.Called).To(gomega.Equal(explain.CalledYes))
		gomega.Expect(r.Added.Containers).To(gomega.Equal([]explain.Container{{Name: "sidecar", Image: "busybox:1.36", SidecarSet: s.Name}}))
		gomega.Expect(r.Result).To(gomega.Equal("admitted with the sidecars of " + s.Name))
	})

	ginkgo.It("should inject a Deployment manifest as the webhook injects its pods, which the webhook then leaves alone", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "plugin-inject")
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", "busybox:1.36").Obj())
		d := app(ns, "web", 2).Obj()
		expectInjects(ctx, ns, d.Spec.Template.Labels, s.Name)

		out := sidecarset(ctx, "inject", "-f", writeManifest(d))
		ginkgo.AddReportEntry("kubectl sidecarset inject -f deployment.yaml", out)
		injected := &appsv1.Deployment{}
		gomega.Expect(yaml.UnmarshalStrict([]byte(out), injected)).To(gomega.Succeed(), out)
		gomega.Expect(containerNames(injected.Spec.Template.Spec.Containers)).To(gomega.Equal([]string{"sidecar", "main"}))

		// The webhook's own answer for a pod of the template (server dry run).
		probe := &corev1.Pod{ObjectMeta: *d.Spec.Template.ObjectMeta.DeepCopy(), Spec: *d.Spec.Template.Spec.DeepCopy()}
		probe.Namespace, probe.GenerateName = ns, "probe-"
		gomega.Expect(env.Client.Create(ctx, probe, client.DryRunAll)).To(gomega.Succeed())
		gomega.Expect(injected.Spec.Template.Annotations[appsv1beta1.SidecarSetListAnnotation]).
			To(gomega.Equal(probe.Annotations[appsv1beta1.SidecarSetListAnnotation]))
		gomega.Expect(injected.Spec.Template.Spec.Containers[0].Image).To(gomega.Equal(specContainer(probe, "sidecar").Image))
		gomega.Expect(injected.Spec.Template.Spec.Containers[0].Env).To(gomega.Equal(specContainer(probe, "sidecar").Env))

		gomega.Expect(env.Client.Create(ctx, injected)).To(gomega.Succeed())
		pods := expectReadyPods(ctx, ns, appLabels, 2, s.Name)
		for i := range pods {
			gomega.Expect(containerNames(pods[i].Spec.Containers)).To(gomega.Equal([]string{"sidecar", "main"}), "pod %s", pods[i].Name)
			gomega.Expect(podstate.DecodeInjectedList(pods[i].Annotations[appsv1beta1.SidecarSetListAnnotation])).To(gomega.Equal([]string{s.Name}))
		}
	})

	ginkgo.It("should plan the next rollout of a SidecarSet pod by pod, from a new version's file, without changing anything", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "plugin-plan")
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", "busybox:1.36").
			Containers(builder.MakeContainer("sidecar", "busybox:1.36").Command("sleep", "999d").Requests("50m", "32Mi")).Obj())
		runDeployment(ctx, app(ns, "web", 3).Containers(builder.MakeContainer("main", "nginx:1.25").Requests("100m", "64Mi")).Obj(), s.Name)
		next := getSidecarSet(ctx, gomega.Default, s.Name)
		next.Spec.Containers[0].Resources.Requests = builder.MakeContainer("", "").Requests("100m", "32Mi").Resources.Requests
		next.ManagedFields, next.ResourceVersion = nil, ""

		out := sidecarset(ctx, "plan", s.Name, "-f", writeManifest(next))
		ginkgo.AddReportEntry("kubectl sidecarset plan "+s.Name+" -f next.yaml", out)
		gomega.Expect(out).To(gomega.ContainSubstring("maxUnavailable 1, partition 0, recreate pods: false\n"))
		gomega.Expect(out).To(gomega.ContainSubstring("Pods: 3 resize\n"))
		for batch := 1; batch <= 3; batch++ {
			gomega.Expect(out).To(gomega.MatchRegexp(`(?m)^%d +%s/web-\S+ +resize +sidecar cpu request 50m→100m$`, batch, ns))
		}
		gomega.Expect(getSidecarSet(ctx, gomega.Default, s.Name).Generation).To(gomega.Equal(next.Generation), "plan changed the SidecarSet")
		for _, p := range listPods(ctx, gomega.Default, ns, appLabels) {
			gomega.Expect(specContainer(&p, "sidecar").Resources.Requests.Cpu().String()).To(gomega.Equal("50m"), "plan changed pod %s", p.Name)
		}
	})

	ginkgo.It("should exit 1, 2 or 3 as the operation, the command line or the API server fails, and write with --dry-run and --field-manager", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "plugin-exit")
		notUpdate := sidecarSet(ns, "sidecar", "busybox:1.36").Obj()
		notUpdate.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
		s := createSidecarSet(ctx, notUpdate)

		ginkgo.By("exit codes")
		for _, tc := range []struct {
			args []string
			code int
			msg  string
		}{
			{[]string{"rollout", "status", s.Name}, 1, "updateStrategy.type NotUpdate"},
			{[]string{"rollout", "history", s.Name + "-missing"}, 1, "not found"},
			{[]string{"rollout", "status", s.Name, "--sidecarsets-from", "x.yaml"}, 2, "unknown flag: --sidecarsets-from"},
			{[]string{"inject", "-f", "x.yaml", "-o", "table"}, 2, `--output "table"`},
			{[]string{"rollout", "status", s.Name, "--server", "https://127.0.0.1:1"}, 3, "connection refused"},
			{[]string{"rollout", "pause", s.Name, "--as", "nobody@example.com"}, 3, "forbidden"},
		} {
			r := execPlugin(ctx, tc.args...)
			gomega.Expect(r.ExitCode).To(gomega.Equal(tc.code), "kubectl sidecarset %v: %s", tc.args, r.Stderr)
			gomega.Expect(r.Stderr).To(gomega.ContainSubstring(tc.msg), "kubectl sidecarset %v", tc.args)
		}

		ginkgo.By("a server dry run: the API server answers, nothing is stored")
		out := sidecarset(ctx, "rollout", "pause", s.Name, "--dry-run=server", "-o", "jsonpath={.spec.updateStrategy.paused}")
		gomega.Expect(out).To(gomega.Equal("true"))
		gomega.Expect(getSidecarSet(ctx, gomega.Default, s.Name).Spec.UpdateStrategy.Paused).To(gomega.BeFalse())

		ginkgo.By("a write recorded under the field manager given")
		out = sidecarset(ctx, "rollout", "pause", s.Name, "--field-manager", "e2e-oncall", "-o", "name")
		gomega.Expect(out).To(gomega.Equal("sidecarset.apps.kruise.io/" + s.Name + "\n"))
		paused := getSidecarSet(ctx, gomega.Default, s.Name)
		gomega.Expect(paused.Spec.UpdateStrategy.Paused).To(gomega.BeTrue())
		var managers []string
		for _, m := range paused.ManagedFields {
			managers = append(managers, m.Manager+"/"+string(m.Operation))
		}
		gomega.Expect(managers).To(gomega.ContainElement("e2e-oncall/Update"))

		ginkgo.By("inject -o json, for pipelines that read JSON")
		d := app(ns, "web", 1).Obj()
		out = sidecarset(ctx, "inject", "-f", writeManifest(d), "-o", "json")
		injected := &appsv1.Deployment{}
		gomega.Expect(json.Unmarshal([]byte(out), injected)).To(gomega.Succeed(), out)
		gomega.Expect(injected.Spec.Template.Annotations).To(gomega.HaveKey(appsv1beta1.SidecarSetListAnnotation))
	})
})

// pluginDir holds the plugin built from this checkout (buildPlugin).
var pluginDir string

// buildPlugin builds the plugin, once per run of the suite.
func buildPlugin(ctx ginkgo.SpecContext) {
	if pluginDir != "" {
		return
	}
	dir := filepath.Join(env.Dir, "plugin")
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "kubectl-sidecarset"), "./cmd/kubectl-sidecarset")
	build.Dir = env.RepoRoot
	out, err := build.CombinedOutput()
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), string(out))
	pluginDir = dir
}

// pluginRun is one run of the plugin.
type pluginRun struct {
	Stdout, Stderr string
	// ExitCode is the plugin's exit code (kubectl passes it on).
	ExitCode int
}

// execPlugin runs `kubectl sidecarset ARGS` and returns its outputs and
// exit code.
func execPlugin(ctx context.Context, args ...string) pluginRun {
	cmd := exec.CommandContext(ctx, env.Cluster.Kubectl(), append([]string{"sidecarset"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+env.Cluster.KubeconfigPath())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		gomega.ExpectWithOffset(2, err).NotTo(gomega.HaveOccurred(), "running kubectl sidecarset")
	}
	return pluginRun{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: cmd.ProcessState.ExitCode()}
}

// runPlugin runs `kubectl sidecarset ARGS` and returns its standard
// output; an error carries its standard error.
func runPlugin(ctx context.Context, args ...string) (string, error) {
	r := execPlugin(ctx, args...)
	if r.ExitCode != 0 {
		return r.Stdout, fmt.Errorf("kubectl sidecarset %s: exit code %d: %s", strings.Join(args, " "), r.ExitCode, r.Stderr)
	}
	return r.Stdout, nil
}

// writeManifest writes an object as YAML into a temporary file of the spec.
func writeManifest(obj client.Object) string {
	gvks, _, err := env.Client.Scheme().ObjectKinds(obj)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	data, err := yaml.Marshal(obj)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	path := filepath.Join(ginkgo.GinkgoT().TempDir(), strings.ToLower(gvks[0].Kind)+".yaml")
	gomega.ExpectWithOffset(1, os.WriteFile(path, data, 0o600)).To(gomega.Succeed())
	return path
}
