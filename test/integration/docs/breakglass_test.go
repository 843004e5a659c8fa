package docs_test

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/generate"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// section returns the lines of a page from the heading that starts with
// title to the next heading of the same level.
func section(p page, title string) []string {
	var out []string
	level := ""
	for _, line := range p.lines {
		if level != "" && strings.HasPrefix(line, level+" ") {
			break
		}
		if level == "" && strings.HasPrefix(line, "#") && strings.Contains(line, "# "+title) {
			level, _, _ = strings.Cut(line, " ")
		}
		if level != "" {
			out = append(out, line)
		}
	}
	return out
}

// commandArgs splits a console line ("$ kubectl ...") into kubectl's
// arguments: words, and single-quoted strings as one argument.
func commandArgs(line string) []string {
	line = strings.TrimPrefix(strings.TrimPrefix(line, "$ "), "kubectl ")
	var args []string
	var cur strings.Builder
	quoted, started := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, started = !quoted, true
		case r == ' ' && !quoted:
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		args = append(args, cur.String())
	}
	return args
}

// podWebhook returns the named webhook of the pod webhooks' configuration.
func podWebhook(g gomega.Gomega, ctx ginkgo.SpecContext, name string) admissionregistrationv1.MutatingWebhook {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: names.MutatingConfigName}, cfg)).To(gomega.Succeed())
	for _, w := range cfg.Webhooks {
		if w.Name == name {
			return w
		}
	}
	g.Expect(name).To(gomega.BeEmpty(), "no webhook %s in %s", name, cfg.Name)
	return admissionregistrationv1.MutatingWebhook{}
}

var _ = ginkgo.Describe("The break-glass runbook of troubleshooting.md", func() {
	ginkgo.It("should let the fail-closed pod webhook fail open by name, kept by the manager, and restore it", func(ctx ginkgo.SpecContext) {
		p, err := readPage("troubleshooting.md")
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		var open, restore []string
		for _, line := range section(p, "The webhook is down: break-glass") {
			if !strings.HasPrefix(line, "$ kubectl patch mutatingwebhookconfiguration") {
				continue
			}
			switch {
			case strings.Contains(line, `"failurePolicy":"Ignore"`):
				open = commandArgs(line)
			case strings.Contains(line, `"failurePolicy":"Fail"`):
				restore = commandArgs(line)
			}
		}
		gomega.Expect(open).NotTo(gomega.BeEmpty(), "the runbook sets the pod webhook to Ignore")
		gomega.Expect(restore).NotTo(gomega.BeEmpty(), "the runbook restores it")
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			_, stderr, err := kubectl(ctx, nil, restore...)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
		})

		before := podWebhook(gomega.Default, ctx, names.PodWebhookName)
		gomega.Expect(before.FailurePolicy).To(gomega.HaveValue(gomega.Equal(admissionregistrationv1.Fail)))
		_, stderr, err := kubectl(ctx, nil, open...)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
		w := podWebhook(gomega.Default, ctx, names.PodWebhookName)
		gomega.Expect(w.FailurePolicy).To(gomega.HaveValue(gomega.Equal(admissionregistrationv1.Ignore)))
		gomega.Expect(podWebhook(gomega.Default, ctx, names.PodBestEffortWebhookName).FailurePolicy).
			To(gomega.HaveValue(gomega.Equal(admissionregistrationv1.Ignore)))

		// A SidecarSet makes the manager write the pod webhooks' scope: it
		// rewrites the condition and keeps the failure policy.
		const label = "docs-break-glass"
		set := &appsv1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: label},
			Spec: appsv1beta1.SidecarSetSpec{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}},
				Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: label, Image: "busybox:1.36"}}},
			},
		}
		gomega.Expect(env.Client.Create(ctx, set)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(env.Client.Delete(ctx, set)).To(gomega.Succeed())
			gomega.Expect(env.Client.DeleteAllOf(ctx, &appsv1.ControllerRevision{}, client.InNamespace(framework.OperatorNamespace),
				client.HasLabels{appsv1beta1.SidecarSetNameLabel})).To(gomega.Succeed())
		})
		gomega.Eventually(func(g gomega.Gomega) {
			w := podWebhook(g, ctx, names.PodWebhookName)
			g.Expect(w.MatchConditions).To(gomega.ContainElement(gomega.And(
				gomega.HaveField("Name", scope.ConditionName), gomega.HaveField("Expression", gomega.ContainSubstring(label)))))
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Consistently(func(g gomega.Gomega) {
			g.Expect(podWebhook(g, ctx, names.PodWebhookName).FailurePolicy).To(gomega.HaveValue(gomega.Equal(admissionregistrationv1.Ignore)))
		}).WithContext(ctx).WithTimeout(3 * pollInterval * 4).Should(gomega.Succeed())

		_, stderr, err = kubectl(ctx, nil, restore...)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
		gomega.Expect(podWebhook(gomega.Default, ctx, names.PodWebhookName).FailurePolicy).
			To(gomega.HaveValue(gomega.Equal(admissionregistrationv1.Fail)))
	})
})

var _ = ginkgo.Describe("The port overlay of troubleshooting.md", func() {
	ginkgo.It("should move the webhook server and its container port together", func() {
		p, err := readPage("troubleshooting.md")
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		sec := page{name: p.name, lines: section(p, "Port 9443 is blocked")}
		blocks, problems := yamlBlocks(sec)
		gomega.Expect(problems).To(gomega.BeEmpty())
		gomega.Expect(blocks).To(gomega.HaveLen(1))

		root, err := filepath.Abs(filepath.Join(docsDir, ".."))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		dir := ginkgo.GinkgoT().TempDir()
		rel, err := filepath.Rel(dir, filepath.Join(root, "config", "default"))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		overlay := strings.Replace(blocks[0].body, "../../config/default", filepath.ToSlash(rel), 1)
		gomega.Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600)).To(gomega.Succeed())
		objects, err := generate.Kustomize(filesys.MakeFsOnDisk(), dir)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		found := false
		for _, u := range objects {
			if u.GetKind() != "Deployment" {
				continue
			}
			d := &appsv1.Deployment{}
			gomega.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d)).To(gomega.Succeed())
			c := d.Spec.Template.Spec.Containers[0]
			gomega.Expect(c.Args[len(c.Args)-1]).To(gomega.Equal("--webhook-port=10250"), "the last --webhook-port wins")
			gomega.Expect(c.Ports).To(gomega.ContainElement(gomega.And(
				gomega.HaveField("Name", "webhook"), gomega.HaveField("ContainerPort", gomega.BeEquivalentTo(10250)))))
			found = true
		}
		gomega.Expect(found).To(gomega.BeTrue(), "the overlay builds the manager's Deployment")
	})
})
