package webhooks

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/validation"
)

// SidecarSetDefaulter fills in a SidecarSet's defaults and records its two
// hashes in the kruise.io/sidecarset-hash annotations, exactly as OpenKruise
// does. The controller never trusts these annotations (it recomputes the
// hashes from the spec); they are written for compatibility.
type SidecarSetDefaulter struct{}

var _ admission.Defaulter[*appsv1alpha1.SidecarSet] = SidecarSetDefaulter{}

// Default defaults the SidecarSet in place.
func (SidecarSetDefaulter) Default(_ context.Context, s *appsv1alpha1.SidecarSet) error {
	appsv1alpha1.SetDefaults(s)
	hashes, err := appsv1alpha1.ComputeHashes(&s.Spec)
	if err != nil {
		return err
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[appsv1alpha1.SidecarSetHashAnnotation] = hashes.Hash
	s.Annotations[appsv1alpha1.SidecarSetHashWithoutImageAnnotation] = hashes.WithoutImage
	return nil
}

// SidecarSetValidator validates SidecarSets beyond what the CRD schema can:
// the authoring policy where the API server does not enforce it
// (policy/authoring), Go checks (pure, webhooks/validation), the compiled
// CEL rules and the patchPodMetadata whitelist (policy), and conflicts with
// the other SidecarSets.
type SidecarSetValidator struct {
	// Reader is the cache: SidecarSets and ControllerRevisions.
	Reader client.Reader
	// Namespace is the operator's namespace (ControllerRevisions).
	Namespace string
	// Rules are the compiled CEL rules.
	Rules *policy.Rules
	// Whitelist holds the current patchPodMetadata whitelist.
	Whitelist *policy.Store
	// PatchMetadataDefaultsAllowed is the SidecarSetPatchPodMetadataDefaultsAllowed gate.
	PatchMetadataDefaultsAllowed bool
	// Authoring enforces the authoring policy where the API server does
	// not; nil skips it.
	Authoring *AuthoringPolicy
}

var _ admission.Validator[*appsv1alpha1.SidecarSet] = &SidecarSetValidator{}

// ValidateCreate validates a new SidecarSet.
func (v *SidecarSetValidator) ValidateCreate(ctx context.Context, s *appsv1alpha1.SidecarSet) (admission.Warnings, error) {
	return v.validate(ctx, s, nil, "create")
}

// ValidateUpdate validates a changed SidecarSet.
func (v *SidecarSetValidator) ValidateUpdate(ctx context.Context, old, s *appsv1alpha1.SidecarSet) (admission.Warnings, error) {
	return v.validate(ctx, s, old, "update")
}

// ValidateDelete allows every deletion.
func (v *SidecarSetValidator) ValidateDelete(context.Context, *appsv1alpha1.SidecarSet) (admission.Warnings, error) {
	return nil, nil
}

func (v *SidecarSetValidator) validate(ctx context.Context, s, old *appsv1alpha1.SidecarSet, operation string) (admission.Warnings, error) {
	// Who may inject what comes first, as where the API server evaluates
	// the policy (before any webhook).
	if v.Authoring != nil {
		if err := v.Authoring.check(ctx); err != nil {
			sidecarSetRejections.WithLabelValues(operation).Inc()
			return nil, err
		}
	}
	list := &appsv1alpha1.SidecarSetList{}
	if err := v.Reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	others := make([]*appsv1alpha1.SidecarSet, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].Name != s.Name {
			others = append(others, &list.Items[i])
		}
	}
	_, pinErr := lookup.PinnedRevision(ctx, v.Reader, v.Namespace, s)

	errs, warnings := validation.ValidateSidecarSet(s, old, validation.Options{Others: others, PinnedRevisionError: pinErr, Namespace: v.Namespace})
	ruleErrs, ruleWarnings, err := v.Rules.Validate(ctx, s, old)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(errs, ruleErrs...)
	warnings = append(warnings, ruleWarnings...)
	if len(s.Spec.PatchPodMetadata) > 0 {
		errs = append(errs, v.Whitelist.Current().Check(v.PatchMetadataDefaultsAllowed, s)...)
	}
	if len(errs) > 0 {
		sidecarSetRejections.WithLabelValues(operation).Inc()
		slices.SortStableFunc(errs, func(a, b *field.Error) int {
			switch {
			case a.Field < b.Field:
				return -1
			case a.Field > b.Field:
				return 1
			}
			return 0
		})
		return warnings, apierrors.NewInvalid(appsv1alpha1.GroupVersion.WithKind("SidecarSet").GroupKind(), s.Name, errs)
	}
	return warnings, nil
}
