// Package olm renders the objects OLM (v0) creates when it installs a
// bundle: the service accounts and RBAC of the install strategy, the
// Deployments with OLM's certificate volumes, the webhook Service and
// certificate Secret, and one webhook configuration per webhook definition.
// It restates OLM's documented behaviour (pkg/controller/install and the
// OperatorGroup controller) so that tests can apply the result to a real API
// server. Names OLM generates randomly are made deterministic here.
package olm

import (
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
)

// Where OLM mounts the serving certificate, and the volumes it adds.
const (
	WebhookCertDir       = "/tmp/k8s-webhook-server/serving-certs"
	WebhookCertVolume    = "webhook-cert"
	APIServiceCertDir    = "/apiserver.local.config/certificates"
	APIServiceCertVolume = "apiservice-cert"
	// CAHashAnnotation on the pod template forces a rollout when the CA changes.
	CAHashAnnotation = "olmcahash"
	// OperatorConditionEnv names the OperatorCondition in every container.
	OperatorConditionEnv = "OPERATOR_CONDITION_NAME"
	// WebhookDescriptionLabel marks a webhook configuration with its definition.
	WebhookDescriptionLabel = "olm.webhook-description-generate-name"
)

// Install is the OperatorGroup and the certificate OLM installs with.
type Install struct {
	// Namespace is the OperatorGroup's (and the CSV's) namespace.
	Namespace string
	// OperatorGroup is the OperatorGroup's name.
	OperatorGroup string
	// OperatorGroupUID labels the target namespaces of a namespaced
	// OperatorGroup.
	OperatorGroupUID string
	// TargetNamespaces are the OperatorGroup's namespaces; empty means all.
	TargetNamespaces []string
	// CABundle, ServingCert and ServingKey are PEM: the CA OLM generated and
	// the serving certificate it signed for the webhook Service.
	CABundle, ServingCert, ServingKey []byte
	// CAHash is the value of the olmcahash annotation.
	CAHash string
}

// Objects are what OLM creates, by kind.
type Objects struct {
	ServiceAccounts     []*corev1.ServiceAccount
	ClusterRoles        []*rbacv1.ClusterRole
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
	Roles               []*rbacv1.Role
	RoleBindings        []*rbacv1.RoleBinding
	// LiftedClusterRoles and LiftedClusterRoleBindings are the namespaced
	// permissions OLM v0 lifts to the cluster for an AllNamespaces
	// OperatorGroup.
	LiftedClusterRoles        []*rbacv1.ClusterRole
	LiftedClusterRoleBindings []*rbacv1.ClusterRoleBinding
	Deployments               []*appsv1.Deployment
	Services                  []*corev1.Service
	Secrets                   []*corev1.Secret
	MutatingWebhooks          []*admissionregistrationv1.MutatingWebhookConfiguration
	ValidatingWebhooks        []*admissionregistrationv1.ValidatingWebhookConfiguration
	// Manifests are the bundle's other objects, namespaced into the install
	// namespace where their kind is namespaced.
	Manifests []*unstructured.Unstructured
}

// AllNamespaces reports whether the OperatorGroup targets every namespace.
func (in Install) AllNamespaces() bool {
	return len(in.TargetNamespaces) == 0 || (len(in.TargetNamespaces) == 1 && in.TargetNamespaces[0] == "")
}

// ownerLabels are the labels OLM puts on what it creates for a CSV.
func ownerLabels(c *csv.ClusterServiceVersion, in Install) map[string]string {
	return map[string]string{"olm.owner": c.Metadata.Name, "olm.owner.kind": csv.Kind, "olm.owner.namespace": in.Namespace}
}

// Render returns what OLM creates for the CSV and the bundle's other
// manifests in the install described by in.
func Render(c *csv.ClusterServiceVersion, manifests []*unstructured.Unstructured, in Install) (*Objects, error) {
	if c.Spec.Install.Strategy != csv.InstallStrategyDeployment {
		return nil, fmt.Errorf("install strategy %q is not deployment", c.Spec.Install.Strategy)
	}
	o := &Objects{}
	renderRBAC(o, c, in)
	for _, d := range c.Spec.Install.Spec.Deployments {
		dep, err := renderDeployment(o, c, d, in)
		if err != nil {
			return nil, err
		}
		o.Deployments = append(o.Deployments, dep)
	}
	for _, m := range manifests {
		m = m.DeepCopy()
		if namespaced(m.GetKind()) {
			m.SetNamespace(in.Namespace)
		}
		o.Manifests = append(o.Manifests, m)
	}
	for _, w := range c.Spec.WebhookDefinitions {
		if err := renderWebhook(o, c, w, in); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// namespaced reports whether a bundle manifest kind is namespaced.
func namespaced(kind string) bool {
	switch kind {
	case "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "PriorityClass",
		"ConsoleYAMLSample", "ConsoleQuickStart", "ConsoleCLIDownload", "ConsoleLink", "ConsolePlugin":
		return false
	}
	return true
}

func renderRBAC(o *Objects, c *csv.ClusterServiceVersion, in Install) {
	labels := ownerLabels(c, in)
	accounts := map[string]bool{}
	addAccount := func(name string) {
		if !accounts[name] {
			accounts[name] = true
			o.ServiceAccounts = append(o.ServiceAccounts, &corev1.ServiceAccount{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: in.Namespace, Labels: maps.Clone(labels)},
			})
		}
	}
	for _, d := range c.Spec.Install.Spec.Deployments {
		addAccount(serviceAccount(d))
	}
	subject := func(sa string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: in.Namespace}}
	}
	targets := []string{in.Namespace}
	if !in.AllNamespaces() {
		targets = append(targets, in.TargetNamespaces...)
	}
	for i, p := range c.Spec.Install.Spec.Permissions {
		addAccount(p.ServiceAccountName)
		name := fmt.Sprintf("%s-%d", c.Metadata.Name, i)
		seen := map[string]bool{}
		for _, ns := range targets {
			if seen[ns] {
				continue
			}
			seen[ns] = true
			o.Roles = append(o.Roles, &rbacv1.Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: maps.Clone(labels)},
				Rules:      p.Rules,
			})
			o.RoleBindings = append(o.RoleBindings, &rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: maps.Clone(labels)},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   subject(p.ServiceAccountName),
			})
		}
		if in.AllNamespaces() {
			// OLM v0 lifts the namespaced permissions of a global operator
			// to the cluster, adding read access to namespaces.
			rules := append(append([]rbacv1.PolicyRule{}, p.Rules...), rbacv1.PolicyRule{
				APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"},
			})
			o.LiftedClusterRoles = append(o.LiftedClusterRoles, &rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels)},
				Rules:      rules,
			})
			o.LiftedClusterRoleBindings = append(o.LiftedClusterRoleBindings, &rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels)},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   subject(p.ServiceAccountName),
			})
		}
	}
	for i, p := range c.Spec.Install.Spec.ClusterPermissions {
		addAccount(p.ServiceAccountName)
		name := fmt.Sprintf("%s-cluster-%d", c.Metadata.Name, i)
		o.ClusterRoles = append(o.ClusterRoles, &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels)},
			Rules:      p.Rules,
		})
		o.ClusterRoleBindings = append(o.ClusterRoleBindings, &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   subject(p.ServiceAccountName),
		})
	}
}

func serviceAccount(d csv.DeploymentSpec) string {
	if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "" {
		return sa
	}
	return "default"
}

// ServiceName is the Service OLM puts in front of a webhook deployment.
func ServiceName(deployment string) string { return csv.ServiceName(deployment) }

// SecretName is the Secret holding the Service's serving certificate.
func SecretName(deployment string) string { return ServiceName(deployment) + "-cert" }

// renderDeployment builds the Deployment, and for a deployment serving
// webhooks its Service, certificate Secret and the RBAC to read it.
func renderDeployment(o *Objects, c *csv.ClusterServiceVersion, d csv.DeploymentSpec, in Install) (*appsv1.Deployment, error) {
	spec := *d.Spec.DeepCopy()
	labels := maps.Clone(d.Label)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, ownerLabels(c, in))
	annotations := maps.Clone(c.Metadata.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["olm.operatorGroup"] = in.OperatorGroup
	annotations["olm.operatorNamespace"] = in.Namespace
	annotations["olm.targetNamespaces"] = strings.Join(in.TargetNamespaces, ",")
	maps.Copy(annotations, spec.Template.Annotations)
	spec.Template.Annotations = annotations
	for i := range spec.Template.Spec.Containers {
		spec.Template.Spec.Containers[i].Env = append(spec.Template.Spec.Containers[i].Env,
			corev1.EnvVar{Name: OperatorConditionEnv, Value: c.Metadata.Name})
	}

	var ports []corev1.ServicePort
	for _, w := range c.Spec.WebhookDefinitions {
		if w.DeploymentName != d.Name {
			continue
		}
		port := w.ContainerPort
		if port == 0 {
			port = 443
		}
		target := intstr.FromInt32(port)
		if w.TargetPort != nil {
			target = *w.TargetPort
		}
		p := corev1.ServicePort{Name: strconv.Itoa(int(port)), Port: port, TargetPort: target}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	if len(ports) > 0 {
		if spec.Selector == nil || len(spec.Selector.MatchLabels) == 0 {
			return nil, fmt.Errorf("deployment %s serves webhooks but has no matchLabels selector for OLM's Service", d.Name)
		}
		svc := ServiceName(d.Name)
		secret := SecretName(d.Name)
		owner := ownerLabels(c, in)
		o.Services = append(o.Services, &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: in.Namespace, Labels: maps.Clone(owner)},
			Spec:       corev1.ServiceSpec{Ports: ports, Selector: maps.Clone(spec.Selector.MatchLabels)},
		})
		o.Secrets = append(o.Secrets, &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: in.Namespace, Labels: maps.Clone(owner), Annotations: map[string]string{CAHashAnnotation: in.CAHash}},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: in.ServingCert, corev1.TLSPrivateKeyKey: in.ServingKey},
		})
		sa := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount(d), Namespace: in.Namespace}}
		o.Roles = append(o.Roles, &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: in.Namespace, Labels: maps.Clone(owner)},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{secret}, Verbs: []string{"get"}}},
		})
		o.RoleBindings = append(o.RoleBindings, &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: in.Namespace, Labels: maps.Clone(owner)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: secret},
			Subjects:   sa,
		})
		o.ClusterRoleBindings = append(o.ClusterRoleBindings, &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: svc + "-system:auth-delegator", Labels: maps.Clone(owner)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
			Subjects:   sa,
		})
		o.RoleBindings = append(o.RoleBindings, &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: svc + "-auth-reader", Namespace: metav1.NamespaceSystem, Labels: maps.Clone(owner)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
			Subjects:   sa,
		})
		addCertVolume(&spec, corev1.Volume{Name: APIServiceCertVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, Items: []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: "apiserver.crt"}, {Key: corev1.TLSPrivateKeyKey, Path: "apiserver.key"}},
		}}}, APIServiceCertDir)
		addCertVolume(&spec, corev1.Volume{Name: WebhookCertVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, Items: []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: corev1.TLSCertKey}, {Key: corev1.TLSPrivateKeyKey, Path: corev1.TLSPrivateKeyKey}},
		}}}, WebhookCertDir)
		spec.Template.Annotations[CAHashAnnotation] = in.CAHash
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: in.Namespace, Labels: labels},
		Spec:       spec,
	}, nil
}

// addCertVolume adds (or replaces, by name) a volume, and mounts it in every
// container unless the container mounts that volume already; a mount at the
// same path is replaced. This is what OLM does, which is why a bundle must
// not bring a volume of its own for that path: the mount is taken over and
// the volume is left dangling.
func addCertVolume(spec *appsv1.DeploymentSpec, volume corev1.Volume, mountPath string) {
	replaced := false
	for i, v := range spec.Template.Spec.Volumes {
		if v.Name == volume.Name {
			spec.Template.Spec.Volumes[i] = volume
			replaced = true
		}
	}
	if !replaced {
		spec.Template.Spec.Volumes = append(spec.Template.Spec.Volumes, volume)
	}
	mount := corev1.VolumeMount{Name: volume.Name, MountPath: mountPath}
	for i := range spec.Template.Spec.Containers {
		c := &spec.Template.Spec.Containers[i]
		found := false
		for j, m := range c.VolumeMounts {
			if m.Name == mount.Name {
				found = true
				break
			}
			if m.MountPath == mount.MountPath {
				c.VolumeMounts[j] = mount
				found = true
				break
			}
		}
		if !found {
			c.VolumeMounts = append(c.VolumeMounts, mount)
		}
	}
}

// webhookConfigName stands for the name OLM's generateName would produce:
// the definition's name, a dash and five characters, here derived from the
// CSV name so that renders are stable.
func webhookConfigName(c *csv.ClusterServiceVersion, w csv.WebhookDescription) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(c.Metadata.Name + "/" + w.GenerateName))
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	sum := h.Sum32()
	var b strings.Builder
	for range 5 {
		b.WriteByte(alphabet[sum%uint32(len(alphabet))])
		sum /= uint32(len(alphabet))
	}
	return w.GenerateName + "-" + b.String()
}

// namespaceSelector is the selector OLM gives webhooks: none for an
// AllNamespaces OperatorGroup, else the label OLM puts on its namespaces.
func namespaceSelector(in Install) *metav1.LabelSelector {
	if in.AllNamespaces() {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: map[string]string{"olm.operatorgroup.uid/" + in.OperatorGroupUID: ""}}
}

func renderWebhook(o *Objects, c *csv.ClusterServiceVersion, w csv.WebhookDescription, in Install) error {
	labels := ownerLabels(c, in)
	labels[WebhookDescriptionLabel] = w.GenerateName
	port := w.ContainerPort
	if port == 0 {
		port = 443
	}
	cc := admissionregistrationv1.WebhookClientConfig{
		Service: &admissionregistrationv1.ServiceReference{
			Name: ServiceName(w.DeploymentName), Namespace: in.Namespace, Path: w.WebhookPath, Port: new(port),
		},
		CABundle: in.CABundle,
	}
	meta := metav1.ObjectMeta{Name: webhookConfigName(c, w), Labels: labels}
	switch w.Type {
	case csv.MutatingAdmissionWebhook:
		o.MutatingWebhooks = append(o.MutatingWebhooks, &admissionregistrationv1.MutatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
			ObjectMeta: meta,
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: w.GenerateName, ClientConfig: cc, Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy,
				NamespaceSelector: namespaceSelector(in), ObjectSelector: w.ObjectSelector, SideEffects: w.SideEffects,
				TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions, ReinvocationPolicy: w.ReinvocationPolicy,
			}},
		})
	case csv.ValidatingAdmissionWebhook:
		o.ValidatingWebhooks = append(o.ValidatingWebhooks, &admissionregistrationv1.ValidatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
			ObjectMeta: meta,
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: w.GenerateName, ClientConfig: cc, Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy,
				NamespaceSelector: namespaceSelector(in), ObjectSelector: w.ObjectSelector, SideEffects: w.SideEffects,
				TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
			}},
		})
	case csv.ConversionWebhook:
		return renderConversion(o, w, cc)
	default:
		return fmt.Errorf("webhook %s: rendering %s webhooks is not supported", w.GenerateName, w.Type)
	}
	return nil
}

// renderConversion writes a conversion webhook into the CRDs it names, as
// OLM does: its Service, the definition's path and port, the CA bundle.
func renderConversion(o *Objects, w csv.WebhookDescription, cc admissionregistrationv1.WebhookClientConfig) error {
	service := map[string]any{"namespace": cc.Service.Namespace, "name": cc.Service.Name, "port": int64(*cc.Service.Port)}
	if cc.Service.Path != nil {
		service["path"] = *cc.Service.Path
	}
	clientConfig := map[string]any{"service": service}
	if len(cc.CABundle) > 0 {
		clientConfig["caBundle"] = base64.StdEncoding.EncodeToString(cc.CABundle)
	}
	versions := make([]any, 0, len(w.AdmissionReviewVersions))
	for _, v := range w.AdmissionReviewVersions {
		versions = append(versions, v)
	}
	conversion := map[string]any{"strategy": "Webhook", "webhook": map[string]any{
		"clientConfig": clientConfig, "conversionReviewVersions": versions,
	}}
	for _, name := range w.ConversionCRDs {
		i := slices.IndexFunc(o.Manifests, func(m *unstructured.Unstructured) bool {
			return m.GetKind() == "CustomResourceDefinition" && m.GetName() == name
		})
		if i < 0 {
			return fmt.Errorf("conversion webhook %s: the bundle has no CustomResourceDefinition %s", w.GenerateName, name)
		}
		if err := unstructured.SetNestedField(o.Manifests[i].Object, conversion, "spec", "conversion"); err != nil {
			return fmt.Errorf("conversion webhook %s: %w", w.GenerateName, err)
		}
	}
	return nil
}
