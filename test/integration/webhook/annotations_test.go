package webhook_test

import (
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

var _ = ginkgo.Describe("Pod injection annotations", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.It("should record each SidecarSet's hashes, sidecars and revision in OpenKruise's exact formats", func(ctx ginkgo.SpecContext) {
		b, _ := createSidecarSet(ctx, sidecarSet(ns, "b").Containers(
			builder.MakeContainer("b-sidecar", "busybox:1.36"), builder.MakeContainer("a-sidecar", "busybox:1.36"),
		).InitContainers(
			builder.MakeContainer("mesh", "envoy:v1").RestartAlways(), builder.MakeContainer("setup", "busybox:1.36"),
		).Obj())
		a, _ := createSidecarSet(ctx, sidecarSet(ns, "a").Containers(builder.MakeContainer("logger", "fluentbit:v1")).Obj())
		revA := recordedRevision(ctx, a, "").Name
		revB := recordedRevision(ctx, b, "").Name

		before := time.Now().Add(-time.Second).Truncate(time.Second)
		p, _ := createOnceDryRun(ctx, pod(ns).Annotation(appsv1beta1.SidecarSetListAnnotation, "zz-earlier").Obj(),
			func(g gomega.Gomega, dry *corev1.Pod) {
				state := readState(dry)
				g.Expect(state.Hashes[a.Name].ControllerRevision).To(gomega.Equal(revA))
				g.Expect(state.Hashes[b.Name].ControllerRevision).To(gomega.Equal(revB))
			})
		after := time.Now().Add(time.Second)

		state := readState(p)
		ts := state.Hashes[a.Name].UpdateTimestamp
		gomega.Expect(ts.Time).To(gomega.BeTemporally(">=", before))
		gomega.Expect(ts.Time).To(gomega.BeTemporally("<=", after))
		stamp := ts.UTC().Format(time.RFC3339)
		hash := func(s *appsv1beta1.SidecarSet) string { return s.Annotations[appsv1beta1.SidecarSetHashAnnotation] }
		withoutImage := func(s *appsv1beta1.SidecarSet) string {
			return s.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation]
		}
		gomega.Expect(hash(a)).To(gomega.HaveLen(64))
		gomega.Expect(withoutImage(a)).To(gomega.HaveLen(64))

		gomega.Expect(p.Annotations[appsv1beta1.SidecarSetHashAnnotation]).To(gomega.Equal(fmt.Sprintf(
			`{%q:{"updateTimestamp":%q,"hash":%q,"sidecarSetName":%q,"sidecarList":["logger"],"controllerRevision":%q},`+
				`%q:{"updateTimestamp":%q,"hash":%q,"sidecarSetName":%q,"sidecarList":["a-sidecar","b-sidecar","mesh"],"controllerRevision":%q}}`,
			a.Name, stamp, hash(a), a.Name, revA, b.Name, stamp, hash(b), b.Name, revB)))
		gomega.Expect(p.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation]).To(gomega.Equal(fmt.Sprintf(
			`{%q:{"updateTimestamp":%q,"hash":%q,"sidecarSetName":%q,"sidecarList":["logger"]},`+
				`%q:{"updateTimestamp":%q,"hash":%q,"sidecarSetName":%q,"sidecarList":["a-sidecar","b-sidecar","mesh"]}}`,
			a.Name, stamp, withoutImage(a), a.Name, b.Name, stamp, withoutImage(b), b.Name)))
		gomega.Expect(p.Annotations[appsv1beta1.SidecarSetListAnnotation]).To(gomega.Equal(joinSorted(a.Name, b.Name, "zz-earlier")))
		gomega.Expect(p.Annotations).NotTo(gomega.HaveKey(appsv1beta1.WorkingHotUpgradeContainerAnnotation))
	})
})
