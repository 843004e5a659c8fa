package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// specLabel is the pod label every SidecarSet of a spec selects, with the
// spec's namespace as its value: SidecarSets of different specs never
// overlap, so they neither conflict nor inject each other's pods.
const specLabel = "test.sidecarset-operator.dev/spec"

// Webhook names, as the API server quotes them in denials.
const (
	podWebhook           = "mpod.sidecarset-operator.dev"
	podBestEffortWebhook = "mpod-best-effort.sidecarset-operator.dev"
	validationWebhook    = "vsidecarset.sidecarset-operator.dev"
)

// newNamespace creates a namespace for one spec and returns its name.
func newNamespace(ctx context.Context, labels map[string]string) string {
	w := builder.MakeNamespace("wh")
	for k, v := range labels {
		w.Label(k, v)
	}
	ns := w.Obj()
	gomega.Expect(k8s.Create(ctx, ns)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(gomega.Succeed())
	})
	return ns.Name
}

// sidecarSet starts a SidecarSet named "<ns>-<suffix>" selecting the
// spec's pods.
func sidecarSet(ns, suffix string) *builder.SidecarSetWrapper {
	return builder.MakeSidecarSet(ns+"-"+suffix, specLabel, ns)
}

// pod starts a pod of the spec: in its namespace, with its label.
func pod(ns string) *builder.PodWrapper {
	return builder.MakePod("pod", ns).Label(specLabel, ns)
}

// createSidecarSet creates a SidecarSet, deletes it when the spec ends, and
// returns it as stored with the admission warnings.
func createSidecarSet(ctx context.Context, s *appsv1beta1.SidecarSet) (*appsv1beta1.SidecarSet, []string) {
	wctx, warnings := framework.WithWarnings(ctx)
	gomega.Expect(k8s.Create(wctx, s)).To(gomega.Succeed())
	deleteSidecarSetAtEnd(s)
	return s, warnings.List()
}

// deleteSidecarSetAtEnd deletes a SidecarSet when the spec ends and waits
// until the operator's cache no longer has it, so that the next spec's
// SidecarSets are not validated against it.
func deleteSidecarSetAtEnd(s *appsv1beta1.SidecarSet) {
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, s))).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			err := env.ManagerCache.Get(ctx, client.ObjectKeyFromObject(s), &appsv1beta1.SidecarSet{})
			g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "the operator's cache still has SidecarSet %s: %v", s.Name, err)
		}).WithContext(ctx).Should(gomega.Succeed())
	})
}

// deleteAtEnd deletes an object when the spec ends.
func deleteAtEnd(obj client.Object) {
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(gomega.Succeed())
	})
}

// createInjected creates a pod once the webhook injects exactly the named
// SidecarSets (a dry run shows it: the webhook's registry has caught up),
// and returns the pod as stored with the admission warnings.
func createInjected(ctx context.Context, p *corev1.Pod, injected ...string) (*corev1.Pod, []string) {
	want := podstate.EncodeInjectedList(injected)
	return createOnceDryRun(ctx, p, func(g gomega.Gomega, dry *corev1.Pod) {
		g.Expect(dry.Annotations[appsv1beta1.SidecarSetListAnnotation]).To(gomega.Equal(want))
	})
}

// createOnceDryRun creates a pod once a dry run of its creation passes
// check, checks the created pod too, and returns it as stored with the
// admission warnings.
func createOnceDryRun(ctx context.Context, p *corev1.Pod, check func(gomega.Gomega, *corev1.Pod)) (*corev1.Pod, []string) {
	waitForDryRun(ctx, p, check)
	created, warnings, err := createPod(ctx, p)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	check(gomega.Default, created)
	return created, warnings
}

// waitForDryRun waits until a dry run of a pod's creation passes check:
// the webhooks have caught up with the latest changes.
func waitForDryRun(ctx context.Context, p *corev1.Pod, check func(gomega.Gomega, *corev1.Pod)) {
	gomega.EventuallyWithOffset(2, func(g gomega.Gomega) {
		dry := p.DeepCopy()
		g.Expect(k8s.Create(ctx, dry, client.DryRunAll)).To(gomega.Succeed())
		check(g, dry)
	}).WithContext(ctx).Should(gomega.Succeed())
}

// patchSidecarSet changes a SidecarSet with a merge patch (no conflict
// with the controller's status writes) and returns the admission warnings.
func patchSidecarSet(ctx context.Context, s *appsv1beta1.SidecarSet, mutate func(*appsv1beta1.SidecarSet)) ([]string, error) {
	gomega.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)).To(gomega.Succeed())
	base := s.DeepCopy()
	mutate(s)
	wctx, warnings := framework.WithWarnings(ctx)
	err := k8s.Patch(wctx, s, client.MergeFrom(base))
	return warnings.List(), err
}

// createPod creates a pod and returns it as stored with the admission
// warnings.
func createPod(ctx context.Context, p *corev1.Pod) (*corev1.Pod, []string, error) {
	created := p.DeepCopy()
	wctx, warnings := framework.WithWarnings(ctx)
	err := k8s.Create(wctx, created)
	return created, warnings.List(), err
}

// syncRegistry returns once the pod webhook has seen every SidecarSet
// change made before the call. SidecarSet events reach the webhook's
// registry in order, so once a sentinel SidecarSet created now is injected,
// every earlier change is in. Specs asserting that nothing is injected call
// it first, so that "not injected" cannot mean "not seen yet".
func syncRegistry(ctx context.Context, ns string) {
	sentinel := builder.MakeSidecarSet(ns+"-sentinel", "test.sidecarset-operator.dev/sentinel", ns).
		Namespace(ns).Containers(builder.MakeContainer("sentinel", "busybox:1.36")).Obj()
	gomega.Expect(k8s.Create(ctx, sentinel)).To(gomega.Succeed())
	probe := builder.MakePod("sentinel", ns).Label("test.sidecarset-operator.dev/sentinel", ns).Obj()
	gomega.Eventually(func(g gomega.Gomega) {
		dry := probe.DeepCopy()
		g.Expect(k8s.Create(ctx, dry, client.DryRunAll)).To(gomega.Succeed())
		g.Expect(containerNames(dry.Spec.Containers)).To(gomega.ContainElement("sentinel"))
	}).WithContext(ctx).Should(gomega.Succeed())
	gomega.Expect(k8s.Delete(ctx, sentinel)).To(gomega.Succeed())
}

// readState decodes a pod's SidecarSet annotations.
func readState(p *corev1.Pod) podstate.State {
	s, err := podstate.Read(p.Annotations)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return s
}

// containerNames lists container names in order.
func containerNames(cs []corev1.Container) []string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return names
}

// container returns the named container of a list, failing if absent.
func container(cs []corev1.Container, name string) corev1.Container {
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name })
	gomega.ExpectWithOffset(1, i).NotTo(gomega.Equal(-1), "no container %q in %v", name, containerNames(cs))
	return cs[i]
}

// envStrings renders an env list as NAME=value (or NAME<-fieldPath).
func envStrings(env []corev1.EnvVar) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			out = append(out, e.Name+"<-"+e.ValueFrom.FieldRef.FieldPath)
		default:
			out = append(out, e.Name+"="+e.Value)
		}
	}
	return out
}

// mountStrings renders volume mounts as name:path (with :subPathExpr).
func mountStrings(mounts []corev1.VolumeMount) []string {
	out := make([]string, 0, len(mounts))
	for _, m := range mounts {
		s := m.Name + ":" + m.MountPath
		if m.SubPathExpr != "" {
			s += ":" + m.SubPathExpr
		}
		out = append(out, s)
	}
	return out
}

// volumeNames lists volume names in order.
func volumeNames(vs []corev1.Volume) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

// causes formats the field causes of an API error as "field: message", in
// the order the API server returns them.
func causes(err error) []string {
	var status *apierrors.StatusError
	if !errors.As(err, &status) || status.ErrStatus.Details == nil {
		return []string{fmt.Sprintf("not a field error: %v", err)}
	}
	out := make([]string, 0, len(status.ErrStatus.Details.Causes))
	for _, c := range status.ErrStatus.Details.Causes {
		out = append(out, c.Field+": "+c.Message)
	}
	return out
}

// denial is the message the API server returns when a webhook denies a
// request with msg.
func denial(webhook, msg string) string {
	return fmt.Sprintf("admission webhook %q denied the request: %s", webhook, msg)
}

// keyOf is the key of a cluster-scoped object.
func keyOf(name string) types.NamespacedName {
	return types.NamespacedName{Name: name}
}

// joinSorted joins names sorted, as the injected-list does.
func joinSorted(names ...string) string {
	s := slices.Clone(names)
	slices.Sort(s)
	return strings.Join(s, ",")
}
