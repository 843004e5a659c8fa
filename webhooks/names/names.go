// Package names holds the names the operator's webhooks are known by: their
// paths, the webhook configurations and the webhooks in them, the CRD whose
// conversion they serve, and the certificate sources. The manager, the
// kubectl plugin and the build tools (hack/) share them; the package
// imports nothing, so that naming a webhook links none of the server.
//
// The webhook configurations are generated from the markers below into
// config/webhook by controller-gen.
//
// Pod injection runs on pod CREATE only, has a short timeout, is safe to
// re-invoke after other mutating webhooks, and never sees the operator's own
// pods in its namespace (the scope leaves them out; the OLM bundle, whose
// webhook definitions cannot carry a condition, adds an objectSelector on
// their label for the time before the scope is written, and the scope write
// drops it). It is two webhooks on the same handler, each called only for the
// pods its matchCondition selects (package webhooks/scope, kept current by the
// pod-webhook-scope controller, webhooks/podscope):
//
//   - mpod (failurePolicy Fail): pods a required SidecarSet selects. If the
//     operator is unreachable, those pods are refused: a required sidecar
//     is never missing.
//   - mpod-best-effort (failurePolicy Ignore, 1 s timeout): pods only
//     best-effort SidecarSets select. If the operator is unreachable, those
//     pods are admitted without them.
//
// Both are installed with the condition "false" (no pod): a fresh install
// sends no pod to the webhooks before the operator has written their scope,
// which it does before serving.
//
// +kubebuilder:webhookconfiguration:mutating=true,name=sidecarset-operator-mutating
// +kubebuilder:webhookconfiguration:mutating=false,name=sidecarset-operator-validating
// +kubebuilder:webhook:path=/mutate-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mpod.sidecarset-operator.dev,admissionReviewVersions=v1,timeoutSeconds=3,reinvocationPolicy=IfNeeded,matchPolicy=Equivalent,serviceName=sidecarset-operator-webhook,serviceNamespace=kruise-system,patch=`{"matchConditions":[{"name":"sidecarset-selectors","expression":"false"}]}`
// +kubebuilder:webhook:path=/mutate-pod,mutating=true,failurePolicy=ignore,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mpod-best-effort.sidecarset-operator.dev,admissionReviewVersions=v1,timeoutSeconds=1,reinvocationPolicy=IfNeeded,matchPolicy=Equivalent,serviceName=sidecarset-operator-webhook,serviceNamespace=kruise-system,patch=`{"matchConditions":[{"name":"sidecarset-selectors","expression":"false"}]}`
// +kubebuilder:webhook:path=/mutate-apps-kruise-io-sidecarset,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=sidecarsets,verbs=create;update,versions=v1alpha1;v1beta1,name=msidecarset.sidecarset-operator.dev,admissionReviewVersions=v1,timeoutSeconds=10,serviceName=sidecarset-operator-webhook,serviceNamespace=kruise-system
// +kubebuilder:webhook:path=/validate-apps-kruise-io-sidecarset,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=sidecarsets,verbs=create;update;delete,versions=v1alpha1;v1beta1,name=vsidecarset.sidecarset-operator.dev,admissionReviewVersions=v1,timeoutSeconds=10,serviceName=sidecarset-operator-webhook,serviceNamespace=kruise-system
package names

// Paths of the webhooks. The SidecarSet ones are OpenKruise 1.9's, one for
// both versions; the server also answers at the v1alpha1 paths of earlier
// releases, so that configurations written by them keep working during an
// upgrade. The conversion webhook serves the CRD's conversion between
// v1alpha1 and v1beta1.
const (
	PodInjectionPath             = "/mutate-pod"
	SidecarSetDefaultPath        = "/mutate-apps-kruise-io-sidecarset"
	SidecarSetValidatePath       = "/validate-apps-kruise-io-sidecarset"
	LegacySidecarSetDefaultPath  = "/mutate-apps-kruise-io-v1alpha1-sidecarset"
	LegacySidecarSetValidatePath = "/validate-apps-kruise-io-v1alpha1-sidecarset"
	ConversionPath               = "/convert"
)

// RoutedPaths are the paths the shipped configurations route to (the
// webhook configurations and the CRD's conversion); the server also answers
// at the legacy paths.
func RoutedPaths() []string {
	return []string{PodInjectionPath, SidecarSetDefaultPath, SidecarSetValidatePath, ConversionPath}
}

// The shipped webhook configurations.
const (
	MutatingConfigName   = "sidecarset-operator-mutating"
	ValidatingConfigName = "sidecarset-operator-validating"
)

// Names of the webhooks in the mutating webhook configuration.
const (
	// PodWebhookName is the failurePolicy Fail pod webhook: required
	// SidecarSets.
	PodWebhookName = "mpod.sidecarset-operator.dev"
	// PodBestEffortWebhookName is the failurePolicy Ignore pod webhook:
	// best-effort SidecarSets.
	PodBestEffortWebhookName = "mpod-best-effort.sidecarset-operator.dev"
	// SidecarSetWebhookName is the SidecarSet defaulting webhook: the CRD's
	// conversion webhook is reached where it is.
	SidecarSetWebhookName = "msidecarset.sidecarset-operator.dev"
)

// OLMWebhookLabel is the label OLM puts on each webhook configuration it
// creates from a CSV webhook definition, with the webhook's name as value.
// OLM generates the configurations' names, so they are found by it.
const OLMWebhookLabel = "olm.webhook-description-generate-name"

// SidecarSetCRDName is the name of the SidecarSet CRD.
const SidecarSetCRDName = "sidecarsets.apps.kruise.io"

// Certificate sources of the webhook server.
const (
	// CertSourceSelf generates, rotates and injects the certificates
	// (open-policy-agent/cert-controller): a CA and a serving certificate in a
	// Secret, the CA bundle patched into the webhook configurations.
	CertSourceSelf = "self"
	// CertSourceExternal serves the certificate someone else mounts in the
	// certificate directory (OLM, cert-manager), hot-reloaded on change.
	CertSourceExternal = "external"
)

// FieldOwner is the manager's field manager for the objects it writes.
const FieldOwner = "sidecarset-operator"
