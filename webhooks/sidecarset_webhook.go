package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
	sidecarsetvalidation "github.com/sidecarset-operator/sidecarset-operator/webhooks/validation"
)

// SidecarSetDefaulter fills in a SidecarSet's defaults and records its two
// hashes in the kruise.io/sidecarset-hash annotations, exactly as OpenKruise
// does, in the version of the request (v1alpha1 or v1beta1). The controller
// never trusts these annotations (it recomputes the hashes from the spec);
// they are written for compatibility.
//
// It also records the authority the SidecarSet's sidecars act with
// (authority.Annotation): on a create, and on an update that changes what
// is injected or where, the custom verbs the requesting user holds on it;
// other updates keep the record, and so does a restore by the verb rollback
// (AuthoringPolicy.restores). Only this webhook writes it: a create that
// sets it, or an update that changes it, is refused.
//
// It also records the UIDs of the namespaces the SidecarSet names one by
// one, and of a canary's base, as they are when the write is judged
// (identities): a SidecarSet applies only in those namespaces, a canary
// replaces only that base (api/match).
type SidecarSetDefaulter struct {
	// Authorizer answers which verbs the requesting user holds.
	Authorizer authorizer.UnconditionalAuthorizer
	// Reader reads namespaces (metadata) and SidecarSets: the cache.
	Reader client.Reader
	// LiveReader reads a namespace the cache does not have yet: the API
	// server.
	LiveReader client.Reader
	// Restores recognizes a restore by the verb rollback, which keeps the
	// record (the on-call role goes back to what the recorded authority
	// approved, without raising or lowering it); nil: every update that
	// changes what is injected records its author's verbs.
	Restores *AuthoringPolicy
}

var _ admission.Handler = SidecarSetDefaulter{}

// Handle answers a CREATE or UPDATE of a SidecarSet with the patch that
// defaults it.
func (d SidecarSetDefaulter) Handle(ctx context.Context, req admission.Request) admission.Response {
	record, err := d.record(ctx, req)
	if err != nil {
		return response(nil, err)
	}
	hub, _, _, err := DecodeSidecarSet(req.Kind.Version, req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	ids, err := d.identities(ctx, req, hub)
	if err != nil {
		return response(nil, err)
	}
	var obj runtime.Object
	switch req.Kind.Version {
	case appsv1alpha1.GroupVersion.Version:
		s := &appsv1alpha1.SidecarSet{}
		if err := json.Unmarshal(req.Object.Raw, s); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		appsv1alpha1.SetDefaults(s)
		if err := annotateHashes(&s.ObjectMeta, s.Spec.Containers, s.Spec.InitContainers); err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		setRecord(&s.ObjectMeta, record)
		ids.set(&s.ObjectMeta)
		obj = s
	case appsv1beta1.GroupVersion.Version:
		s := &appsv1beta1.SidecarSet{}
		if err := json.Unmarshal(req.Object.Raw, s); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		appsv1beta1.SetDefaults(s)
		if err := annotateHashes(&s.ObjectMeta, s.Spec.Containers, s.Spec.InitContainers); err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		setRecord(&s.ObjectMeta, record)
		ids.set(&s.ObjectMeta)
		obj = s
	default:
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("unsupported SidecarSet version %q", req.Kind.Version))
	}
	defaulted, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, defaulted)
}

// record returns the authority record the SidecarSet gets (nil: none, a
// SidecarSet written before the operator that keeps its behavior), or the
// error refusing a user's own record.
func (d SidecarSetDefaulter) record(ctx context.Context, req admission.Request) (*string, error) {
	s, _, _, err := DecodeSidecarSet(req.Kind.Version, req.Object.Raw)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	written, set := s.Annotations[authority.Annotation]
	field := field.NewPath("metadata", "annotations").Key(authority.Annotation)
	refuse := func(detail string) error {
		return apierrors.NewForbidden(sidecarSetsResource, s.Name,
			fmt.Errorf("%s: %s; only the operator writes it, from the permissions of whoever changes what the SidecarSet injects", field, detail))
	}
	if req.Operation == admissionv1.Update {
		old, _, _, err := DecodeSidecarSet(req.Kind.Version, req.OldObject.Raw)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		kept, had := old.Annotations[authority.Annotation]
		if set && (!had || written != kept) {
			return nil, refuse("the request changes it; remove it from the object you write")
		}
		keep := !authority.ContentChanged(old, s)
		if !keep && d.Restores != nil {
			if keep, err = d.Restores.restores(ctx, userInfo(req.UserInfo), s, old); err != nil {
				return nil, apierrors.NewInternalError(err)
			}
		}
		if keep {
			if !had {
				return nil, nil
			}
			return &kept, nil
		}
	}
	verbs, err := d.verbs(ctx, req, s.Name)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	formatted := authority.Format(verbs)
	if req.Operation != admissionv1.Update && set && written != formatted {
		// A copy of a SidecarSet written by the same user carries the
		// record the operator writes anyway; any other value is refused.
		return nil, refuse(fmt.Sprintf("a new SidecarSet may not carry it (the operator records %q, the verbs you hold); remove it", formatted))
	}
	return &formatted, nil
}

// verbs asks the authorizer which custom verbs the requesting user holds on
// the SidecarSet.
func (d SidecarSetDefaulter) verbs(ctx context.Context, req admission.Request, name string) (authority.Verbs, error) {
	if d.Authorizer == nil {
		return authority.None, errors.New("no authorizer to record the SidecarSet's authority with")
	}
	u := userInfo(req.UserInfo)
	var held authority.Verbs
	for _, v := range authority.All.Names() {
		decision, _, err := d.Authorizer.Authorize(ctx, authorizer.AttributesRecord{
			User: u, Verb: v, APIGroup: appsv1beta1.GroupVersion.Group, Resource: "sidecarsets", Name: name, ResourceRequest: true,
		})
		if err != nil {
			return authority.None, fmt.Errorf("checking %s for user %q: %w", v, u.GetName(), err)
		}
		if decision == authorizer.DecisionAllow {
			verb, _ := authority.Parse(v)
			held |= verb
		}
	}
	return held, nil
}

// setRecord writes the authority record on the object written, or removes
// one (nil).
func setRecord(meta *metav1.ObjectMeta, record *string) {
	if record == nil {
		delete(meta.Annotations, authority.Annotation)
		return
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[authority.Annotation] = *record
}

// annotateHashes records the sidecars' two hashes on the SidecarSet.
func annotateHashes(meta *metav1.ObjectMeta, containers, initContainers []appsv1beta1.SidecarContainer) error {
	hashes, err := appsv1beta1.ComputeHashes(&appsv1beta1.SidecarSetSpec{Containers: containers, InitContainers: initContainers})
	if err != nil {
		return err
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[appsv1beta1.SidecarSetHashAnnotation] = hashes.Hash
	meta.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation] = hashes.WithoutImage
	return nil
}

// SidecarSetValidator validates SidecarSets beyond what the CRD schema can,
// in either version, on the v1beta1 form (as OpenKruise 1.9 does: a
// v1alpha1 object is converted first): the authoring policy where the API
// server does not enforce it (policy/authoring), Go checks (pure,
// webhooks/validation), the compiled CEL rules and the patchPodMetadata
// whitelist (policy), and conflicts with the other SidecarSets.
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

var _ admission.Handler = &SidecarSetValidator{}

// Handle validates a CREATE or UPDATE of a SidecarSet; other operations
// are allowed.
func (v *SidecarSetValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	// The authoring policy reads the request (its user) from the context.
	ctx = admission.NewContextWithRequest(ctx, req)
	var operation string
	switch req.Operation {
	case admissionv1.Create:
		operation = "create"
	case admissionv1.Update:
		operation = "update"
	case admissionv1.Delete:
		return v.validateDelete(ctx, req)
	default:
		return admission.Allowed("")
	}
	s, warnings, errs, err := DecodeSidecarSet(req.Kind.Version, req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var old *appsv1beta1.SidecarSet
	if req.Operation == admissionv1.Update {
		if old, _, _, err = DecodeSidecarSet(req.Kind.Version, req.OldObject.Raw); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	more, err := v.validate(ctx, s, old, errs, operation)
	return response(append(warnings, more...), err)
}

// validateDelete judges a delete by the authoring policy, where the API
// server does not.
func (v *SidecarSetValidator) validateDelete(ctx context.Context, req admission.Request) admission.Response {
	if v.Authoring == nil {
		return admission.Allowed("")
	}
	old, _, _, err := DecodeSidecarSet(req.Kind.Version, req.OldObject.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if err := v.Authoring.check(ctx, nil, old); err != nil {
		metrics.SidecarSetRejections.WithLabelValues("delete").Inc()
		return response(nil, err)
	}
	return admission.Allowed("")
}

// response is the admission answer: allowed with the warnings, or refused
// with the error's status.
func response(warnings []string, err error) admission.Response {
	if err == nil {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
			Allowed: false, Result: new(status.Status()), Warnings: warnings,
		}}
	}
	return admission.Errored(http.StatusInternalServerError, err).WithWarnings(warnings...)
}

// DecodeSidecarSet decodes a SidecarSet written in the given version into
// its v1beta1 form, as the API server's conversion does, with the warnings
// and errors that belong to what was written: in v1alpha1, a namespace that
// is not a namespace name, or a namespaceSelector that spec.namespace
// overrides; in v1beta1, the v1alpha1 custom-version label that v1beta1
// ignores.
func DecodeSidecarSet(version string, raw []byte) (*appsv1beta1.SidecarSet, []string, field.ErrorList, error) {
	hub := &appsv1beta1.SidecarSet{}
	var warnings []string
	var errs field.ErrorList
	switch version {
	case appsv1alpha1.GroupVersion.Version:
		s := &appsv1alpha1.SidecarSet{}
		if err := json.Unmarshal(raw, s); err != nil {
			return nil, nil, nil, fmt.Errorf("decoding the SidecarSet: %w", err)
		}
		if ns := s.Spec.Namespace; ns != "" {
			for _, msg := range validation.IsDNS1123Label(ns) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "namespace"), ns, msg))
			}
			if s.Spec.NamespaceSelector != nil {
				warnings = append(warnings, fmt.Sprintf("spec.namespaceSelector is dropped: spec.namespace %q wins "+
					"(it is stored as the namespaceSelector {matchLabels: {%s: %s}}); remove one of them", ns, appsv1beta1.NamespaceNameLabel, ns))
			}
		}
		if err := s.ConvertTo(hub); err != nil {
			return nil, nil, nil, err
		}
	case appsv1beta1.GroupVersion.Version:
		if err := json.Unmarshal(raw, hub); err != nil {
			return nil, nil, nil, fmt.Errorf("decoding the SidecarSet: %w", err)
		}
		if label, ok := hub.Labels[appsv1beta1.SidecarSetCustomVersionLabel]; ok && label != hub.Spec.CustomVersion {
			warnings = append(warnings, fmt.Sprintf("metadata.labels[%s]: the label is ignored in apps.kruise.io/v1beta1, where spec.customVersion (%q) "+
				"is the custom version; set spec.customVersion instead", appsv1beta1.SidecarSetCustomVersionLabel, hub.Spec.CustomVersion))
		}
	default:
		return nil, nil, nil, fmt.Errorf("unsupported SidecarSet version %q", version)
	}
	return hub, warnings, errs, nil
}

func (v *SidecarSetValidator) validate(ctx context.Context, s, old *appsv1beta1.SidecarSet, errs field.ErrorList, operation string) ([]string, error) {
	// Who may inject what comes first, as where the API server evaluates
	// the policy (before any webhook).
	if v.Authoring != nil {
		if err := v.Authoring.check(ctx, s, old); err != nil {
			metrics.SidecarSetRejections.WithLabelValues(operation).Inc()
			return nil, err
		}
	}
	list := &appsv1beta1.SidecarSetList{}
	if err := v.Reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	others := make([]*appsv1beta1.SidecarSet, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].Name != s.Name {
			others = append(others, &list.Items[i])
		}
	}
	// A canary is judged against the base it records (the mutating
	// webhook's record of the base as it is now) when it is created and
	// whenever that record changes: the base was deleted and created again
	// since. A missing base is refused below (validateCanary: create the
	// base first).
	if base := match.CanaryBase(s); base != "" && canaryJudged(s, old) {
		if i := slices.IndexFunc(others, func(o *appsv1beta1.SidecarSet) bool { return o.Name == base }); i >= 0 {
			err := checkRecordedBase(s, others[i])
			if err == nil && v.Authoring != nil {
				err = v.Authoring.checkCanaryBase(ctx, s, others[i])
			}
			if err != nil {
				metrics.SidecarSetRejections.WithLabelValues(operation).Inc()
				return nil, err
			}
		}
	}
	_, pinErr := lookup.PinnedRevision(ctx, v.Reader, v.Namespace, s)

	specErrs, warnings := sidecarsetvalidation.ValidateSidecarSet(s, old, sidecarsetvalidation.Options{Others: others, PinnedRevisionError: pinErr, Namespace: v.Namespace})
	errs = append(errs, specErrs...)
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
		metrics.SidecarSetRejections.WithLabelValues(operation).Inc()
		slices.SortStableFunc(errs, func(a, b *field.Error) int {
			switch {
			case a.Field < b.Field:
				return -1
			case a.Field > b.Field:
				return 1
			}
			return 0
		})
		return warnings, apierrors.NewInvalid(appsv1beta1.GroupVersion.WithKind("SidecarSet").GroupKind(), s.Name, errs)
	}
	return warnings, nil
}
