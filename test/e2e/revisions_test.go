package e2e_test

import (
	"fmt"
	"strconv"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
)

// ControllerRevisions record each SidecarSet spec in the operator's
// namespace, found with the command the manual gives, and are cut to
// revisionHistoryLimit.
var _ = ginkgo.Describe("SidecarSet ControllerRevisions", ginkgo.Label("revisions"), func() {
	ginkgo.It("should list the revisions with kubectl by the sidecarset-name label and keep only revisionHistoryLimit of them", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "history")
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", "centos:6.7").RevisionHistoryLimit(2).Obj())
		runDeployment(ctx, app(ns, "web", 1).Obj(), s.Name)

		images := []string{"centos:6.7", "centos:6.8", "centos:6.9", "centos:7", "centos:8"}
		gen := int64(1)
		for i, image := range images {
			if i > 0 {
				gen = setImage(ctx, s.Name, "sidecar", image)
			}
			expectStatus(ctx, s.Name, gen, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})
			latest := getSidecarSet(ctx, gomega.Default, s.Name).Status.LatestRevision
			ginkgo.By(fmt.Sprintf("listing the revisions after %d spec(s)", i+1))
			gomega.Eventually(func(g gomega.Gomega) {
				out, err := env.Cluster.RunKubectl(ctx, "get", "controllerrevisions", "-n", framework.OperatorNamespace,
					"-l", "kruise.io/sidecarset-name="+s.Name)
				g.Expect(err).NotTo(gomega.HaveOccurred())
				rows := tableRows(string(out))
				g.Expect(rows).To(gomega.HaveLen(min(i+1, 2)), "revisions:\n%s", out)
				names, numbers := []string{}, []int{}
				for _, r := range rows {
					// NAME CONTROLLER REVISION AGE
					g.Expect(r).To(gomega.HaveLen(4))
					g.Expect(r[1]).To(gomega.Equal("sidecarset.apps.kruise.io/" + s.Name))
					n, err := strconv.Atoi(r[2])
					g.Expect(err).NotTo(gomega.HaveOccurred())
					names, numbers = append(names, r[0]), append(numbers, n)
				}
				g.Expect(names).To(gomega.ContainElement(latest))
				want := []int{i + 1}
				if i > 0 {
					want = []int{i, i + 1}
				}
				g.Expect(numbers).To(gomega.ConsistOf(want))
			}).WithContext(ctx).Should(gomega.Succeed())
		}
	})
})
