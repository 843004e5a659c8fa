// Package csv holds the ClusterServiceVersion (operators.coreos.com/v1alpha1)
// as far as this project's bundle tooling reads and writes it. The
// operator-framework API module is not available from the module proxy, so the
// schema is restated here from the OLM documentation: field names and JSON
// tags follow the published CSV format, the embedded Kubernetes types are the
// upstream ones.
package csv

import (
	"encoding/json"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Identity of the kind.
const (
	APIVersion = "operators.coreos.com/v1alpha1"
	Kind       = "ClusterServiceVersion"
	// InstallStrategyDeployment is the only install strategy OLM knows.
	InstallStrategyDeployment = "deployment"
)

// Install mode types.
const (
	InstallModeOwnNamespace    = "OwnNamespace"
	InstallModeSingleNamespace = "SingleNamespace"
	InstallModeMultiNamespace  = "MultiNamespace"
	InstallModeAllNamespaces   = "AllNamespaces"
)

// Webhook description types.
const (
	ValidatingAdmissionWebhook = "ValidatingAdmissionWebhook"
	MutatingAdmissionWebhook   = "MutatingAdmissionWebhook"
	ConversionWebhook          = "ConversionWebhook"
)

// Well-known metadata annotations of a CSV.
const (
	AnnotationALMExamples    = "alm-examples"
	AnnotationCapabilities   = "capabilities"
	AnnotationCategories     = "categories"
	AnnotationContainerImage = "containerImage"
	AnnotationCreatedAt      = "createdAt"
	AnnotationDescription    = "description"
	AnnotationRepository     = "repository"
	AnnotationSupport        = "support"
)

// ClusterServiceVersion tells OLM how to install, describe and upgrade one
// version of an operator.
type ClusterServiceVersion struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata is the part of ObjectMeta a CSV in a bundle carries.
type Metadata struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// Spec is the CSV specification.
type Spec struct {
	DisplayName               string                    `json:"displayName"`
	Description               string                    `json:"description,omitempty"`
	Version                   string                    `json:"version"`
	Replaces                  string                    `json:"replaces,omitempty"`
	Skips                     []string                  `json:"skips,omitempty"`
	Maturity                  string                    `json:"maturity,omitempty"`
	MinKubeVersion            string                    `json:"minKubeVersion,omitempty"`
	Keywords                  []string                  `json:"keywords,omitempty"`
	Maintainers               []Maintainer              `json:"maintainers,omitempty"`
	Provider                  Provider                  `json:"provider"`
	Links                     []Link                    `json:"links,omitempty"`
	Icon                      []Icon                    `json:"icon,omitempty"`
	Labels                    map[string]string         `json:"labels,omitempty"`
	Selector                  *metav1.LabelSelector     `json:"selector,omitempty"`
	InstallModes              []InstallMode             `json:"installModes,omitempty"`
	CustomResourceDefinitions CustomResourceDefinitions `json:"customresourcedefinitions,omitzero"`
	APIServiceDefinitions     *json.RawMessage          `json:"apiservicedefinitions,omitempty"`
	NativeAPIs                []metav1.GroupVersionKind `json:"nativeAPIs,omitempty"`
	Install                   Install                   `json:"install"`
	WebhookDefinitions        []WebhookDescription      `json:"webhookdefinitions,omitempty"`
	RelatedImages             []RelatedImage            `json:"relatedImages,omitempty"`
}

// Maintainer is a person or team to contact.
type Maintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

// Provider is the organisation that publishes the operator.
type Provider struct {
	Name string `json:"name,omitempty"`
	URL  string `json:"url,omitempty"`
}

// Link is a named URL shown on the operator's page.
type Link struct {
	Name string `json:"name,omitempty"`
	URL  string `json:"url,omitempty"`
}

// Icon is the operator's logo, base64-encoded.
type Icon struct {
	Data      string `json:"base64data"`
	MediaType string `json:"mediatype"`
}

// InstallMode says whether the operator supports one kind of OperatorGroup.
type InstallMode struct {
	Type      string `json:"type"`
	Supported bool   `json:"supported"`
}

// CustomResourceDefinitions lists the APIs the operator owns and requires.
type CustomResourceDefinitions struct {
	Owned    []CRDDescription `json:"owned,omitempty"`
	Required []CRDDescription `json:"required,omitempty"`
}

// CRDDescription describes one API to OLM and to consoles.
type CRDDescription struct {
	Name              string                 `json:"name"`
	Version           string                 `json:"version"`
	Kind              string                 `json:"kind"`
	DisplayName       string                 `json:"displayName,omitempty"`
	Description       string                 `json:"description,omitempty"`
	Resources         []APIResourceReference `json:"resources,omitempty"`
	SpecDescriptors   []Descriptor           `json:"specDescriptors,omitempty"`
	StatusDescriptors []Descriptor           `json:"statusDescriptors,omitempty"`
	ActionDescriptors []Descriptor           `json:"actionDescriptors,omitempty"`
}

// APIResourceReference names a Kubernetes resource an API creates or uses.
type APIResourceReference struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// Descriptor tells a console how to show one field of an API.
type Descriptor struct {
	Path         string          `json:"path"`
	DisplayName  string          `json:"displayName,omitempty"`
	Description  string          `json:"description,omitempty"`
	XDescriptors []string        `json:"x-descriptors,omitempty"`
	Value        json.RawMessage `json:"value,omitempty"`
}

// Install is the install strategy.
type Install struct {
	Strategy string          `json:"strategy"`
	Spec     InstallStrategy `json:"spec,omitzero"`
}

// InstallStrategy is the deployment install strategy: the Deployments OLM
// creates and the RBAC it grants to their service accounts.
type InstallStrategy struct {
	Deployments        []DeploymentSpec `json:"deployments"`
	Permissions        []Permissions    `json:"permissions,omitempty"`
	ClusterPermissions []Permissions    `json:"clusterPermissions,omitempty"`
}

// DeploymentSpec is one Deployment OLM creates in the install namespace.
type DeploymentSpec struct {
	Name  string                `json:"name"`
	Spec  appsv1.DeploymentSpec `json:"spec"`
	Label map[string]string     `json:"label,omitempty"`
}

// Permissions are the RBAC rules granted to one service account: in the
// install namespace (permissions) or cluster-wide (clusterPermissions).
type Permissions struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	Rules              []rbacv1.PolicyRule `json:"rules"`
}

// WebhookDescription is an admission or conversion webhook OLM registers,
// served by one of the CSV's deployments behind a Service OLM creates.
type WebhookDescription struct {
	GenerateName            string                                          `json:"generateName"`
	Type                    string                                          `json:"type"`
	DeploymentName          string                                          `json:"deploymentName,omitempty"`
	ContainerPort           int32                                           `json:"containerPort,omitempty"`
	TargetPort              *intstr.IntOrString                             `json:"targetPort,omitempty"`
	Rules                   []admissionregistrationv1.RuleWithOperations    `json:"rules,omitempty"`
	FailurePolicy           *admissionregistrationv1.FailurePolicyType      `json:"failurePolicy,omitempty"`
	MatchPolicy             *admissionregistrationv1.MatchPolicyType        `json:"matchPolicy,omitempty"`
	ObjectSelector          *metav1.LabelSelector                           `json:"objectSelector,omitempty"`
	SideEffects             *admissionregistrationv1.SideEffectClass        `json:"sideEffects"`
	TimeoutSeconds          *int32                                          `json:"timeoutSeconds,omitempty"`
	AdmissionReviewVersions []string                                        `json:"admissionReviewVersions"`
	ReinvocationPolicy      *admissionregistrationv1.ReinvocationPolicyType `json:"reinvocationPolicy,omitempty"`
	WebhookPath             *string                                         `json:"webhookPath,omitempty"`
	ConversionCRDs          []string                                        `json:"conversionCRDs,omitempty"`
}

// RelatedImage is an image the operator uses, for disconnected mirroring.
type RelatedImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}
