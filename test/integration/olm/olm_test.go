package olm_test

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/cmd/manager/app"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/apiserver"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/olm"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/validate"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

var _ = ginkgo.Describe("The OLM bundle", ginkgo.Ordered, func() {
	var (
		bundle    *validate.Bundle
		installed *olm.Objects
		dyn       dynamic.Interface
		// operatorEnv runs the operator as its service account, under
		// mgrCtx, with operatorOptions.
		operatorEnv     framework.Env
		mgrCtx          context.Context
		operatorOptions framework.ManagerOptions
	)

	ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
		var err error
		bundle, err = loadBundle()
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		installed, err = renderInstall(bundle)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		// The bundle carries a ServiceMonitor and a PrometheusRule, which OLM
		// creates on clusters that serve the Prometheus Operator's kinds.
		kinds, err := serveMonitoringKinds(ctx, env.Client, installed.Manifests)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(kinds).To(gomega.ConsistOf("PrometheusRule", "ServiceMonitor"))
		dyn, err = dynamic.NewForConfig(env.Config)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())

		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: installNamespace}}
		if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
		}

		// Grant the operator's service account what OLM grants it, and no
		// more: the CSV's cluster permissions, and the bundle's Role and
		// RoleBinding for its namespace. The CSV has no namespaced
		// permissions, which OLM v0 would lift to the whole cluster.
		gomega.Expect(bundle.CSV.Spec.Install.Spec.Permissions).To(gomega.BeEmpty())
		gomega.Expect(installed.LiftedClusterRoles).To(gomega.BeEmpty())
		var rbac []runtime.Object
		for _, m := range installed.Manifests {
			if m.GroupVersionKind().Group == rbacv1.GroupName {
				rbac = append(rbac, m)
			}
		}
		for _, x := range installed.ServiceAccounts {
			rbac = append(rbac, x)
		}
		for _, x := range installed.ClusterRoles {
			rbac = append(rbac, x)
		}
		for _, x := range installed.ClusterRoleBindings {
			rbac = append(rbac, x)
		}
		for _, x := range installed.Roles {
			rbac = append(rbac, x)
		}
		for _, x := range installed.RoleBindings {
			rbac = append(rbac, x)
		}
		for _, x := range rbac {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(x)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			_, err = apply(ctx, dyn, env.Client.RESTMapper(), &unstructured.Unstructured{Object: m}, false)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
		}

		// Run the operator as that service account.
		asOperator := rest.CopyConfig(env.Config)
		asOperator.Impersonate = rest.ImpersonationConfig{
			UserName: operatorAccount,
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + installNamespace, "system:authenticated"},
		}
		operatorEnv = *env
		operatorEnv.Config = asOperator
		var cancel context.CancelFunc
		mgrCtx, cancel = context.WithCancel(context.Background())
		ginkgo.DeferCleanup(cancel)
		// The webhooks as OLM installs them: one configuration per webhook
		// definition, under a generated name, labelled with the webhook's
		// name (envtest serves them in place of OLM's Service).
		splitLikeOLM(ctx, bundle)
		// With the arguments the CSV gives it: it finds OLM's configurations
		// by label and keeps the pod webhooks' scope there.
		gomega.Expect(installed.Deployments).To(gomega.HaveLen(1))
		args := installed.Deployments[0].Spec.Template.Spec.Containers[0].Args
		gomega.Expect(args).To(gomega.ContainElements("--mutating-webhook-configuration=", "--install-authoring-policy"))
		gomega.Expect(args).NotTo(gomega.ContainElement(gomega.HavePrefix("--scope-pod-webhook")))
		operatorOptions = framework.ManagerOptions{Mutate: func(o *app.Options) {
			o.ScopedWebhookConfig, o.ScopeOLMWebhooks = "", true
			o.InstallAuthoringPolicy = true
		}}
		gomega.Expect(operatorEnv.StartManager(mgrCtx, operatorOptions)).To(gomega.Succeed())
	})

	ginkgo.It("should pass every validator rule, install its CRD and have its example accepted", func(ctx ginkgo.SpecContext) {
		gomega.Expect(validate.Validate(bundle)).To(gomega.BeEmpty())
		server, err := apiserver.New(env.Config, apiserver.ConversionClientConfig(env.TestEnv.WebhookInstallOptions))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		// The example goes through the CRD schema and the operator's own
		// defaulting and validating webhooks.
		gomega.Expect(validate.CheckOnAPIServer(ctx, bundle, server)).To(gomega.BeEmpty())
	})

	ginkgo.It("should have everything OLM creates accepted by server-side apply", func(ctx ginkgo.SpecContext) {
		objects, err := installed.All(true)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		answers := map[string]*unstructured.Unstructured{}
		for _, obj := range objects {
			got, err := apply(ctx, dyn, env.Client.RESTMapper(), obj, true)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s %s", obj.GetKind(), obj.GetName())
			answers[obj.GetKind()+"/"+obj.GetName()] = got
		}

		deployment := &appsv1.Deployment{}
		gomega.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(answers["Deployment/sidecarset-operator"].Object, deployment)).To(gomega.Succeed())
		manager := deployment.Spec.Template.Spec.Containers[0]
		gomega.Expect(manager.Args).To(gomega.ContainElement("--cert-source=external"))
		var atCertDir []string
		for _, m := range manager.VolumeMounts {
			if m.MountPath == olm.WebhookCertDir {
				atCertDir = append(atCertDir, m.Name)
			}
		}
		gomega.Expect(atCertDir).To(gomega.Equal([]string{olm.WebhookCertVolume}))
		var volumes []string
		for _, v := range deployment.Spec.Template.Spec.Volumes {
			volumes = append(volumes, v.Name)
			if v.Name == olm.WebhookCertVolume {
				gomega.Expect(v.Secret.SecretName).To(gomega.Equal(olm.SecretName("sidecarset-operator")))
			}
		}
		gomega.Expect(volumes).To(gomega.ConsistOf(olm.APIServiceCertVolume, olm.WebhookCertVolume))
		// OLM copies the CSV's annotations onto the pod template: they must
		// fit the API server's annotation size limit.
		gomega.Expect(deployment.Spec.Template.Annotations).To(gomega.HaveKey("alm-examples"))

		service := &corev1.Service{}
		gomega.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(answers["Service/sidecarset-operator-service"].Object, service)).To(gomega.Succeed())
		gomega.Expect(service.Spec.Ports).To(gomega.HaveLen(1))
		gomega.Expect(service.Spec.Ports[0].Port).To(gomega.Equal(int32(443)))
		gomega.Expect(service.Spec.Ports[0].TargetPort).To(gomega.Equal(intstr.FromInt32(9443)))
		gomega.Expect(slices.ContainsFunc(manager.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == 9443 })).To(gomega.BeTrue())
		gomega.Expect(labels.SelectorFromSet(service.Spec.Selector).Matches(labels.Set(deployment.Spec.Template.Labels))).To(gomega.BeTrue())

		var paths []string
		for key, answer := range answers {
			switch {
			case strings.HasPrefix(key, "MutatingWebhookConfiguration/"):
				cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
				gomega.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(answer.Object, cfg)).To(gomega.Succeed())
				for _, w := range cfg.Webhooks {
					paths = append(paths, checkClientConfig(w.ClientConfig))
					gomega.Expect(w.NamespaceSelector).To(gomega.Equal(&metav1.LabelSelector{}), "an AllNamespaces group selects every namespace")
					if w.Name == "mpod.sidecarset-operator.dev" {
						sel, err := metav1.LabelSelectorAsSelector(w.ObjectSelector)
						gomega.Expect(err).NotTo(gomega.HaveOccurred())
						gomega.Expect(sel.Matches(labels.Set(deployment.Spec.Template.Labels))).To(gomega.BeFalse(), "the pod webhook must not see the operator's pods")
						gomega.Expect(sel.Matches(labels.Set{"app": "nginx"})).To(gomega.BeTrue())
					}
				}
			case strings.HasPrefix(key, "ValidatingWebhookConfiguration/"):
				cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
				gomega.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(answer.Object, cfg)).To(gomega.Succeed())
				for _, w := range cfg.Webhooks {
					paths = append(paths, checkClientConfig(w.ClientConfig))
				}
			}
		}
		// The CRD's conversion webhook, which OLM writes from the CSV's
		// ConversionWebhook definition.
		crd := &apiextensionsv1.CustomResourceDefinition{}
		gomega.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(answers["CustomResourceDefinition/"+names.SidecarSetCRDName].Object, crd)).To(gomega.Succeed())
		gomega.Expect(crd.Spec.Conversion).NotTo(gomega.BeNil())
		gomega.Expect(crd.Spec.Conversion.Strategy).To(gomega.Equal(apiextensionsv1.WebhookConverter))
		cc := crd.Spec.Conversion.Webhook.ClientConfig
		paths = append(paths, checkClientConfig(admissionregistrationv1.WebhookClientConfig{CABundle: cc.CABundle,
			Service: &admissionregistrationv1.ServiceReference{Namespace: cc.Service.Namespace, Name: cc.Service.Name, Path: cc.Service.Path, Port: cc.Service.Port}}))
		gomega.Expect(paths).To(gomega.ConsistOf(names.PodInjectionPath, names.PodInjectionPath, names.SidecarSetDefaultPath,
			names.SidecarSetValidatePath, names.ConversionPath))
	})

	ginkgo.It("should have the manager install the authoring policy the bundle cannot carry", func(ctx ginkgo.SpecContext) {
		for _, o := range bundle.Objects {
			gomega.Expect(o.GroupVersionKind().Group).NotTo(gomega.Equal(admissionregistrationv1.GroupName), "%s: OLM refuses admission objects in a bundle", o.File)
		}
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: authoring.Name}, policy)).To(gomega.Succeed())
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: authoring.Name}, binding)).To(gomega.Succeed())
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(gomega.Succeed())
		shipped, shippedBinding, err := authoring.Manifests()
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(policy.Spec.Validations).To(gomega.Equal(shipped.Spec.Validations))
		gomega.Expect(binding.Spec.ValidationActions).To(gomega.Equal(shippedBinding.Spec.ValidationActions))
		for _, obj := range []client.Object{policy, binding} {
			var managers []string
			for _, f := range obj.GetManagedFields() {
				managers = append(managers, f.Manager)
			}
			gomega.Expect(managers).To(gomega.Equal([]string{names.FieldOwner}), "%s", obj.GetName())
		}
	})

	ginkgo.It("should run the operator with the CSV's permissions and no more", func(ctx ginkgo.SpecContext) {
		sidecarSet := &appsv1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: "olm-permissions"},
			Spec: appsv1beta1.SidecarSetSpec{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "olm-permissions"}},
				Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "olm-sidecar", Image: "busybox:1.36"}}},
			},
		}
		gomega.Expect(env.Client.Create(ctx, sidecarSet)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, sidecarSet))).To(gomega.Succeed())
		})
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "olm-permissions", Namespace: metav1.NamespaceDefault, Labels: map[string]string{"app": "olm-permissions"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
		}
		// The scope, written into OLM's configurations, sends the pod.
		gomega.Eventually(func(g gomega.Gomega) {
			list := &admissionregistrationv1.MutatingWebhookConfigurationList{}
			g.Expect(env.Client.List(ctx, list, client.HasLabels{names.OLMWebhookLabel})).To(gomega.Succeed())
			g.Expect(list.Items).To(gomega.HaveLen(3))
			for _, cfg := range list.Items {
				w := cfg.Webhooks[0]
				if w.Name != names.PodWebhookName {
					continue
				}
				g.Expect(w.MatchConditions).To(gomega.HaveLen(1))
				g.Expect(w.MatchConditions[0].Expression).To(gomega.ContainSubstring("'olm-permissions'"))
			}
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(gomega.Succeed())
		// The webhook sees the new SidecarSet once its cache has it.
		gomega.Eventually(func(g gomega.Gomega) {
			p := pod.DeepCopy()
			g.Expect(env.Client.Create(ctx, p)).To(gomega.Succeed())
			var names []string
			for _, c := range p.Spec.Containers {
				names = append(names, c.Name)
			}
			if !slices.Contains(names, "olm-sidecar") {
				g.Expect(env.Client.Delete(ctx, p)).To(gomega.Succeed())
			}
			g.Expect(names).To(gomega.ContainElement("olm-sidecar"))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, pod))).To(gomega.Succeed())
		})

		// The controller lists pods, writes the status and records a revision
		// in its namespace.
		gomega.Eventually(func(g gomega.Gomega) {
			got := &appsv1beta1.SidecarSet{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(sidecarSet), got)).To(gomega.Succeed())
			g.Expect(got.Status.MatchedPods).To(gomega.Equal(int32(1)))
			g.Expect(got.Status.LatestRevision).NotTo(gomega.BeEmpty())
			revisions := &appsv1.ControllerRevisionList{}
			g.Expect(env.Client.List(ctx, revisions, client.InNamespace(installNamespace),
				client.MatchingLabels{appsv1beta1.SidecarSetNameLabel: sidecarSet.Name})).To(gomega.Succeed())
			g.Expect(revisions.Items).NotTo(gomega.BeEmpty())
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(gomega.Succeed())

		for _, tc := range []struct {
			attributes authorizationv1.ResourceAttributes
			allowed    bool
		}{
			{authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Namespace: "team-a"}, true},
			{authorizationv1.ResourceAttributes{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: installNamespace}, true},
			{authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "controllerrevisions", Namespace: installNamespace}, true},
			{authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: installNamespace}, false},
			{authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: installNamespace, Name: "sidecarset-operator-webhook-cert"}, false},
			{authorizationv1.ResourceAttributes{Verb: "patch", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}, false},
			{authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}, true},
			{authorizationv1.ResourceAttributes{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}, false},
			{authorizationv1.ResourceAttributes{Verb: "list", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}, false},
			{authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "controllerrevisions", Namespace: "team-a"}, false},
			{authorizationv1.ResourceAttributes{Verb: "delete", Group: "apps", Resource: "controllerrevisions", Namespace: metav1.NamespaceSystem}, false},
			{authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: installNamespace, Name: app.LeaderElectionID}, true},
			{authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: installNamespace, Name: "someone-else"}, false},
			{authorizationv1.ResourceAttributes{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: installNamespace, Name: app.LeaderElectionID}, false},
			{authorizationv1.ResourceAttributes{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: metav1.NamespaceSystem}, false},
			{authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: metav1.NamespaceSystem, Name: "kube-scheduler"}, false},
			{authorizationv1.ResourceAttributes{Verb: "patch", Group: "apps.kruise.io", Resource: "sidecarsets", Subresource: "status"}, true},
			{authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "sidecarsets", Subresource: "status"}, false},
			{authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies", Name: authoring.Name}, true},
			{authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies", Name: "someone-else"}, false},
			{authorizationv1.ResourceAttributes{Verb: "delete", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings", Name: authoring.Name}, false},
		} {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               operatorAccount,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + installNamespace, "system:authenticated"},
				ResourceAttributes: &tc.attributes,
			}}
			gomega.Expect(env.Client.Create(ctx, review)).To(gomega.Succeed())
			gomega.Expect(review.Status.Allowed).To(gomega.Equal(tc.allowed), "%+v", tc.attributes)
		}
	})

	// The CSV's objectSelector exempts the operator's label in every
	// namespace (a definition cannot carry the namespace); it is there for
	// the operator's first start, before its scope is written. Once written,
	// the scope exempts the operator's pods in its namespace only, and the
	// objectSelector is dropped: a pod elsewhere carrying the label gets its
	// required sidecars, and the operator's own pods are still created while
	// it is down.
	ginkgo.It("should inject a pod carrying the operator's label outside its namespace, and create the operator's pods while it is down", func(ctx ginkgo.SpecContext) {
		sidecarSet := &appsv1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: "olm-operator-label"},
			Spec: appsv1beta1.SidecarSetSpec{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "olm-operator-label"}},
				Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "required-sidecar", Image: "busybox:1.36"}}},
			},
		}
		gomega.Expect(env.Client.Create(ctx, sidecarSet)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, sidecarSet))).To(gomega.Succeed())
		})
		labelled := func(namespace, name string) *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{
					"app": "olm-operator-label", appsv1beta1.OperatorPodLabel: appsv1beta1.OperatorPodName}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
			}
		}
		required := func(g gomega.Gomega) *admissionregistrationv1.MutatingWebhookConfiguration {
			list := &admissionregistrationv1.MutatingWebhookConfigurationList{}
			g.Expect(env.Client.List(ctx, list, client.MatchingLabels{names.OLMWebhookLabel: names.PodWebhookName})).To(gomega.Succeed())
			g.Expect(list.Items).To(gomega.HaveLen(1))
			return &list.Items[0]
		}
		gomega.Eventually(func(g gomega.Gomega) {
			w := required(g).Webhooks[0]
			g.Expect(w.ObjectSelector).To(gomega.Equal(&metav1.LabelSelector{}), "the CSV's label exemption is dropped")
			g.Expect(w.MatchConditions).To(gomega.HaveLen(1))
			g.Expect(w.MatchConditions[0].Expression).To(gomega.ContainSubstring("'olm-operator-label'"))
			g.Expect(w.MatchConditions[0].Expression).To(gomega.HavePrefix("!(request.namespace == '" + installNamespace + "' && "))
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(gomega.Succeed())

		ginkgo.By("a pod of another namespace carrying the operator's label gets the required sidecar")
		gomega.Eventually(func(g gomega.Gomega) {
			p := labelled(metav1.NamespaceDefault, "carries-operator-label")
			g.Expect(env.Client.Create(ctx, p, client.DryRunAll)).To(gomega.Succeed())
			var names []string
			for _, c := range p.Spec.Containers {
				names = append(names, c.Name)
			}
			g.Expect(names).To(gomega.ContainElement("required-sidecar"))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(gomega.Succeed())

		ginkgo.By("with the operator down, its own pods are created, and a labelled pod elsewhere is refused")
		gomega.Expect(operatorEnv.StopManager()).To(gomega.Succeed())
		ginkgo.DeferCleanup(func() {
			// Before the SidecarSet's deletion, which its webhooks admit.
			gomega.Expect(operatorEnv.StartManager(mgrCtx, operatorOptions)).To(gomega.Succeed())
		})
		gomega.Expect(env.Client.Create(ctx, labelled(installNamespace, "operator"), client.DryRunAll)).To(gomega.Succeed())
		err := env.Client.Create(ctx, labelled(metav1.NamespaceDefault, "carries-operator-label"), client.DryRunAll)
		gomega.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(names.PodWebhookName)))

		ginkgo.By("OLM rewriting its configuration while the operator is down brings back the label exemption, and the operator's pods are still created")
		gomega.Eventually(func(g gomega.Gomega) {
			cfg := required(g)
			cfg.Webhooks[0].ObjectSelector = asOLMDefines(bundle, names.PodWebhookName).ObjectSelector
			cfg.Webhooks[0].MatchConditions = nil
			g.Expect(env.Client.Update(ctx, cfg)).To(gomega.Succeed())
		}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
		gomega.Expect(env.Client.Create(ctx, labelled(installNamespace, "operator"), client.DryRunAll)).To(gomega.Succeed())
		err = env.Client.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: metav1.NamespaceDefault, Labels: map[string]string{"app": "olm-operator-label"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
		}, client.DryRunAll)
		gomega.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(names.PodWebhookName)), "every other pod goes to the fail-closed webhook")
	})
})

// checkClientConfig checks that a webhook calls OLM's Service with a CA
// bundle, and returns its path.
func checkClientConfig(cc admissionregistrationv1.WebhookClientConfig) string {
	gomega.Expect(cc.Service).NotTo(gomega.BeNil())
	gomega.Expect(cc.Service.Name).To(gomega.Equal(olm.ServiceName("sidecarset-operator")))
	gomega.Expect(cc.Service.Namespace).To(gomega.Equal(installNamespace))
	gomega.Expect(cc.Service.Port).To(gomega.Equal(new(int32(443))))
	gomega.Expect(cc.CABundle).NotTo(gomega.BeEmpty())
	gomega.Expect(cc.Service.Path).NotTo(gomega.BeNil())
	return *cc.Service.Path
}

// splitLikeOLM replaces the mutating webhook configuration of config/webhook
// (installed and served by envtest) with what OLM creates from the CSV's
// webhook definitions: one configuration per webhook, named after it with a
// generated suffix and labelled olm.webhook-description-generate-name, with
// the definition's objectSelector and without matchConditions (a definition
// cannot carry them).
func splitLikeOLM(ctx context.Context, b *validate.Bundle) {
	whole := &admissionregistrationv1.MutatingWebhookConfiguration{}
	gomega.Expect(env.Client.Get(ctx, client.ObjectKey{Name: names.MutatingConfigName}, whole)).To(gomega.Succeed())
	for _, w := range whole.Webhooks {
		w.MatchConditions = nil
		w.ObjectSelector = asOLMDefines(b, w.Name).ObjectSelector
		part := &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{GenerateName: w.Name + "-", Labels: map[string]string{names.OLMWebhookLabel: w.Name}},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{w},
		}
		gomega.Expect(env.Client.Create(ctx, part)).To(gomega.Succeed())
	}
	gomega.Expect(env.Client.Delete(ctx, whole)).To(gomega.Succeed())
}

// asOLMDefines returns the webhook as OLM creates it from the CSV's
// definition of that name: its objectSelector (the API server's default,
// every pod, when it has none) and no matchConditions.
func asOLMDefines(b *validate.Bundle, name string) admissionregistrationv1.MutatingWebhook {
	for _, d := range b.CSV.Spec.WebhookDefinitions {
		if d.GenerateName == name {
			w := admissionregistrationv1.MutatingWebhook{Name: name, ObjectSelector: d.ObjectSelector}
			if w.ObjectSelector == nil {
				w.ObjectSelector = &metav1.LabelSelector{}
			}
			return w
		}
	}
	ginkgo.Fail("the CSV has no webhook definition " + name)
	return admissionregistrationv1.MutatingWebhook{}
}
