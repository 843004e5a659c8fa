package generate

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// webhookBackend is where a webhook configuration sends its requests, once
// resolved through its Service.
type webhookBackend struct {
	deployment    string
	containerPort int32
	targetPort    intstr.IntOrString
	path          *string
}

// webhookDefinitions turns the webhook configurations of config/webhook into
// CSV webhook definitions, as OLM needs them: the deployment that serves each
// webhook (the one whose pods the webhook Service selects), the Service port
// (containerPort) and the container port behind it (targetPort, a number),
// and the path. It returns the names of the Services it resolved, which OLM
// replaces with its own <deployment>-service.
//
// Fields OLM cannot carry are errors, not omissions: a URL client config, a
// namespaceSelector (OLM derives it from the OperatorGroup) and
// matchConditions.
func webhookDefinitions(configs []*unstructured.Unstructured, services []*corev1.Service, deployments []*appsv1.Deployment) ([]csv.WebhookDescription, map[string]bool, error) {
	var out []csv.WebhookDescription
	used := map[string]bool{}
	add := func(typ string, w admissionregistrationv1.MutatingWebhook) error {
		// The pod webhooks' scope is written by the manager at run time,
		// in OLM's configurations too; what config/webhook installs for it
		// (the condition sending no pod) has no place in the CSV.
		scoped := false
		for _, c := range w.MatchConditions {
			if c.Name != scope.ConditionName {
				return fmt.Errorf("webhook %s: OLM webhook definitions cannot carry matchConditions (%s)", w.Name, c.Name)
			}
			scoped = true
		}
		b, err := resolveBackend(w.Name, w.ClientConfig, w.NamespaceSelector, services, deployments)
		if err != nil {
			return err
		}
		used[w.ClientConfig.Service.Name] = true
		d := description(typ, w.Name, b, w.AdmissionReviewVersions)
		d.Rules, d.FailurePolicy, d.MatchPolicy = w.Rules, w.FailurePolicy, w.MatchPolicy
		d.ObjectSelector, d.SideEffects, d.TimeoutSeconds = w.ObjectSelector, w.SideEffects, w.TimeoutSeconds
		if scoped && d.ObjectSelector == nil {
			// Until the manager has written the scope, which also leaves
			// out its own pods, OLM's configuration sends every pod: the
			// operator's pods must be kept out by their label, or the
			// operator could not start (in any namespace: a webhook
			// definition cannot carry the namespace). The manager drops
			// this selector when it writes the scope, which exempts its
			// pods in its namespace only (scope.Condition.ObjectSelector).
			d.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: appsv1beta1.OperatorPodLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{appsv1beta1.OperatorPodName},
			}}}
		}
		d.ReinvocationPolicy = w.ReinvocationPolicy
		out = append(out, d)
		return nil
	}
	for _, u := range configs {
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, cfg, true); err != nil {
				return nil, nil, fmt.Errorf("MutatingWebhookConfiguration %s: %w", u.GetName(), err)
			}
			for _, w := range cfg.Webhooks {
				if err := add(csv.MutatingAdmissionWebhook, w); err != nil {
					return nil, nil, err
				}
			}
		case "ValidatingWebhookConfiguration":
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, cfg, true); err != nil {
				return nil, nil, fmt.Errorf("ValidatingWebhookConfiguration %s: %w", u.GetName(), err)
			}
			for _, w := range cfg.Webhooks {
				if err := add(csv.ValidatingAdmissionWebhook, asMutating(w)); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return out, used, nil
}

// conversionDefinitions turns the conversion webhooks of the CRDs into CSV
// webhook definitions of type ConversionWebhook: OLM then writes each CRD's
// conversion (its own Service, path and CA bundle). It returns the names of
// the Services it resolved, as webhookDefinitions does.
func conversionDefinitions(crds []*unstructured.Unstructured, services []*corev1.Service, deployments []*appsv1.Deployment) ([]csv.WebhookDescription, map[string]bool, error) {
	var out []csv.WebhookDescription
	used := map[string]bool{}
	for _, u := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, crd, true); err != nil {
			return nil, nil, fmt.Errorf("CustomResourceDefinition %s: %w", u.GetName(), err)
		}
		conv := crd.Spec.Conversion
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter {
			continue
		}
		name := "conversion." + crd.Name
		if conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil {
			return nil, nil, fmt.Errorf("CustomResourceDefinition %s: OLM serves conversion webhooks through a Service; a URL client config cannot be carried", crd.Name)
		}
		svc := conv.Webhook.ClientConfig.Service
		b, err := resolveBackend(name, admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: svc.Namespace, Name: svc.Name, Path: svc.Path, Port: svc.Port,
		}}, nil, services, deployments)
		if err != nil {
			return nil, nil, err
		}
		used[svc.Name] = true
		d := description(csv.ConversionWebhook, name, b, conv.Webhook.ConversionReviewVersions)
		d.ConversionCRDs = []string{crd.Name}
		d.SideEffects = new(admissionregistrationv1.SideEffectClassNone)
		out = append(out, d)
	}
	return out, used, nil
}

// asMutating copies a validating webhook into the mutating shape, which has
// the same fields plus reinvocationPolicy (left unset).
func asMutating(w admissionregistrationv1.ValidatingWebhook) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name: w.Name, ClientConfig: w.ClientConfig, Rules: w.Rules, FailurePolicy: w.FailurePolicy,
		MatchPolicy: w.MatchPolicy, NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector,
		SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
		MatchConditions: w.MatchConditions,
	}
}

func description(kind, name string, b webhookBackend, versions []string) csv.WebhookDescription {
	if len(versions) == 0 {
		versions = []string{"v1"}
	}
	return csv.WebhookDescription{
		GenerateName:            name,
		Type:                    kind,
		DeploymentName:          b.deployment,
		ContainerPort:           b.containerPort,
		TargetPort:              new(b.targetPort),
		WebhookPath:             b.path,
		AdmissionReviewVersions: versions,
	}
}

// resolveBackend finds the deployment and ports behind a webhook's Service.
func resolveBackend(name string, cc admissionregistrationv1.WebhookClientConfig, nsSel *metav1.LabelSelector,
	services []*corev1.Service, deployments []*appsv1.Deployment) (webhookBackend, error) {
	if cc.Service == nil {
		return webhookBackend{}, fmt.Errorf("webhook %s: OLM serves webhooks through a Service; a URL client config cannot be carried", name)
	}
	if nsSel != nil && (len(nsSel.MatchLabels) > 0 || len(nsSel.MatchExpressions) > 0) {
		return webhookBackend{}, fmt.Errorf("webhook %s: OLM sets the namespaceSelector from the OperatorGroup; remove it from the configuration", name)
	}
	var svc *corev1.Service
	for _, s := range services {
		if s.Name == cc.Service.Name && s.Namespace == cc.Service.Namespace {
			svc = s
		}
	}
	if svc == nil {
		return webhookBackend{}, fmt.Errorf("webhook %s: Service %s/%s not found", name, cc.Service.Namespace, cc.Service.Name)
	}
	port := ptr.Deref(cc.Service.Port, 443)
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return webhookBackend{}, fmt.Errorf("webhook %s: Service %s has no port %d", name, svc.Name, port)
	}
	var dep *appsv1.Deployment
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	for _, d := range deployments {
		if d.Namespace == svc.Namespace && len(svc.Spec.Selector) > 0 && selector.Matches(labels.Set(d.Spec.Template.Labels)) {
			if dep != nil {
				return webhookBackend{}, fmt.Errorf("webhook %s: Service %s selects the pods of two deployments, %s and %s", name, svc.Name, dep.Name, d.Name)
			}
			dep = d
		}
	}
	if dep == nil {
		return webhookBackend{}, fmt.Errorf("webhook %s: Service %s selects no deployment's pods", name, svc.Name)
	}
	target, err := containerPort(dep, sp.TargetPort, sp.Port)
	if err != nil {
		return webhookBackend{}, fmt.Errorf("webhook %s: %w", name, err)
	}
	return webhookBackend{deployment: dep.Name, containerPort: sp.Port, targetPort: intstr.FromInt32(target), path: cc.Service.Path}, nil
}

// containerPort resolves a Service target port (a number, a name, or unset
// meaning the Service port) to a container port number of the deployment.
func containerPort(dep *appsv1.Deployment, target intstr.IntOrString, servicePort int32) (int32, error) {
	switch {
	case target.Type == intstr.String && target.StrVal != "":
		for _, c := range dep.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == target.StrVal {
					return p.ContainerPort, nil
				}
			}
		}
		return 0, fmt.Errorf("deployment %s has no container port named %q", dep.Name, target.StrVal)
	case target.Type == intstr.Int && target.IntVal != 0:
		return target.IntVal, nil
	default:
		return servicePort, nil
	}
}
