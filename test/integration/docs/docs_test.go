package docs_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// guidePages are the pages the guide's index promises.
var guidePages = []string{
	"README.md", "getting-started.md", "injection.md", "upgrades.md", "revisions.md",
	"pod-metadata.md", "install.md", "security.md", "observability.md", "troubleshooting.md", "kubectl-plugin.md",
	"validation.md", "overview.md", "compatibility.md", "benchmarks.md",
}

// sentinelLabel is the pod label of the sentinel SidecarSet that proves the
// pod webhook has seen every earlier SidecarSet change.
const sentinelLabel = "docs.sidecarset-operator.dev/sentinel"

var _ = ginkgo.Describe("The user guide", func() {
	names, err := pageNames()
	if err != nil || len(names) == 0 {
		panic(fmt.Sprintf("no pages found in %s: %v", docsDir, err))
	}

	ginkgo.It("should have every page of the index, in English", func() {
		gomega.Expect(names).To(gomega.ContainElements(guidePages))
		for _, name := range names {
			p, err := readPage(name)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			for i, line := range p.lines {
				gomega.Expect(hasCJK(line)).To(gomega.BeFalse(), "%s:%d is not in English: %s", name, i+1, line)
			}
		}
	})

	ginkgo.It("should write every yaml example as complete objects, skipping only what says why", func() {
		total, skipped := 0, 0
		for _, name := range names {
			p, err := readPage(name)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			blocks, problems := yamlBlocks(p)
			gomega.Expect(problems).To(gomega.BeEmpty())
			for _, b := range blocks {
				total++
				gomega.Expect(b.body).NotTo(gomega.ContainSubstring("..."), "%s elides part of the example", b)
				if strings.HasPrefix(b.body, skipMarker) {
					skipped++
					gomega.Expect(b.skip).NotTo(gomega.BeEmpty(), "%s: say why the example is not applied", b)
					continue
				}
				objs, err := examples(b)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(objs).NotTo(gomega.BeEmpty(), "%s has no object", b)
			}
		}
		ginkgo.AddReportEntry("yaml blocks", fmt.Sprintf("%d blocks, %d not applied", total, skipped))
		gomega.Expect(skipped*5).To(gomega.BeNumerically("<=", total), "keep the examples that are not applied to a minimum")
	})

	entries := make([]ginkgo.TableEntry, 0, len(names))
	for _, name := range names {
		entries = append(entries, ginkgo.Entry(name, name))
	}
	ginkgo.DescribeTable("should apply every example of the page to the API server, in order",
		func(ctx ginkgo.SpecContext, name string) {
			p, err := readPage(name)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			blocks, problems := yamlBlocks(p)
			gomega.Expect(problems).To(gomega.BeEmpty())
			var objs []example
			for _, b := range blocks {
				if b.skip != "" {
					continue
				}
				more, err := examples(b)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				objs = append(objs, more...)
			}
			applyPage(ctx, objs)
			ginkgo.AddReportEntry("applied", fmt.Sprintf("%s: %d objects from %d blocks", name, len(objs), len(blocks)))
		},
		entries,
	)
})

// applyPage applies a page's objects in order and deletes them when the
// spec ends. The namespaces they name are created first unless the page
// creates them, and kept (envtest has no namespace controller to finish
// deleting them; a later page may apply the same Namespace). Before a
// pod is created, the pod webhook is made to catch up with the SidecarSets
// applied before it.
func applyPage(ctx context.Context, objs []example) {
	for _, ns := range namespaces(objs) {
		err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		gomega.Expect(client.IgnoreAlreadyExists(err)).To(gomega.Succeed())
	}
	var applied []example
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) { cleanUp(ctx, applied) })
	sidecarSetsChanged := false
	for _, ex := range objs {
		switch ex.obj.GetKind() {
		case "Pod":
			if sidecarSetsChanged {
				syncRegistry(ctx)
				sidecarSetsChanged = false
			}
		case "SidecarSet":
			sidecarSetsChanged = true
		}
		applyExample(ctx, ex)
		applied = append(applied, ex)
	}
}

// namespaces lists the namespaces the objects live in, in order, except
// those the page itself creates before it uses them.
func namespaces(objs []example) []string {
	var out, created []string
	for _, ex := range objs {
		if ex.obj.GetKind() == "Namespace" {
			created = append(created, ex.obj.GetName())
		}
		if ns := ex.obj.GetNamespace(); ns != "" && !slices.Contains(out, ns) && !slices.Contains(created, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// applyExample applies one object with kubectl apply, retrying while the
// operator catches up (a SidecarSet that pins a revision is accepted once
// the controller has recorded it; a patchPodMetadata once the whitelist is
// loaded). The admission warnings are logged.
func applyExample(ctx context.Context, ex example) {
	var stdout, stderr string
	gomega.Eventually(func(g gomega.Gomega) {
		var err error
		stdout, stderr, err = kubectl(ctx, []byte(ex.yaml), "apply", "-f", "-")
		g.Expect(err).NotTo(gomega.HaveOccurred(), "%s was rejected: %s", ex, stderr)
	}).WithContext(ctx).Should(gomega.Succeed())
	ginkgo.GinkgoWriter.Printf("%s: %s%s", ex, stdout, stderr)
	if ex.obj.GetKind() == "Pod" {
		pod := &corev1.Pod{}
		key := client.ObjectKey{Namespace: podNamespace(ex), Name: ex.obj.GetName()}
		gomega.Expect(env.Client.Get(ctx, key, pod)).To(gomega.Succeed())
		ginkgo.GinkgoWriter.Printf("  injected: %q\n", pod.Annotations[appsv1beta1.SidecarSetListAnnotation])
	}
}

func podNamespace(ex example) string {
	if ns := ex.obj.GetNamespace(); ns != "" {
		return ns
	}
	return metav1.NamespaceDefault
}

// syncRegistry returns once the pod webhook has seen every SidecarSet
// change made before the call: SidecarSet events reach its registry in
// order, so once a sentinel SidecarSet created now is injected, every
// earlier change is in.
func syncRegistry(ctx context.Context) {
	sentinel := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "docs-sentinel"},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{sentinelLabel: "true"}},
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "docs-sentinel", Image: "busybox:1.36"}}},
		},
	}
	gomega.Expect(env.Client.Create(ctx, sentinel)).To(gomega.Succeed())
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "docs-sentinel", Namespace: metav1.NamespaceDefault, Labels: map[string]string{sentinelLabel: "true"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "busybox:1.36"}}},
	}
	gomega.Eventually(func(g gomega.Gomega) {
		dry := probe.DeepCopy()
		g.Expect(env.Client.Create(ctx, dry, client.DryRunAll)).To(gomega.Succeed())
		g.Expect(dry.Spec.Containers).To(gomega.ContainElement(gomega.HaveField("Name", "docs-sentinel")))
	}).WithContext(ctx).Should(gomega.Succeed())
	gomega.Expect(env.Client.Delete(ctx, sentinel)).To(gomega.Succeed())
}

// cleanUp deletes a page's objects, newest first (namespaces are kept), and
// the ControllerRevisions its SidecarSets left behind (envtest has no
// garbage collector), and waits until no SidecarSet is left.
func cleanUp(ctx context.Context, applied []example) {
	for _, ex := range slices.Backward(applied) {
		if ex.obj.GetKind() == "Namespace" {
			continue
		}
		_, stderr, err := kubectl(ctx, []byte(ex.yaml), "delete", "--ignore-not-found", "--wait=true", "-f", "-")
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "deleting %s: %s", ex, stderr)
	}
	gomega.Eventually(func(g gomega.Gomega) {
		list := &appsv1beta1.SidecarSetList{}
		g.Expect(env.Client.List(ctx, list)).To(gomega.Succeed())
		g.Expect(list.Items).To(gomega.BeEmpty())
	}).WithContext(ctx).Should(gomega.Succeed())
	err := env.Client.DeleteAllOf(ctx, &appsv1.ControllerRevision{}, client.InNamespace(framework.OperatorNamespace),
		client.HasLabels{appsv1beta1.SidecarSetNameLabel})
	gomega.Expect(client.IgnoreNotFound(err)).To(gomega.Succeed())
}

// kubectl runs the kubectl built with the control plane against envtest.
func kubectl(ctx context.Context, stdin []byte, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Kubectl, append([]string{"--kubeconfig", env.KubeconfigPath}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// hasCJK reports whether a line has Chinese, Japanese or Korean characters.
func hasCJK(s string) bool {
	for _, r := range s {
		if (r >= 0x3000 && r <= 0x9fff) || (r >= 0xac00 && r <= 0xd7af) || (r >= 0xff00 && r <= 0xffef) {
			return true
		}
	}
	return false
}
