package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/security"
)

// The security suite (issue 22): authors who may write SidecarSets but
// lack one permission try, one attempt at a time, to give a sidecar more
// than they may (security.Attempts is the table). Each attempt is refused,
// or neutralized (the sidecar runs without the forbidden part, the pod
// records why, its creator gets a warning and the SidecarSet reports it);
// then an author holding the permission makes the same attempt, which is
// accepted and works.
//
// The actors are users impersonated by the suite: each is bound to the
// SidecarSet editor role and to the built-in edit role in the team
// namespace, and some to one or two of the inject-* roles, or to edit in the
// other namespace too (security.Actor).

const (
	attemptLabel = "security-e2e/attempt"
	phaseLabel   = "security-e2e/phase"
	teamLabel    = "security-e2e/team"
	// Pods of the unauthorized and the authorized actor's SidecarSets.
	phaseDenied     = "denied"
	phaseAuthorized = "authorized"
	// The images the suite moves sidecars between.
	imageNext  = "busybox:1.37"
	imageLater = "busybox:1.38"
)

var _ = ginkgo.Describe("Security", ginkgo.Label("security"), ginkgo.Ordered, ginkgo.ContinueOnFailure, func() {
	s := &securitySuite{}

	ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
		s.setUp(ctx)
	})

	for i := range security.Attempts {
		a := &security.Attempts[i]
		ginkgo.It(fmt.Sprintf("%s [%s]: %s, and accepted with %s", a.Name, a.Category, a.Outcome, a.Authorized), func(ctx ginkgo.SpecContext) {
			s.play(ctx, a)
		})
	}
})

// securitySuite holds the namespaces and the actors' clients.
type securitySuite struct {
	team, other string
	clients     map[string]client.Client
	// plugin is the kubectl plugin's binary, once built.
	plugin string
}

func (s *securitySuite) setUp(ctx context.Context) {
	s.team = createNamespaceWith(ctx, builder.MakeNamespace("sec-team").Label(teamLabel, "blue"))
	s.other = createNamespace(ctx, "sec-other")
	s.clients = map[string]client.Client{}
	actors := map[string]security.Actor{}
	for _, a := range security.Attempts {
		for _, actor := range []security.Actor{a.Unauthorized, a.Authorized} {
			if !actor.Admin {
				actors[actor.Name()] = actor
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(actors)) {
		actor := actors[name]
		s.bind(ctx, actor)
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: []string{"system:authenticated"}}
		c, err := client.New(cfg, client.Options{Scheme: framework.Scheme})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		s.clients[name] = c
	}
	for _, name := range slices.Sorted(maps.Keys(actors)) {
		s.expectGranted(ctx, actors[name])
	}
	for _, ns := range []string{s.team, s.other} {
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})).To(gomega.Succeed())
		}).WithContext(ctx).Should(gomega.Succeed(), "the default ServiceAccount of %s", ns)
	}
}

// bind grants an actor its roles, until the suite ends.
func (s *securitySuite) bind(ctx context.Context, actor security.Actor) {
	subject := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: actor.Name()}}
	roles := []string{"sidecarset-operator-sidecarset-editor"}
	for _, v := range actor.Verbs.Names() {
		roles = append(roles, "sidecarset-operator-"+v)
	}
	for _, role := range roles {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: actor.Name() + "-" + strings.TrimPrefix(role, "sidecarset-operator-")},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subject,
		}
		gomega.Expect(env.Client.Create(ctx, binding)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, binding))).To(gomega.Succeed())
		})
	}
	namespaces := []string{s.team}
	if actor.OtherNamespace {
		namespaces = append(namespaces, s.other)
	}
	for _, ns := range namespaces {
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: actor.Name() + "-edit", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   subject,
		}
		gomega.Expect(env.Client.Create(ctx, binding)).To(gomega.Succeed())
	}
}

// expectGranted waits until RBAC grants the actor what it was bound to,
// and no more of what the attempts test.
func (s *securitySuite) expectGranted(ctx context.Context, actor security.Actor) {
	type check struct {
		attrs   authorizationv1.ResourceAttributes
		allowed bool
	}
	checks := []check{
		{authorizationv1.ResourceAttributes{Verb: "create", Group: appsv1beta1.GroupVersion.Group, Resource: "sidecarsets"}, true},
		{authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: s.team}, true},
		{authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: s.other}, actor.OtherNamespace},
	}
	for _, v := range authority.All.Names() {
		verb, err := authority.Parse(v)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		checks = append(checks, check{authorizationv1.ResourceAttributes{Verb: v, Group: appsv1beta1.GroupVersion.Group, Resource: "sidecarsets"},
			actor.Verbs.Has(verb)})
	}
	for _, c := range checks {
		gomega.Eventually(func(g gomega.Gomega) {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: actor.Name(), Groups: []string{"system:authenticated"}, ResourceAttributes: &c.attrs,
			}}
			got, err := env.Clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(got.Status.Allowed).To(gomega.Equal(c.allowed))
		}).WithContext(ctx).Should(gomega.Succeed(), "%s may %s %s in %q: %v", actor.Name(), c.attrs.Verb, c.attrs.Resource, c.attrs.Namespace, c.allowed)
	}
}

// as is the actor's client.
func (s *securitySuite) as(actor security.Actor) client.Client {
	if actor.Admin {
		return env.Client
	}
	c, ok := s.clients[actor.Name()]
	gomega.ExpectWithOffset(1, ok).To(gomega.BeTrue(), "no client for %s", actor.Name())
	return c
}

// expand replaces $TEAM and $OTHER with the namespaces' names.
func (s *securitySuite) expand(text string) string {
	return strings.NewReplacer("$TEAM", s.team, "$OTHER", s.other).Replace(text)
}

// play plays one attempt: the unauthorized actor's, then the authorized
// one's. Every SidecarSet an attempt may leave is deleted when it ends.
func (s *securitySuite) play(ctx context.Context, a *security.Attempt) {
	for _, name := range []string{a.SidecarSet(), a.AuthorizedSidecarSet(), a.AdminSidecarSet()} {
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			set := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, set))).To(gomega.Succeed())
		})
	}
	switch a.Play {
	case security.PlayContent:
		s.playContent(ctx, a)
	case security.PlayDelete, security.PlayPauseInjection, security.PlayPauseUpdates, security.PlayFailurePolicy, security.PlayPullSecrets:
		s.playPlatform(ctx, a)
	case security.PlayCanary:
		s.playCanary(ctx, a)
	case security.PlayRetarget:
		s.playRetarget(ctx, a)
	case security.PlayPrivilegedContent:
		s.playPrivilegedContent(ctx, a)
	case security.PlayRecordOnCreate:
		s.playRecordOnCreate(ctx, a)
	case security.PlayRecordOnUpdate, security.PlayRecordRemove:
		s.playRecordOnUpdate(ctx, a)
	case security.PlayPinRevision:
		s.playPinRevision(ctx, a)
	case security.PlayPinForeignRevision:
		s.playPinForeignRevision(ctx, a)
	case security.PlayWhitelist:
		s.playWhitelist(ctx, a)
	case security.PlayShadowPodVolume:
		s.playShadow(ctx, a, false)
	case security.PlayShadowSidecarSetVolume:
		s.playShadow(ctx, a, true)
	case security.PlayToken:
		s.playToken(ctx, a)
	case security.PlayOfflineInject:
		s.playOfflineInject(ctx, a)
	case security.PlayInPlaceUpgrade:
		s.playInPlaceUpgrade(ctx, a)
	case security.PlayOperatorLabel:
		s.playOperatorLabel(ctx, a)
	default:
		ginkgo.Fail(fmt.Sprintf("attempt %s: no way to play %q", a.ID, a.Play))
	}
}

// expectRefused checks the unauthorized actor's write was refused with the
// attempt's message, naming the actor where the refusal names a user.
func (s *securitySuite) expectRefused(a *security.Attempt, err error) {
	gomega.ExpectWithOffset(1, err).To(gomega.HaveOccurred(), "%s: %s was let through", a.ID, a.Unauthorized.Name())
	ginkgo.GinkgoWriter.Printf("%s, as %s: %v\n", a.ID, a.Unauthorized.Name(), err)
	gomega.ExpectWithOffset(1, err.Error()).To(gomega.ContainSubstring(s.expand(a.Message)))
	if strings.Contains(err.Error(), "which user") {
		gomega.ExpectWithOffset(1, err.Error()).To(gomega.ContainSubstring(fmt.Sprintf("which user %q does not have", a.Unauthorized.Name())))
	}
	gomega.ExpectWithOffset(1, apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(gomega.BeTrue(), "refused as forbidden or invalid: %v", err)
}

// attemptSet is a SidecarSet of the attempt confined to the team
// namespace, selecting the attempt's pods of the phase, with its sidecar
// and the phase's volume.
func (s *securitySuite) attemptSet(a *security.Attempt, name, container, phase string) *appsv1beta1.SidecarSet {
	sidecar, err := a.SidecarContainer(container)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	volumes, err := a.Volumes()
	if phase == phaseAuthorized {
		volumes, err = a.AuthorizedVolumes()
	}
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{attemptLabel: a.ID, phaseLabel: phase}},
			NamespaceSelector: appsv1beta1.SelectNamespace(s.team),
			Containers:        []appsv1beta1.SidecarContainer{sidecar},
			Volumes:           volumes,
		},
	}
}

// adminSet is the administrator's SidecarSet next to the attempt,
// selecting every pod of the attempt, with one plain sidecar.
func (s *securitySuite) adminSet(a *security.Attempt) *appsv1beta1.SidecarSet {
	return &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: a.AdminSidecarSet()},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{attemptLabel: a.ID}},
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{
				Name: a.ID + "-admin", Image: security.Image, Command: []string{"sleep", "999d"},
			}}},
		},
	}
}

// createAdmin creates an administrator's SidecarSet and waits until the
// controller has seen it.
func createAdmin(ctx context.Context, set *appsv1beta1.SidecarSet) {
	gomega.ExpectWithOffset(1, env.Client.Create(ctx, set)).To(gomega.Succeed())
	expectObserved(ctx, set.Name)
}

// pod is a pod of the attempt in a namespace, for the phase, with the
// attempt's pod fragment.
func (s *securitySuite) pod(a *security.Attempt, ns, phase string) *corev1.Pod {
	p := builder.MakePod("sec-"+a.ID, ns).Label(attemptLabel, a.ID).Label(phaseLabel, phase).Obj()
	merged, err := security.Merge(*p, a.Pod)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return &merged
}

// warnings collects the API server's warnings to one client.
type warnings struct {
	mu    sync.Mutex
	texts []string
}

func (w *warnings) HandleWarningHeader(_ int, _, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.texts)
}

// clientset is a clientset for the user (the administrator, or an actor)
// that collects the warnings it gets.
func clientset(user string) (kubernetes.Interface, *warnings) {
	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return cs, w
}

// injected reports whether the pod lists the SidecarSet as injected.
func injected(p *corev1.Pod, set string) bool {
	return slices.Contains(podstate.DecodeInjectedList(p.Annotations[appsv1beta1.SidecarSetListAnnotation]), set)
}

// createPodWhen creates the pod as the administrator once a server-side
// dry run of it passes the check (the webhook's registry has caught up),
// checks the created pod too, and returns it with the warnings its
// creation got.
func createPodWhen(ctx context.Context, pod *corev1.Pod, check func(g gomega.Gomega, p *corev1.Pod)) (*corev1.Pod, []string) {
	return createPodAs(ctx, "", pod, check)
}

// createPodAs is createPodWhen, the pod created by the user.
func createPodAs(ctx context.Context, user string, pod *corev1.Pod, check func(g gomega.Gomega, p *corev1.Pod)) (*corev1.Pod, []string) {
	expectDryRun(ctx, pod, check)
	cs, w := clientset(user)
	created, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod.DeepCopy(), metav1.CreateOptions{})
	gomega.ExpectWithOffset(2, err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, created))).To(gomega.Succeed())
	})
	check(gomega.NewWithT(ginkgo.GinkgoT()), created)
	return created, w.all()
}

// expectDryRun waits until a server-side dry run of the pod's creation, as
// the administrator, passes the check.
func expectDryRun(ctx context.Context, pod *corev1.Pod, check func(g gomega.Gomega, p *corev1.Pod)) {
	probe, _ := clientset("")
	gomega.EventuallyWithOffset(3, func(g gomega.Gomega) {
		dry, err := probe.CoreV1().Pods(pod.Namespace).Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		check(g, dry)
	}).WithContext(ctx).Should(gomega.Succeed())
}

// injectedWith checks that the SidecarSet is injected.
func injectedWith(set string) func(g gomega.Gomega, p *corev1.Pod) {
	return func(g gomega.Gomega, p *corev1.Pod) {
		g.Expect(injected(p, set)).To(gomega.BeTrue(), "pod injected with %s: %s", set, p.Annotations[appsv1beta1.SidecarSetListAnnotation])
	}
}

// expectContains checks that obj holds the YAML fragment.
func expectContains(obj any, fragment string) {
	ok, err := security.Contains(obj, fragment)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	gomega.ExpectWithOffset(1, ok).To(gomega.BeTrue(), "%+v does not contain %s", obj, fragment)
}

// updateAs changes a SidecarSet as the actor, retrying on conflicts, and
// returns the stored object or the refusal.
func (s *securitySuite) updateAs(ctx context.Context, actor security.Actor, name string, mutate func(*appsv1beta1.SidecarSet)) (*appsv1beta1.SidecarSet, error) {
	c := s.as(actor)
	set := &appsv1beta1.SidecarSet{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, set); err != nil {
			return err
		}
		mutate(set)
		return c.Update(ctx, set)
	})
	return set, err
}

// The attempts' plays.

// playContent: a SidecarSet whose sidecar or volume needs a verb, or whose
// reach needs one or pods elsewhere.
func (s *securitySuite) playContent(ctx context.Context, a *security.Attempt) {
	denied := s.reachSet(a, s.attemptSet(a, a.SidecarSet(), a.ID, phaseDenied))
	s.expectRefused(a, s.as(a.Unauthorized).Create(ctx, denied))

	allowed := s.reachSet(a, s.attemptSet(a, a.AuthorizedSidecarSet(), a.ID+"-ok", phaseAuthorized))
	gomega.Expect(s.as(a.Authorized).Create(ctx, allowed)).To(gomega.Succeed())
	namespaces := map[security.Where][]string{
		security.Team: {s.team}, security.Other: {s.other}, security.OtherV1alpha1: {s.other},
		security.TeamAndOther: {s.team, s.other}, security.Every: {s.team, s.other}, security.Labelled: {s.team},
	}[a.Where]
	for _, ns := range namespaces {
		p, _ := createPodWhen(ctx, s.pod(a, ns, phaseAuthorized), injectedWith(a.AuthorizedSidecarSet()))
		sidecar := specContainer(p, a.ID+"-ok")
		gomega.Expect(sidecar).NotTo(gomega.BeNil())
		if want := a.ExpectedInPod(); want != "" {
			expectContains(sidecar, want)
		}
		if a.Volume != "" {
			i := slices.IndexFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "data" })
			gomega.Expect(i).To(gomega.BeNumerically(">=", 0), "the pod has the volume")
			expectContains(p.Spec.Volumes[i], a.Volume)
			expectContains(sidecar, `{volumeMounts: [{name: data, mountPath: /data}]}`)
		}
	}
}

// reachSet gives a content SidecarSet the attempt's reach, as the object to
// write (a v1alpha1 one for spec.namespace).
func (s *securitySuite) reachSet(a *security.Attempt, set *appsv1beta1.SidecarSet) client.Object {
	switch a.Where {
	case security.Team:
	case security.Other:
		set.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(s.other)
	case security.TeamAndOther:
		set.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: appsv1beta1.NamespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{s.team, s.other}},
		}}
	case security.Every:
		set.Spec.NamespaceSelector = nil
	case security.Labelled:
		set.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{teamLabel: "blue"}}
	case security.OtherV1alpha1:
		set.Spec.NamespaceSelector = nil
		alpha := &appsv1alpha1.SidecarSet{}
		gomega.ExpectWithOffset(1, alpha.ConvertFrom(set)).To(gomega.Succeed())
		alpha.Spec.Namespace = s.other
		return alpha
	default:
		ginkgo.Fail(fmt.Sprintf("attempt %s: unknown reach %q", a.ID, a.Where))
	}
	return set
}

// playPlatform: deleting or changing the platform's SidecarSet, which
// reaches every namespace.
func (s *securitySuite) playPlatform(ctx context.Context, a *security.Attempt) {
	platform := s.adminSet(a)
	createAdmin(ctx, platform)
	podOf := func() *corev1.Pod { return s.pod(a, s.team, phaseAuthorized) }

	var change func(*appsv1beta1.SidecarSet)
	switch a.Play {
	case security.PlayDelete:
		s.expectRefused(a, s.as(a.Unauthorized).Delete(ctx, platform.DeepCopy()))
		gomega.Expect(s.as(a.Authorized).Delete(ctx, platform.DeepCopy())).To(gomega.Succeed())
		gomega.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Name: platform.Name}, &appsv1beta1.SidecarSet{}))
		}).WithContext(ctx).Should(gomega.BeTrue())
		return
	case security.PlayPauseInjection:
		change = func(set *appsv1beta1.SidecarSet) { set.Spec.InjectionStrategy.Paused = true }
	case security.PlayPauseUpdates:
		change = func(set *appsv1beta1.SidecarSet) { set.Spec.UpdateStrategy.Paused = true }
	case security.PlayFailurePolicy:
		change = func(set *appsv1beta1.SidecarSet) {
			metav1.SetMetaDataAnnotation(&set.ObjectMeta, appsv1beta1.FailurePolicyAnnotation, appsv1beta1.FailurePolicyIgnore)
		}
	case security.PlayPullSecrets:
		change = func(set *appsv1beta1.SidecarSet) {
			set.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "platform-registry"}}
		}
	}
	before := getSidecarSet(ctx, gomega.Default, platform.Name)
	_, err := s.updateAs(ctx, a.Unauthorized, platform.Name, change)
	s.expectRefused(a, err)
	gomega.Expect(getSidecarSet(ctx, gomega.Default, platform.Name).ResourceVersion).To(gomega.Equal(before.ResourceVersion), "the SidecarSet is unchanged")

	var running *corev1.Pod
	if a.Play == security.PlayPauseUpdates || a.Play == security.PlayPauseInjection {
		running, _ = createPodWhen(ctx, podOf(), injectedWith(platform.Name))
	}
	updated, err := s.updateAs(ctx, a.Authorized, platform.Name, change)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	switch a.Play {
	case security.PlayPauseInjection:
		createPodWhen(ctx, podOf(), func(g gomega.Gomega, p *corev1.Pod) {
			g.Expect(injected(p, platform.Name)).To(gomega.BeFalse(), "a new pod is not injected while injection is paused")
		})
	case security.PlayPauseUpdates:
		generation := setImage(ctx, platform.Name, a.ID+"-admin", imageNext)
		expectProgressing(ctx, platform.Name, generation, metav1.ConditionFalse, appsv1beta1.ReasonPaused)
		gomega.Consistently(func(g gomega.Gomega) {
			g.Expect(specContainer(getPod(ctx, g, running), a.ID+"-admin").Image).To(gomega.Equal(security.Image))
		}).WithContext(ctx).Should(gomega.Succeed())
	case security.PlayFailurePolicy:
		gomega.Expect(appsv1beta1.IsBestEffort(updated)).To(gomega.BeTrue())
	case security.PlayPullSecrets:
		createPodWhen(ctx, podOf(), func(g gomega.Gomega, p *corev1.Pod) {
			g.Expect(injected(p, platform.Name)).To(gomega.BeTrue())
			g.Expect(p.Spec.ImagePullSecrets).To(gomega.ContainElement(corev1.LocalObjectReference{Name: "platform-registry"}))
		})
	}
}

// playCanary: a canary of the platform's SidecarSet.
func (s *securitySuite) playCanary(ctx context.Context, a *security.Attempt) {
	base := s.adminSet(a)
	createAdmin(ctx, base)
	canary := func(name string) *appsv1beta1.SidecarSet {
		set := s.adminSet(a)
		set.Name = name
		set.Annotations = map[string]string{appsv1beta1.SidecarSetCanaryAnnotation: "true", appsv1beta1.SidecarSetBaseAnnotation: base.Name}
		set.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(s.team)
		set.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
		set.Spec.Containers[0].Image = imageNext
		return set
	}
	s.expectRefused(a, s.as(a.Unauthorized).Create(ctx, canary(a.SidecarSet())))
	gomega.Expect(s.as(a.Authorized).Create(ctx, canary(a.AuthorizedSidecarSet()))).To(gomega.Succeed())
	p, _ := createPodWhen(ctx, s.pod(a, s.team, phaseAuthorized), injectedWith(a.AuthorizedSidecarSet()))
	gomega.Expect(injected(p, base.Name)).To(gomega.BeFalse(), "the canary replaces its base")
	gomega.Expect(specContainer(p, a.ID+"-admin").Image).To(gomega.Equal(imageNext))
}

// playRetarget: moving the administrator's SidecarSet of the other
// namespace to the team namespace.
func (s *securitySuite) playRetarget(ctx context.Context, a *security.Attempt) {
	set := s.adminSet(a)
	set.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(s.other)
	createAdmin(ctx, set)
	retarget := func(set *appsv1beta1.SidecarSet) { set.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(s.team) }
	_, err := s.updateAs(ctx, a.Unauthorized, set.Name, retarget)
	s.expectRefused(a, err)
	_, err = s.updateAs(ctx, a.Authorized, set.Name, retarget)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	createPodWhen(ctx, s.pod(a, s.team, phaseAuthorized), injectedWith(set.Name))
}

// playPrivilegedContent: a new image for the administrator's privileged
// SidecarSet of the team namespace.
func (s *securitySuite) playPrivilegedContent(ctx context.Context, a *security.Attempt) {
	set := s.adminSet(a)
	set.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(s.team)
	set.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
	createAdmin(ctx, set)
	newImage := func(set *appsv1beta1.SidecarSet) { set.Spec.Containers[0].Image = imageNext }
	_, err := s.updateAs(ctx, a.Unauthorized, set.Name, newImage)
	s.expectRefused(a, err)
	_, err = s.updateAs(ctx, a.Authorized, set.Name, newImage)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	createPodWhen(ctx, s.pod(a, s.team, phaseAuthorized), func(g gomega.Gomega, p *corev1.Pod) {
		c := specContainer(p, a.ID+"-admin")
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Image).To(gomega.Equal(imageNext))
		g.Expect(c.SecurityContext.Privileged).To(gomega.HaveValue(gomega.BeTrue()))
	})
}

// playRecordOnCreate: a new SidecarSet carrying an authority record.
func (s *securitySuite) playRecordOnCreate(ctx context.Context, a *security.Attempt) {
	denied := s.attemptSet(a, a.SidecarSet(), a.ID, phaseDenied)
	denied.Annotations = map[string]string{authority.Annotation: authority.Format(authority.All)}
	s.expectRefused(a, s.as(a.Unauthorized).Create(ctx, denied))

	allowed := s.attemptSet(a, a.AuthorizedSidecarSet(), a.ID+"-ok", phaseAuthorized)
	gomega.Expect(s.as(a.Authorized).Create(ctx, allowed)).To(gomega.Succeed())
	gomega.Expect(getSidecarSet(ctx, gomega.Default, allowed.Name).Annotations).To(
		gomega.HaveKeyWithValue(authority.Annotation, authority.Format(a.Authorized.Verbs)))
	createPodWhen(ctx, s.pod(a, s.team, phaseAuthorized), injectedWith(allowed.Name))
}

// playRecordOnUpdate: changing, or removing, the record of one's own
// SidecarSet.
func (s *securitySuite) playRecordOnUpdate(ctx context.Context, a *security.Attempt) {
	own := s.attemptSet(a, a.SidecarSet(), a.ID, phaseDenied)
	gomega.Expect(s.as(a.Unauthorized).Create(ctx, own)).To(gomega.Succeed())
	gomega.Expect(getSidecarSet(ctx, gomega.Default, own.Name).Annotations).To(
		gomega.HaveKeyWithValue(authority.Annotation, authority.Format(a.Unauthorized.Verbs)))
	updated, err := s.updateAs(ctx, a.Unauthorized, own.Name, func(set *appsv1beta1.SidecarSet) {
		if a.Play == security.PlayRecordRemove {
			// Without a record, a SidecarSet would act with every verb.
			delete(set.Annotations, authority.Annotation)
			set.Labels = map[string]string{"security-e2e/touched": "true"}
			return
		}
		set.Annotations[authority.Annotation] = authority.Format(authority.All)
	})
	if a.Outcome == security.Refused {
		s.expectRefused(a, err)
	} else {
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(updated.Labels).To(gomega.HaveKey("security-e2e/touched"), "the update is stored")
	}
	gomega.Expect(getSidecarSet(ctx, gomega.Default, own.Name).Annotations).To(
		gomega.HaveKeyWithValue(authority.Annotation, authority.Format(a.Unauthorized.Verbs)))

	_, err = s.updateAs(ctx, a.Authorized, own.Name, func(set *appsv1beta1.SidecarSet) { set.Spec.Containers[0].Image = imageNext })
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(getSidecarSet(ctx, gomega.Default, own.Name).Annotations).To(
		gomega.HaveKeyWithValue(authority.Annotation, authority.Format(a.Authorized.Verbs)))
	createPodWhen(ctx, s.pod(a, s.team, phaseDenied), func(g gomega.Gomega, p *corev1.Pod) {
		g.Expect(injected(p, own.Name)).To(gomega.BeTrue())
		g.Expect(specContainer(p, a.ID).Image).To(gomega.Equal(imageNext))
	})
}

// revisions lists the names of a SidecarSet's ControllerRevisions.
func revisions(ctx context.Context, g gomega.Gomega, set string) []string {
	list := &appsv1.ControllerRevisionList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(framework.OperatorNamespace),
		client.MatchingLabels{appsv1beta1.SidecarSetNameLabel: set})).To(gomega.Succeed())
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	return names
}

// secondRevision makes the actor's SidecarSet (one revision, image
// security.Image) move to imageNext, waits until the webhook injects that,
// and returns the first revision's name.
func (s *securitySuite) secondRevision(ctx context.Context, actor security.Actor, a *security.Attempt, set, container, phase string) string {
	var first string
	gomega.Eventually(func(g gomega.Gomega) {
		names := revisions(ctx, g, set)
		g.Expect(names).To(gomega.HaveLen(1))
		first = names[0]
	}).WithContext(ctx).Should(gomega.Succeed())
	_, err := s.updateAs(ctx, actor, set, func(set *appsv1beta1.SidecarSet) { set.Spec.Containers[0].Image = imageNext })
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Eventually(func(g gomega.Gomega) {
		g.Expect(revisions(ctx, g, set)).To(gomega.HaveLen(2))
	}).WithContext(ctx).Should(gomega.Succeed())
	probe := s.pod(a, s.team, phase)
	gomega.Eventually(func(g gomega.Gomega) {
		dry := probe.DeepCopy()
		g.Expect(env.Client.Create(ctx, dry, client.DryRunAll)).To(gomega.Succeed())
		g.Expect(specContainer(dry, container)).NotTo(gomega.BeNil())
		g.Expect(specContainer(dry, container).Image).To(gomega.Equal(imageNext))
	}).WithContext(ctx).Should(gomega.Succeed())
	return first
}

// pinRevision pins the revision as the actor, and returns the refusal.
func (s *securitySuite) pinRevision(ctx context.Context, actor security.Actor, set, revision string) error {
	_, err := s.updateAs(ctx, actor, set, func(obj *appsv1beta1.SidecarSet) {
		obj.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{RevisionName: new(revision)}
	})
	return err
}

// expectPinned checks that new pods get the pinned revision: its image,
// recorded as that revision.
func (s *securitySuite) expectPinned(ctx context.Context, a *security.Attempt, set, container, phase, revision string) {
	createPodWhen(ctx, s.pod(a, s.team, phase), func(g gomega.Gomega, p *corev1.Pod) {
		g.Expect(injected(p, set)).To(gomega.BeTrue())
		g.Expect(specContainer(p, container).Image).To(gomega.Equal(security.Image))
		hashes, err := podstate.DecodeHashes(p.Annotations[appsv1beta1.SidecarSetHashAnnotation])
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(hashes[set].ControllerRevision).To(gomega.Equal(revision))
	})
}

// playPinRevision: pinning a recorded revision of one's own SidecarSet.
func (s *securitySuite) playPinRevision(ctx context.Context, a *security.Attempt) {
	own := s.attemptSet(a, a.SidecarSet(), a.ID, phaseDenied)
	gomega.Expect(s.as(a.Unauthorized).Create(ctx, own)).To(gomega.Succeed())
	first := s.secondRevision(ctx, a.Unauthorized, a, own.Name, a.ID, phaseDenied)
	s.expectRefused(a, s.pinRevision(ctx, a.Unauthorized, own.Name, first))

	gomega.Expect(s.pinRevision(ctx, a.Authorized, own.Name, first)).To(gomega.Succeed())
	s.expectPinned(ctx, a, own.Name, a.ID, phaseDenied, first)
}

// playPinForeignRevision: pinning the revision of the administrator's
// SidecarSet.
func (s *securitySuite) playPinForeignRevision(ctx context.Context, a *security.Attempt) {
	foreign := s.adminSet(a)
	foreign.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(s.team)
	createAdmin(ctx, foreign)
	var revision string
	gomega.Eventually(func(g gomega.Gomega) {
		names := revisions(ctx, g, foreign.Name)
		g.Expect(names).To(gomega.HaveLen(1))
		revision = names[0]
	}).WithContext(ctx).Should(gomega.Succeed())
	denied := s.attemptSet(a, a.SidecarSet(), a.ID, phaseDenied)
	denied.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{RevisionName: new(revision)}
	s.expectRefused(a, s.as(a.Unauthorized).Create(ctx, denied))

	own := s.attemptSet(a, a.AuthorizedSidecarSet(), a.ID+"-ok", phaseAuthorized)
	gomega.Expect(s.as(a.Authorized).Create(ctx, own)).To(gomega.Succeed())
	first := s.secondRevision(ctx, a.Authorized, a, own.Name, a.ID+"-ok", phaseAuthorized)
	gomega.Expect(s.pinRevision(ctx, a.Authorized, own.Name, first)).To(gomega.Succeed())
	s.expectPinned(ctx, a, own.Name, a.ID+"-ok", phaseAuthorized, first)
}

// playWhitelist: a SidecarSet labelled to match a whitelist rule patching
// the rule's key.
func (s *securitySuite) playWhitelist(ctx context.Context, a *security.Attempt) {
	const key, label = "security-e2e/patched", "security-e2e/whitelist"
	s.useWhitelist(ctx, fmt.Sprintf(`{"rules": [{"selector": {"matchLabels": {%q: "granted"}}, "allowedAnnotationKeyExprs": ["^%s$"]}]}`, label, key))
	labelled := func(name, container, phase, patched string) *appsv1beta1.SidecarSet {
		set := s.attemptSet(a, name, container, phase)
		set.Labels = map[string]string{label: "granted"}
		set.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{
			PatchPolicy: appsv1beta1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{patched: "yes"},
		}}
		return set
	}
	// The webhook has the whitelist once it refuses, even to the
	// administrator, a key the rule does not allow.
	gomega.Eventually(func(g gomega.Gomega) {
		err := env.Client.Create(ctx, labelled("sec-whitelist-probe", "probe", phaseDenied, "security-e2e/other"), client.DryRunAll)
		g.Expect(err).To(gomega.HaveOccurred())
		g.Expect(err.Error()).To(gomega.ContainSubstring("it matches no pattern of the whitelist rules that select this SidecarSet"))
	}).WithContext(ctx).Should(gomega.Succeed())

	s.expectRefused(a, s.as(a.Unauthorized).Create(ctx, labelled(a.SidecarSet(), a.ID, phaseDenied, key)))
	gomega.Expect(s.as(a.Authorized).Create(ctx, labelled(a.AuthorizedSidecarSet(), a.ID+"-ok", phaseAuthorized, key))).To(gomega.Succeed())
	createPodWhen(ctx, s.pod(a, s.team, phaseAuthorized), func(g gomega.Gomega, p *corev1.Pod) {
		g.Expect(injected(p, a.AuthorizedSidecarSet())).To(gomega.BeTrue())
		g.Expect(p.Annotations).To(gomega.HaveKeyWithValue(key, "yes"))
	})
}

// useWhitelist writes the whitelist ConfigMap until the spec ends, then
// puts back what was there.
func (s *securitySuite) useWhitelist(ctx context.Context, whitelist string) {
	key := types.NamespacedName{Namespace: framework.OperatorNamespace, Name: appsv1beta1.ConfigurationConfigMapName}
	saved := &corev1.ConfigMap{}
	err := env.Client.Get(ctx, key, saved)
	existed := err == nil
	gomega.Expect(client.IgnoreNotFound(err)).To(gomega.Succeed())
	cm := builder.WhitelistConfigMap(framework.OperatorNamespace, whitelist)
	if existed {
		cm.ResourceVersion = saved.ResourceVersion
		cm.Data = map[string]string{}
		maps.Copy(cm.Data, saved.Data)
		cm.Data[appsv1beta1.PatchPodMetadataWhiteListKey] = whitelist
		gomega.Expect(env.Client.Update(ctx, cm)).To(gomega.Succeed())
	} else {
		gomega.Expect(env.Client.Create(ctx, cm)).To(gomega.Succeed())
	}
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		if !existed {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, cm))).To(gomega.Succeed())
			return
		}
		gomega.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current := &corev1.ConfigMap{}
			if err := env.Client.Get(ctx, key, current); err != nil {
				return err
			}
			current.Data = saved.Data
			return env.Client.Update(ctx, current)
		})).To(gomega.Succeed())
	})
}

// expectNeutralized checks the unauthorized actor's pod: the sidecar is
// injected, without the forbidden volume, and the pod, its creator's
// warnings and the SidecarSet say why.
func (s *securitySuite) expectNeutralized(ctx context.Context, a *security.Attempt, p *corev1.Pod, warnings []string, set, container string) {
	for _, sidecar := range sidecars(p, container) {
		for _, m := range sidecar.VolumeMounts {
			gomega.ExpectWithOffset(1, m.Name).NotTo(gomega.Equal(a.Forbidden), "%s mounts %s", sidecar.Name, a.Forbidden)
		}
		for _, d := range sidecar.VolumeDevices {
			gomega.ExpectWithOffset(1, d.Name).NotTo(gomega.Equal(a.Forbidden), "%s attaches %s", sidecar.Name, a.Forbidden)
		}
	}
	gomega.ExpectWithOffset(1, podstate.DecodeRestricted(p.Annotations)[set]).To(
		gomega.ContainElement(gomega.ContainSubstring(a.Message)), "the pod records what was left out")
	gomega.ExpectWithOffset(1, warnings).To(gomega.ContainElement(gomega.ContainSubstring(a.Message)), "the pod's creator is warned")
	ginkgo.GinkgoWriter.Printf("%s, as %s: pod %s/%s admitted with warnings %q\n", a.ID, a.Unauthorized.Name(), p.Namespace, p.Name, warnings)
	expectRestrictedReported(ctx, set, p)
}

// sidecars returns the pod's sidecar of that name, or its two hot-upgrade
// twins, and fails if there is none.
func sidecars(p *corev1.Pod, name string) []*corev1.Container {
	if c := specContainer(p, name); c != nil {
		return []*corev1.Container{c}
	}
	var twins []*corev1.Container
	for _, twin := range []string{name + "-1", name + "-2"} {
		if c := specContainer(p, twin); c != nil {
			twins = append(twins, c)
		}
	}
	gomega.ExpectWithOffset(2, twins).NotTo(gomega.BeEmpty(), "pod %s has no sidecar %s: %v", p.Name, name, containerNames(p.Spec.Containers))
	return twins
}

// expectRestrictedReported waits until the SidecarSet reports the pod:
// the Restricted condition, and a SidecarsRestricted event.
func expectRestrictedReported(ctx context.Context, set string, p *corev1.Pod) {
	gomega.EventuallyWithOffset(2, func(g gomega.Gomega) {
		c := meta.FindStatusCondition(getSidecarSet(ctx, g, set).Status.Conditions, appsv1beta1.SidecarSetConditionRestricted)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(gomega.Equal(appsv1beta1.ReasonSidecarsRestricted))
		g.Expect(c.Message).To(gomega.ContainSubstring(p.Namespace + "/" + p.Name))
	}).WithContext(ctx).Should(gomega.Succeed())
	gomega.EventuallyWithOffset(2, func(g gomega.Gomega) {
		list, err := env.Clientset.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Reason == "SidecarsRestricted" && e.Regarding.Kind == "SidecarSet" && e.Regarding.Name == set &&
				strings.Contains(e.Note, p.Namespace+"/"+p.Name)
		})).To(gomega.BeTrue(), "a SidecarsRestricted event about %s names %s", set, p.Name)
	}).WithContext(ctx).Should(gomega.Succeed())
}

// playShadow: a sidecar reaching, by name, a volume of the pod or of the
// administrator's SidecarSet (with its hostPath volume "hostlogs").
func (s *securitySuite) playShadow(ctx context.Context, a *security.Attempt, ofSidecarSet bool) {
	var admin *appsv1beta1.SidecarSet
	if ofSidecarSet {
		admin = s.adminSet(a)
		admin.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(s.team)
		admin.Spec.Volumes = []corev1.Volume{{Name: "hostlogs", VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"},
		}}}
		admin.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "hostlogs", MountPath: "/host-logs"}}
		createAdmin(ctx, admin)
	}
	denied := s.attemptSet(a, a.SidecarSet(), a.ID, phaseDenied)
	err := s.as(a.Unauthorized).Create(ctx, denied)
	if a.Outcome == security.Refused {
		s.expectRefused(a, err)
	} else {
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		p, warnings := createPodWhen(ctx, s.pod(a, s.team, phaseDenied), injectedWith(denied.Name))
		if admin != nil {
			gomega.Expect(injected(p, admin.Name)).To(gomega.BeTrue())
		}
		s.expectNeutralized(ctx, a, p, warnings, denied.Name, a.ID)
	}

	allowed := s.attemptSet(a, a.AuthorizedSidecarSet(), a.ID+"-ok", phaseAuthorized)
	gomega.Expect(s.as(a.Authorized).Create(ctx, allowed)).To(gomega.Succeed())
	p, _ := createPodWhen(ctx, s.pod(a, s.team, phaseAuthorized), injectedWith(allowed.Name))
	for _, sidecar := range sidecars(p, a.ID+"-ok") {
		expectContains(sidecar, a.ExpectedInPod())
	}
	gomega.Expect(podstate.DecodeRestricted(p.Annotations)[allowed.Name]).NotTo(
		gomega.ContainElement(gomega.ContainSubstring(a.Message)), "the authorized sidecar is given the volume")
}

// playOfflineInject: the kubectl plugin injects a pod manifest offline
// with a SidecarSet (a shadowing volume, or a plain sidecar where the pod
// mounts its token); the pod is then created from the output.
func (s *securitySuite) playOfflineInject(ctx context.Context, a *security.Attempt) {
	denied := s.attemptSet(a, a.SidecarSet(), a.ID, phaseDenied)
	gomega.Expect(s.as(a.Unauthorized).Create(ctx, denied)).To(gomega.Succeed())
	manifest, stderr := s.injectOffline(ctx, a, phaseDenied)
	gomega.Expect(injected(manifest, denied.Name)).To(gomega.BeTrue(), "the plugin injects the SidecarSet")
	if a.Forbidden != "" {
		gomega.Expect(podstate.DecodeRestricted(manifest.Annotations)[denied.Name]).To(
			gomega.ContainElement(gomega.ContainSubstring(a.Message)), "the manifest records what was left out")
	}
	p, _ := createPodWhen(ctx, manifest, injectedWith(denied.Name))
	if a.Forbidden == "" {
		// The token: the API server mounts it when the pod is created.
		gomega.Expect(tokenMount(specContainer(p, "main"))).To(gomega.HavePrefix("kube-api-access-"), "the pod mounts its token")
		gomega.Expect(tokenMount(specContainer(p, a.ID))).NotTo(gomega.HavePrefix("kube-api-access-"), "the sidecar is not given the token")
	}
	s.expectNeutralized(ctx, a, p, strings.Split(stderr, "\n"), denied.Name, a.ID)

	allowed := s.attemptSet(a, a.AuthorizedSidecarSet(), a.ID+"-ok", phaseAuthorized)
	gomega.Expect(s.as(a.Authorized).Create(ctx, allowed)).To(gomega.Succeed())
	manifest, _ = s.injectOffline(ctx, a, phaseAuthorized)
	p, _ = createPodWhen(ctx, manifest, injectedWith(allowed.Name))
	if want := a.ExpectedInPod(); want != "" {
		expectContains(specContainer(p, a.ID+"-ok"), want)
	} else {
		gomega.Expect(tokenMount(specContainer(p, a.ID+"-ok"))).To(gomega.HavePrefix("kube-api-access-"))
	}
	gomega.Expect(podstate.DecodeRestricted(p.Annotations)[allowed.Name]).To(gomega.BeEmpty())
}

// injectOffline runs `kubectl sidecarset inject -f` on a pod of the
// attempt for the phase, as the administrator, and returns the injected pod
// and the plugin's standard error (its warnings).
func (s *securitySuite) injectOffline(ctx context.Context, a *security.Attempt, phase string) (*corev1.Pod, string) {
	if s.plugin == "" {
		dir := filepath.Join(env.Dir, "security-plugin")
		build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "kubectl-sidecarset"), "./cmd/kubectl-sidecarset")
		build.Dir = env.RepoRoot
		out, err := build.CombinedOutput()
		gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), string(out))
		s.plugin = dir
	}
	pod := s.pod(a, s.team, phase)
	pod.Name, pod.GenerateName = "sec-"+a.ID+"-"+phase, ""
	var injectedPod *corev1.Pod
	var stderr string
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		cmd := exec.CommandContext(ctx, env.Cluster.Kubectl(), "sidecarset", "inject", "-f", writeManifest(pod.DeepCopy()))
		cmd.Env = append(os.Environ(), "PATH="+s.plugin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+env.Cluster.KubeconfigPath())
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		g.Expect(cmd.Run()).To(gomega.Succeed(), errOut.String())
		injectedPod = &corev1.Pod{}
		g.Expect(yaml.UnmarshalStrict(out.Bytes(), injectedPod)).To(gomega.Succeed(), out.String())
		g.Expect(injectedPod.Annotations[appsv1beta1.SidecarSetListAnnotation]).NotTo(gomega.BeEmpty(), "the plugin sees the SidecarSet")
		stderr = errOut.String()
	}).WithContext(ctx).Should(gomega.Succeed())
	ginkgo.GinkgoWriter.Printf("%s: kubectl sidecarset inject (%s): %s\n", a.ID, phase, stderr)
	return injectedPod, stderr
}

// serviceAccountPath is where the ServiceAccount token is mounted.
const serviceAccountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// tokenMount returns the volume mounted at the token's path.
func tokenMount(c *corev1.Container) string {
	for _, m := range c.VolumeMounts {
		if m.MountPath == serviceAccountPath {
			return m.Name
		}
	}
	return ""
}

// playToken: a plain sidecar in a pod mounting its ServiceAccount token.
func (s *securitySuite) playToken(ctx context.Context, a *security.Attempt) {
	denied := s.attemptSet(a, a.SidecarSet(), a.ID, phaseDenied)
	gomega.Expect(s.as(a.Unauthorized).Create(ctx, denied)).To(gomega.Succeed())
	p, warnings := createPodWhen(ctx, s.pod(a, s.team, phaseDenied), injectedWith(denied.Name))
	gomega.Expect(tokenMount(specContainer(p, "main"))).To(gomega.HavePrefix("kube-api-access-"), "the pod mounts its token")
	gomega.Expect(tokenMount(specContainer(p, a.ID))).To(gomega.Equal("sidecarset-no-serviceaccount-token"))
	gomega.Expect(p.Spec.Volumes).To(gomega.ContainElement(corev1.Volume{Name: "sidecarset-no-serviceaccount-token",
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}))
	s.expectNeutralized(ctx, a, p, warnings, denied.Name, a.ID)

	allowed := s.attemptSet(a, a.AuthorizedSidecarSet(), a.ID+"-ok", phaseAuthorized)
	gomega.Expect(s.as(a.Authorized).Create(ctx, allowed)).To(gomega.Succeed())
	p, _ = createPodWhen(ctx, s.pod(a, s.team, phaseAuthorized), injectedWith(allowed.Name))
	gomega.Expect(tokenMount(specContainer(p, a.ID+"-ok"))).To(gomega.Equal(tokenMount(specContainer(p, "main"))))
	gomega.Expect(p.Annotations).NotTo(gomega.HaveKey(appsv1beta1.RestrictedAnnotation))
}

// playInPlaceUpgrade: a new image for the administrator's SidecarSet whose
// sidecar mounts the pod's Secret volume by name (the SidecarSet's own
// volume of that name is shadowed by the pod's).
func (s *securitySuite) playInPlaceUpgrade(ctx context.Context, a *security.Attempt) {
	container := a.ID + "-admin"
	set := s.adminSet(a)
	set.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(s.team)
	set.Spec.Containers = s.attemptSet(a, set.Name, container, phaseDenied).Spec.Containers
	set.Spec.Volumes = s.attemptSet(a, set.Name, container, phaseDenied).Spec.Volumes
	createAdmin(ctx, set)
	p, _ := createPodWhen(ctx, s.pod(a, s.team, phaseDenied), injectedWith(set.Name))
	expectContains(specContainer(p, container), `{volumeMounts: [{name: creds, mountPath: /creds}]}`)
	reach, _ := podstate.DecodeReach(p.Annotations)
	gomega.Expect(reach[set.Name]).To(gomega.ContainSubstring(authority.VerbSecrets), "the pod records that the sidecar reads a Secret")
	gomega.Eventually(func(g gomega.Gomega) {
		g.Expect(podReady(getPod(ctx, g, p))).To(gomega.BeTrue())
	}).WithContext(ctx).Should(gomega.Succeed())

	updated, err := s.updateAs(ctx, a.Unauthorized, set.Name, func(set *appsv1beta1.SidecarSet) { set.Spec.Containers[0].Image = imageNext })
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the new image is accepted")
	gomega.Expect(updated.Annotations).To(gomega.HaveKeyWithValue(authority.Annotation, authority.Format(a.Unauthorized.Verbs)))
	expectProgressing(ctx, set.Name, updated.Generation, metav1.ConditionFalse, a.Message)
	gomega.Consistently(func(g gomega.Gomega) {
		g.Expect(specContainer(getPod(ctx, g, p), container).Image).To(gomega.Equal(security.Image))
	}).WithContext(ctx).Should(gomega.Succeed(), "the pod is not upgraded")

	_, err = s.updateAs(ctx, a.Authorized, set.Name, func(set *appsv1beta1.SidecarSet) { set.Spec.Containers[0].Image = imageLater })
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	expectRolledOut(ctx, s.team, map[string]string{attemptLabel: a.ID}, container, imageLater, rolloutTimeout)
}

// playOperatorLabel: the operator's label on a pod of the team namespace,
// selected by the platform's SidecarSet.
func (s *securitySuite) playOperatorLabel(ctx context.Context, a *security.Attempt) {
	platform := s.adminSet(a)
	createAdmin(ctx, platform)
	labelled := func(ns, phase string) *corev1.Pod {
		p := s.pod(a, ns, phase)
		p.Labels[appsv1beta1.OperatorPodLabel] = appsv1beta1.OperatorPodName
		return p
	}
	// The editor creates its own pod, labelled: it is injected anyway.
	createPodAs(ctx, a.Unauthorized.Name(), labelled(s.team, phaseDenied), injectedWith(platform.Name))
	// In the operator's namespace the label exempts the pod (the
	// SidecarSet reaches the namespace: a pod without the label is
	// injected).
	expectDryRun(ctx, s.pod(a, framework.OperatorNamespace, phaseAuthorized), injectedWith(platform.Name))
	createPodWhen(ctx, labelled(framework.OperatorNamespace, phaseAuthorized), func(g gomega.Gomega, p *corev1.Pod) {
		g.Expect(injected(p, platform.Name)).To(gomega.BeFalse(), "the operator's pod in its namespace is not injected")
	})
}

// createNamespaceWith creates a namespace for the spec (or the ordered
// container), deleted when it ends.
func createNamespaceWith(ctx context.Context, w *builder.NamespaceWrapper) string {
	ns := w.Obj()
	gomega.Expect(env.Client.Create(ctx, ns)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, ns))).To(gomega.Succeed())
	})
	return ns.Name
}
