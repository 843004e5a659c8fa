package authoring_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/authoringpolicy"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// judge is who evaluates the policy: the API server, or the operator's
// webhook where the policy's binding is missing. denial is the whole error
// message a denial of the SidecarSet name with the policy's message gives.
type judge struct {
	name    string
	install func(ctx context.Context)
	denial  func(name, message string) string
}

// The API server's wording of a policy's denial, and the webhook's wording
// of the same denial (the API server prefixes a webhook's message).
var judges = []judge{{
	name: "the API server's ValidatingAdmissionPolicy",
	install: func(ctx context.Context) {
		kubectl(ctx, "apply", "-k", filepath.Join(repoRoot(), "policy", "authoring"))
	},
	denial: func(name, message string) string {
		return fmt.Sprintf(`sidecarsets.apps.kruise.io %q is forbidden: ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s`,
			name, authoring.Name, authoring.Name, message)
	},
}, {
	name: "the operator's webhook, where the policy's binding is missing",
	install: func(ctx context.Context) {
		kubectl(ctx, "delete", "validatingadmissionpolicybinding", authoring.Name)
	},
	denial: func(name, message string) string {
		return fmt.Sprintf(`admission webhook "vsidecarset.sidecarset-operator.dev" denied the request: sidecarsets.apps.kruise.io %q is forbidden: `+
			`ValidatingAdmissionPolicy '%s' (evaluated by the operator's webhook: the policy or its binding is not installed) denied request: %s`,
			name, authoring.Name, message)
	},
}}

// namespaceRefusal is the whole error message of a refusal for the rights
// in each namespace a SidecarSet reaches: the operator's webhook checks
// those whoever evaluates the policy (the API server's CEL cost limits allow
// a policy about 28 authorization checks per request).
func namespaceRefusal(name, message string) string {
	return fmt.Sprintf(`admission webhook "vsidecarset.sidecarset-operator.dev" denied the request: sidecarsets.apps.kruise.io %q is forbidden: %s`,
		name, message)
}

// wording is the whole error message of a denial by j, or by the webhook
// for the rights in each namespace.
func (j judge) wording(name, message string) string {
	if strings.Contains(message, "requires permission to create pods in") {
		return namespaceRefusal(name, message)
	}
	return j.denial(name, message)
}

// Messages of the policy, for user and SidecarSet.
func lacks(permission, name, user string) string {
	return fmt.Sprintf(`requires permission to %s sidecarsets.apps.kruise.io %q, which user %q does not have`, permission, name, user)
}

// confine is the policy's advice to an author who may not inject into
// many namespaces.
const confine = "confine it to namespaces where you may create pods instead (v1alpha1 spec.namespace, or a namespaceSelector on kubernetes.io/metadata.name)"

func everyNamespace(name, user string) string {
	return "spec.namespaceSelector: creating a SidecarSet that injects into every namespace " + lacks(authoring.VerbInjectAllNamespaces, name, user) +
		"; " + confine
}

func privileged(field, name, user string) string {
	return field + ": injecting privileged settings " + lacks(authoring.VerbInjectPrivileged, name, user)
}

func secrets(field, name, user string) string {
	return field + ": injecting Secrets, or the pod's own environment and volumes, " + lacks(authoring.VerbInjectSecrets, name, user)
}

func podsIn(namespace, user string) string {
	return fmt.Sprintf(`spec.namespaceSelector: creating a SidecarSet that injects into the pods of namespace %q (v1alpha1 spec.namespace) requires permission to create pods in namespace %q, which user %q does not have`,
		namespace, namespace, user)
}

// plain is a SidecarSet with one unprivileged sidecar.
func plain(name string) *builder.SidecarSetWrapper {
	return builder.MakeSidecarSet(name, "app", "web").Containers(builder.MakeContainer("agent", "agent:1"))
}

// installed installs the judge and waits until it judges: the probe is
// denied with its message.
func (j judge) installed(ctx context.Context) {
	j.install(ctx)
	gomega.Eventually(func(g gomega.Gomega) {
		err := probe(ctx)
		g.Expect(err).To(gomega.HaveOccurred())
		g.Expect(err.Error()).To(gomega.Equal(j.denial("probe", everyNamespace("probe", alice))))
	}).WithContext(ctx).Should(gomega.Succeed())
}

// probe is a request denied whoever judges it, to learn who judges.
func probe(ctx context.Context) error {
	return clients[alice].Create(ctx, plain("probe").Obj(), client.DryRunAll)
}

var _ = ginkgo.Describe("The SidecarSet authoring policy", ginkgo.Ordered, func() {
	for _, j := range judges {
		ginkgo.Context("judged by "+j.name, ginkgo.Ordered, func() {
			ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
				j.installed(ctx)
			})

			ginkgo.DescribeTable("should allow a create, or deny it naming the field and the missing permission",
				func(ctx ginkgo.SpecContext, user string, set *builder.SidecarSetWrapper, want func(name, user string) string) {
					obj := set.Obj()
					err := clients[user].Create(ctx, obj, client.DryRunAll)
					if want == nil {
						gomega.Expect(err).NotTo(gomega.HaveOccurred())
						return
					}
					gomega.Expect(err).To(gomega.HaveOccurred())
					gomega.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "%v", err)
					gomega.Expect(err.Error()).To(gomega.Equal(j.wording(obj.Name, want(obj.Name, user))))
				},
				ginkgo.Entry("one namespace, to who may create pods there", alice, plain("team-a-agent").Namespace(teamA), nil),
				ginkgo.Entry("one namespace, not to who may not create pods there", alice, plain("team-b-agent").Namespace(teamB),
					func(_, user string) string { return podsIn(teamB, user) }),
				ginkgo.Entry("every namespace, not to who lacks inject-all-namespaces", alice, plain("all-agent"), everyNamespace),
				ginkgo.Entry("every namespace, not to who may create pods everywhere", erin, plain("all-agent"), everyNamespace),
				ginkgo.Entry("one namespace, to who may create pods everywhere", erin, plain("team-b-agent").Namespace(teamB), nil),
				ginkgo.Entry("namespaces a namespaceSelector picks, not without inject-all-namespaces", alice,
					plain("selected-agent").NamespaceSelector(map[string]string{"team": "a"}),
					func(name, user string) string {
						return "spec.namespaceSelector: creating a SidecarSet that injects into the namespaces a namespaceSelector picks " + lacks(authoring.VerbInjectAllNamespaces, name, user) +
							"; " + confine
					}),
				ginkgo.Entry("every namespace, to who holds inject-all-namespaces", carol, plain("all-agent"), nil),
				ginkgo.Entry("a privileged sidecar, not without inject-privileged", carol,
					plain("node-agent").Containers(builder.MakeContainer("agent", "agent:1"), builder.MakeContainer("node", "node:1").Privileged()),
					func(name, user string) string {
						return privileged("spec.containers[1].securityContext.privileged", name, user)
					}),
				ginkgo.Entry("a host port, not without inject-privileged, even in a namespace of one's own", alice,
					builder.MakeSidecarSet("port-agent", "app", "web").Namespace(teamA).Containers(builder.MakeContainer("agent", "agent:1").HostPort(9100)),
					func(name, user string) string { return privileged("spec.containers[0].ports[0].hostPort", name, user) }),
				ginkgo.Entry("a hostPath volume, not without inject-privileged", carol,
					plain("root-agent").Volumes(builder.HostPath("root", "/")),
					func(name, user string) string { return privileged("spec.volumes[0].hostPath", name, user) }),
				ginkgo.Entry("an env secretKeyRef, not without inject-secrets", carol,
					builder.MakeSidecarSet("token-agent", "app", "web").Containers(builder.MakeContainer("agent", "agent:1").Env("LEVEL", "info").SecretEnv("TOKEN", "api", "token")),
					func(name, user string) string {
						return secrets("spec.containers[0].env[1].valueFrom.secretKeyRef", name, user)
					}),
				ginkgo.Entry("a transferEnv, not without inject-secrets", carol,
					builder.MakeSidecarSet("copy-agent", "app", "web").Containers(builder.MakeContainer("agent", "agent:1").TransferEnvFrom("app", "DB_PASSWORD")),
					func(name, user string) string { return secrets("spec.containers[0].transferEnv", name, user) }),
				ginkgo.Entry("a secret volume, not without inject-secrets", carol,
					plain("tls-agent").Volumes(builder.SecretVolume("tls", "tls")),
					func(name, user string) string { return secrets("spec.volumes[0].secret", name, user) }),
				ginkgo.Entry("a pinned revision, whose content the policy cannot see, not without inject-privileged and inject-secrets", carol,
					plain("pinned-agent").InjectRevision(appsv1beta1.SidecarSetInjectRevision{CustomVersion: new("v1")}),
					func(name, user string) string {
						return "spec.injectionStrategy.revision: injecting a recorded revision, whose content this policy cannot check, requires permission to " +
							"inject-privileged and inject-secrets sidecarsets.apps.kruise.io " + fmt.Sprintf("%q, which user %q does not have", name, user)
					}),
				ginkgo.Entry("privileged settings and Secrets, to who holds every inject verb", dave,
					builder.MakeSidecarSet("full-agent", "app", "web").
						Containers(builder.MakeContainer("agent", "agent:1").Privileged().SecretEnv("TOKEN", "api", "token").Mount("root", "/host")).
						Volumes(builder.HostPath("root", "/"), builder.SecretVolume("tls", "tls")), nil),
			)

			ginkgo.It("should refuse any SidecarSet to who may create pods everywhere but holds no SidecarSet role", func(ctx ginkgo.SpecContext) {
				err := clients[ciBot].Create(ctx, plain("ci-agent").Namespace(teamA).Obj(), client.DryRunAll)
				gomega.Expect(err).To(gomega.HaveOccurred())
				gomega.Expect(err.Error()).To(gomega.Equal(`sidecarsets.apps.kruise.io is forbidden: User "ci-bot" cannot create resource "sidecarsets" in API group "apps.kruise.io" at the cluster scope`))
			})

			ginkgo.It("should judge only changes to what is injected, and never the operator's status writes", func(ctx ginkgo.SpecContext) {
				set := builder.MakeSidecarSet("privileged-agent", "app", "web").
					Containers(builder.MakeContainer("agent", "agent:1").Privileged()).Obj()
				gomega.Expect(env.Client.Create(ctx, set)).To(gomega.Succeed(), "an administrator may")
				ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
					gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, set))).To(gomega.Succeed())
				})

				// Pausing the rollout leaves the sidecars alone.
				update(ctx, carol, set.Name, func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true }, "")
				// A new image of the privileged sidecar is a change of what is
				// injected.
				update(ctx, carol, set.Name, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "agent:2" },
					j.denial(set.Name, privileged("spec.containers[0].securityContext.privileged", set.Name, carol)))
				update(ctx, dave, set.Name, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "agent:2" }, "")

				// The operator writes the status subresource, which the policy
				// does not match.
				patch := []byte(`{"status":{"observedGeneration":1234}}`)
				gomega.Expect(clients[operator].Status().Patch(ctx, set, client.RawPatch(types.MergePatchType, patch))).To(gomega.Succeed())
				got := &appsv1beta1.SidecarSet{}
				gomega.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), got)).To(gomega.Succeed())
				gomega.Expect(got.Status.ObservedGeneration).To(gomega.Equal(int64(1234)))
			})

			ginkgo.It("should judge kubectl --as like any client", func(ctx ginkgo.SpecContext) {
				const file = "testdata/log-agent.yaml"
				_, stderr, err := runKubectl(ctx, "apply", "--dry-run=server", "-f", file, "--as="+carol)
				gomega.Expect(err).To(gomega.HaveOccurred())
				gomega.Expect(stderr).To(gomega.Equal(`Error from server (Forbidden): error when creating "testdata/log-agent.yaml": ` +
					j.denial("log-agent", privileged("spec.volumes[0].hostPath", "log-agent", carol))))
				_, stderr, err = runKubectl(ctx, "apply", "--dry-run=server", "-f", file, "--as="+dave)
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
				_, stderr, err = runKubectl(ctx, "apply", "--dry-run=server", "-f", file)
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a cluster administrator holds every verb: %s", stderr)

				// v1alpha1's spec.namespace is judged as the namespace it is.
				const namespaced = "testdata/team-agent.yaml"
				_, stderr, err = runKubectl(ctx, "apply", "--dry-run=server", "-f", namespaced, "--as="+alice)
				gomega.Expect(err).To(gomega.HaveOccurred())
				gomega.Expect(stderr).To(gomega.Equal(`Error from server (Forbidden): error when creating "testdata/team-agent.yaml": ` +
					j.wording("team-agent", podsIn(teamB, alice))))
				_, stderr, err = runKubectl(ctx, "apply", "--dry-run=server", "-f", namespaced, "--as="+erin)
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "erin may create pods everywhere: %s", stderr)
			})
		})
	}

	// Issue 22: the operator records on the SidecarSet the verbs its author
	// held (the injector and the upgrader bound the sidecars by them), and
	// only the operator writes that record.
	ginkgo.Context("the authority record", ginkgo.Ordered, func() {
		// own is a SidecarSet that conflicts with no other: its own pods and
		// sidecar name.
		own := func(name string) *builder.SidecarSetWrapper {
			return builder.MakeSidecarSet(name, "app", name).Containers(builder.MakeContainer(name, "agent:1"))
		}
		get := func(ctx context.Context, name string) *appsv1beta1.SidecarSet {
			s := &appsv1beta1.SidecarSet{}
			gomega.ExpectWithOffset(1, env.Client.Get(ctx, client.ObjectKey{Name: name}, s)).To(gomega.Succeed())
			return s
		}
		record := func(ctx context.Context, name string) string {
			return get(ctx, name).Annotations[authority.Annotation]
		}
		refusal := func(name, detail string) string {
			return fmt.Sprintf(`admission webhook "msidecarset.sidecarset-operator.dev" denied the request: sidecarsets.apps.kruise.io %q is forbidden: `+
				`metadata.annotations[%s]: %s; only the operator writes it, from the permissions of whoever changes what the SidecarSet injects`,
				name, authority.Annotation, detail)
		}

		ginkgo.It("should record the verbs of whoever creates a SidecarSet or changes what it injects, and keep them on other changes", func(ctx ginkgo.SpecContext) {
			for user, want := range map[string]string{
				carol: "inject-all-namespaces",
				dave:  "inject-privileged,inject-secrets,inject-all-namespaces",
			} {
				s := own("recorded-" + user).Obj()
				gomega.Expect(clients[user].Create(ctx, s)).To(gomega.Succeed())
				ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
					gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(gomega.Succeed())
				})
				gomega.Expect(record(ctx, s.Name)).To(gomega.Equal(want), "created by %s", user)
			}
			alices := own("recorded-alice").Namespace(teamA).Obj()
			gomega.Expect(clients[alice].Create(ctx, alices)).To(gomega.Succeed())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, alices))).To(gomega.Succeed())
			})
			gomega.Expect(record(ctx, alices.Name)).To(gomega.BeEmpty(), "alice holds no inject verb")
			gomega.Expect(get(ctx, alices.Name).Annotations).To(gomega.HaveKey(authority.Annotation))

			// carol pauses dave's SidecarSet: the record stays dave's.
			name := "recorded-" + dave
			write := func(user string, change func(*appsv1beta1.SidecarSet)) error {
				var err error
				gomega.Eventually(func(g gomega.Gomega) {
					s := get(ctx, name)
					change(s)
					err = clients[user].Update(ctx, s)
					g.Expect(apierrors.IsConflict(err)).To(gomega.BeFalse(), "retry after a conflict: %v", err)
				}).WithContext(ctx).Should(gomega.Succeed())
				return err
			}
			gomega.Expect(write(carol, func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true })).To(gomega.Succeed())
			gomega.Expect(record(ctx, name)).To(gomega.Equal("inject-privileged,inject-secrets,inject-all-namespaces"))
			// carol changes what it injects: the record is now carol's.
			gomega.Expect(write(carol, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "agent:2" })).To(gomega.Succeed())
			gomega.Expect(record(ctx, name)).To(gomega.Equal("inject-all-namespaces"))
			// An administrator changes it back: the record follows.
			gomega.Expect(write(dave, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "agent:3" })).To(gomega.Succeed())
			gomega.Expect(record(ctx, name)).To(gomega.Equal("inject-privileged,inject-secrets,inject-all-namespaces"))
		})

		// Issue 22: a canary replaces its base's sidecars in the pods it
		// selects; it needs the authority over its base, whether it is
		// created as a canary or made one later.
		ginkgo.It("should refuse a canary of a SidecarSet its author has no authority over, created or made one by an update", func(ctx ginkgo.SpecContext) {
			base := own("platform-base").Obj()
			gomega.Expect(env.Client.Create(ctx, base)).To(gomega.Succeed())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, base))).To(gomega.Succeed())
			})
			canaryOf := func(s *appsv1beta1.SidecarSet) *appsv1beta1.SidecarSet {
				if s.Annotations == nil {
					s.Annotations = map[string]string{}
				}
				s.Annotations[appsv1beta1.SidecarSetCanaryAnnotation] = "true"
				s.Annotations[appsv1beta1.SidecarSetBaseAnnotation] = base.Name
				s.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
				return s
			}
			refused := func(name string) string {
				return fmt.Sprintf(`admission webhook "vsidecarset.sidecarset-operator.dev" denied the request: sidecarsets.apps.kruise.io %q is forbidden: `+
					`metadata.annotations[%s]: a canary of SidecarSet %q replaces its sidecars in the pods it selects, which needs the authority over %q: `+
					`permission to inject-all-namespaces sidecarsets.apps.kruise.io %q, which user %q does not have`,
					name, appsv1beta1.SidecarSetBaseAnnotation, base.Name, base.Name, base.Name, alice)
			}
			// The webhook has the base in its cache.
			gomega.Eventually(func(g gomega.Gomega) {
				err := clients[alice].Create(ctx, canaryOf(own("canary-new").Namespace(teamA).Obj()), client.DryRunAll)
				g.Expect(err).To(gomega.HaveOccurred())
				g.Expect(err.Error()).To(gomega.Equal(refused("canary-new")))
			}).WithContext(ctx).Should(gomega.Succeed())

			later := own("canary-later").Namespace(teamA).Obj()
			gomega.Expect(clients[alice].Create(ctx, later)).To(gomega.Succeed())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, later))).To(gomega.Succeed())
			})
			gomega.Eventually(func(g gomega.Gomega) {
				latest := &appsv1beta1.SidecarSet{}
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(later), latest)).To(gomega.Succeed())
				err := clients[alice].Update(ctx, canaryOf(latest), client.DryRunAll)
				g.Expect(apierrors.IsConflict(err)).To(gomega.BeFalse(), "retry after a conflict: %v", err)
				g.Expect(err).To(gomega.HaveOccurred())
				g.Expect(err.Error()).To(gomega.Equal(refused(later.Name)))
			}).WithContext(ctx).Should(gomega.Succeed())

			// carol holds inject-all-namespaces: her canary is accepted.
			gomega.Expect(clients[carol].Create(ctx, canaryOf(own("canary-carol").Obj()), client.DryRunAll)).To(gomega.Succeed())
		})

		ginkgo.It("should refuse a record written by a user, on create and on update", func(ctx ginkgo.SpecContext) {
			forged := own("forged").Obj()
			forged.Annotations = map[string]string{authority.Annotation: "inject-privileged,inject-secrets,inject-all-namespaces"}
			err := clients[carol].Create(ctx, forged, client.DryRunAll)
			gomega.Expect(err).To(gomega.HaveOccurred())
			gomega.Expect(err.Error()).To(gomega.Equal(refusal("forged", `a new SidecarSet may not carry it (the operator records "inject-all-namespaces", the verbs you hold); remove it`)))

			s := own("recorded-update").Obj()
			gomega.Expect(clients[carol].Create(ctx, s)).To(gomega.Succeed())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(gomega.Succeed())
			})
			for _, who := range []string{carol, dave} {
				gomega.Eventually(func(g gomega.Gomega) {
					latest := get(ctx, s.Name)
					latest.Annotations[authority.Annotation] = "inject-privileged,inject-secrets,inject-all-namespaces"
					err := clients[who].Update(ctx, latest, client.DryRunAll)
					g.Expect(apierrors.IsConflict(err)).To(gomega.BeFalse(), "retry after a conflict: %v", err)
					g.Expect(err).To(gomega.HaveOccurred())
					g.Expect(err.Error()).To(gomega.Equal(refusal(s.Name, "the request changes it; remove it from the object you write")))
				}).WithContext(ctx).Should(gomega.Succeed())
			}
			gomega.Expect(record(ctx, s.Name)).To(gomega.Equal("inject-all-namespaces"))
		})
	})

	ginkgo.Context("tuned by an administrator", ginkgo.Ordered, func() {
		ginkgo.It("should have the manager (OLM) update its own installation and keep the administrator's changes", func(ctx ginkgo.SpecContext) {
			installer := &authoringpolicy.Installer{Client: env.Client}
			// The policy as an older version of the manager installed it: the
			// manager brings it to this version's content.
			policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			gomega.Expect(env.Client.Get(ctx, client.ObjectKey{Name: authoring.Name}, policy)).To(gomega.Succeed())
			gomega.Expect(env.Client.Delete(ctx, policy)).To(gomega.Succeed())
			gomega.Expect(installer.Start(ctx)).To(gomega.Succeed())
			gomega.Expect(env.Client.Get(ctx, client.ObjectKey{Name: authoring.Name}, policy)).To(gomega.Succeed())
			policy.Spec.Validations = policy.Spec.Validations[:1]
			gomega.Expect(env.Client.Update(ctx, policy, client.FieldOwner(names.FieldOwner))).To(gomega.Succeed())
			gomega.Expect(installer.Start(ctx)).To(gomega.Succeed())
			gomega.Expect(env.Client.Get(ctx, client.ObjectKey{Name: authoring.Name}, policy)).To(gomega.Succeed())
			shipped, _, err := authoring.Manifests()
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(policy.Spec.Validations).To(gomega.Equal(shipped.Spec.Validations))

			binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			gomega.Expect(env.Client.Get(ctx, client.ObjectKey{Name: authoring.Name}, binding)).To(gomega.Succeed())
			gomega.Expect(binding.Spec.ValidationActions).To(gomega.Equal([]admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}),
				"the manager created the missing binding")

			// The administrator only warns for now.
			binding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
			gomega.Expect(env.Client.Update(ctx, binding, client.FieldOwner("platform-admin"))).To(gomega.Succeed())
			gomega.Expect(installer.Start(ctx)).To(gomega.Succeed())
			gomega.Expect(env.Client.Get(ctx, client.ObjectKey{Name: authoring.Name}, binding)).To(gomega.Succeed())
			gomega.Expect(binding.Spec.ValidationActions).To(gomega.Equal([]admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}),
				"the manager keeps the administrator's change")

			// The API server warns and the webhook defers to it.
			gomega.Eventually(func(g gomega.Gomega) {
				wctx, warnings := framework.WithWarnings(ctx)
				g.Expect(probe(wctx)).To(gomega.Succeed())
				g.Expect(warnings.List()).To(gomega.ContainElement(fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s",
					authoring.Name, authoring.Name, everyNamespace("probe", alice))))
			}).WithContext(ctx).Should(gomega.Succeed())
		})
	})
})

// update changes a SidecarSet as a user and expects the error message want
// (empty: success). Conflicts with the controller's writes are retried.
func update(ctx context.Context, user, name string, change func(*appsv1beta1.SidecarSet), want string) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(func(g gomega.Gomega) {
		s := &appsv1beta1.SidecarSet{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, s)).To(gomega.Succeed())
		change(s)
		err := clients[user].Update(ctx, s, client.DryRunAll)
		g.Expect(apierrors.IsConflict(err)).To(gomega.BeFalse(), "retry after a conflict: %v", err)
		if want == "" {
			g.Expect(err).NotTo(gomega.HaveOccurred())
			return
		}
		g.Expect(err).To(gomega.HaveOccurred())
		g.Expect(err.Error()).To(gomega.Equal(want))
	}).WithContext(ctx).Should(gomega.Succeed())
}

func repoRoot() string {
	root, err := framework.RepoRoot()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return root
}

func runKubectl(ctx context.Context, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, env.Kubectl, append([]string{"--kubeconfig=" + env.KubeconfigPath}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), strings.TrimSpace(stderr.String()), err
}

func kubectl(ctx context.Context, args ...string) {
	ginkgo.GinkgoHelper()
	_, stderr, err := runKubectl(ctx, args...)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
}
