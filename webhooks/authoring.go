package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// The validating webhook checks whether the API server enforces the
// authoring policy (the policy and its binding exist), reading only those
// two objects; the authorizer asks the API server (SubjectAccessReviews,
// granted with the metrics endpoint's role) what the requesting user may do.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,resourceNames=sidecarset-operator-authoring,verbs=get;list;watch

// AuthoringPolicy enforces the SidecarSet authoring policy in the validating
// webhook wherever the API server does not: when the
// ValidatingAdmissionPolicy or its binding is missing. Where both exist the
// API server has already judged the request, with the policy as the
// administrator may have tuned it, and the webhook defers to it.
type AuthoringPolicy struct {
	// Policy is the shipped policy, compiled.
	Policy *authoring.Policy
	// Reader reads the policy and its binding (the cache).
	Reader client.Reader
	// Authorizer answers the policy's permission checks for the requesting
	// user.
	Authorizer authorizer.UnconditionalAuthorizer
	// Namespace is the operator's namespace, where the SidecarSets'
	// ControllerRevisions are (Reader reads them): a restore by the verb
	// rollback must put back one of them.
	Namespace string
}

// check returns nil if the request is allowed, or the error to deny it
// with.
func (a *AuthoringPolicy) check(ctx context.Context, s, old *appsv1beta1.SidecarSet) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	enforced, err := a.enforcedByAPIServer(ctx)
	if err != nil {
		// Judge the request here rather than let it through unjudged.
		ctrl.LoggerFrom(ctx).Error(err, "Reading the SidecarSet authoring policy; the webhook evaluates it")
	}
	r := authoring.Request{Operation: apiadmission.Operation(req.Operation), User: userInfo(req.UserInfo), DryRun: req.DryRun != nil && *req.DryRun}
	if s != nil {
		if r.Object, err = toUnstructured(s); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	if old != nil {
		if r.OldObject, err = toUnstructured(old); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	// A restore by the verb rollback (the on-call role) must put back what
	// the SidecarSet's recorded authority approved, which the policy cannot
	// check (it reads no revisions); a write that does not is judged as
	// anyone's, without the verb, here, wherever the policy is evaluated.
	authz := a.Authorizer
	why := "the policy or its binding is not installed"
	if s != nil && old != nil {
		restore, err := a.restoreError(ctx, r, s, old)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if restore != nil {
			authz, enforced = authoring.WithoutVerb(a.Authorizer, authoring.VerbRollback), false
			why = "without the verb rollback: " + restore.Error()
		}
	}
	if !enforced {
		denial, err := a.Policy.Evaluate(ctx, r, authz)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if denial != nil {
			// Worded as the API server words a policy's denial, saying who
			// judged and why.
			return denied(req.Name, denial, fmt.Sprintf(
				"ValidatingAdmissionPolicy '%s' (evaluated by the operator's webhook: %s) denied request: ", a.Policy.Name(), why))
		}
	}
	// The rights in each namespace the write reaches are checked here,
	// whoever evaluates the policy: the API server's CEL cost limits allow
	// a policy about 28 authorization checks per request.
	denial, err := a.Policy.CheckNamespaces(ctx, r, authz)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if denial != nil {
		return denied(req.Name, denial, "")
	}
	return nil
}

// restoreError returns, for a write the policy allows as a restore by the
// verb rollback, why it does not put back what the SidecarSet's recorded
// authority approved (authoring.CheckRestore against its revisions); nil
// for any other write, or a restore that does.
func (a *AuthoringPolicy) restoreError(ctx context.Context, r authoring.Request, s, old *appsv1beta1.SidecarSet) (reason, err error) {
	_, reason, err = a.judgeRestore(ctx, r, s, old)
	return reason, err
}

// judgeRestore reports whether the policy allows the write as a restore by
// the verb rollback and, if so, why it does not put back what the
// SidecarSet's recorded authority approved (authoring.CheckRestore against
// its revisions; nil when it does).
func (a *AuthoringPolicy) judgeRestore(ctx context.Context, r authoring.Request, s, old *appsv1beta1.SidecarSet) (restored bool, reason, err error) {
	if restored, err = a.Policy.RestoredByVerb(ctx, r, a.Authorizer); err != nil || !restored {
		return false, nil, err
	}
	revs, err := fieldindex.ListRevisions(ctx, a.Reader, a.Namespace, old.Name)
	if err != nil {
		return false, nil, err
	}
	return true, authoring.CheckRestore(old, s, revs), nil
}

// restores reports whether an update, as its author wrote it (the
// defaulting webhook's view: s is defaulted here as the API server will
// store it), is a restore by the verb rollback that puts back what the
// SidecarSet's recorded authority approved: the defaulting webhook then
// keeps the record, as the validating webhook judges the write by it.
func (a *AuthoringPolicy) restores(ctx context.Context, u user.Info, s, old *appsv1beta1.SidecarSet) (bool, error) {
	defaulted := s.DeepCopy()
	appsv1beta1.SetDefaults(defaulted)
	// The record as the write will keep it (a write may leave it out).
	if kept, had := old.Annotations[authority.Annotation]; had {
		metav1.SetMetaDataAnnotation(&defaulted.ObjectMeta, authority.Annotation, kept)
	} else {
		delete(defaulted.Annotations, authority.Annotation)
	}
	r := authoring.Request{Operation: apiadmission.Update, User: u}
	var err error
	if r.Object, err = toUnstructured(defaulted); err != nil {
		return false, err
	}
	if r.OldObject, err = toUnstructured(old); err != nil {
		return false, err
	}
	restored, reason, err := a.judgeRestore(ctx, r, defaulted, old)
	return restored && reason == nil, err
}

// denied is the refusal of a write of SidecarSet name, its message
// prefixed.
func denied(name string, denial *authoring.Denial, prefix string) error {
	status := apierrors.NewForbidden(sidecarSetsResource, name, errors.New(prefix+denial.Message))
	status.ErrStatus.Reason = denial.Reason
	status.ErrStatus.Code = statusCode(denial.Reason)
	return status
}

// enforcedByAPIServer reports whether the policy and a binding of it by the
// same name exist.
func (a *AuthoringPolicy) enforcedByAPIServer(ctx context.Context) (bool, error) {
	name := a.Policy.Name()
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	err := a.Reader.Get(ctx, client.ObjectKey{Name: name}, binding)
	if err != nil || binding.Spec.PolicyName != name {
		return false, client.IgnoreNotFound(err)
	}
	err = a.Reader.Get(ctx, client.ObjectKey{Name: name}, &admissionregistrationv1.ValidatingAdmissionPolicy{})
	return err == nil, client.IgnoreNotFound(err)
}

// statusCode is the HTTP code of a denial's reason, as the API server maps
// a policy's reason.
func statusCode(reason metav1.StatusReason) int32 {
	switch reason {
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusUnprocessableEntity
}

// sidecarSetsResource names SidecarSets in refusals.
var sidecarSetsResource = appsv1beta1.GroupVersion.WithResource("sidecarsets").GroupResource()

// checkCanaryBase refuses a canary SidecarSet, new or newly made a canary
// of this base, whose author lacks the
// authority over its base: a canary replaces its base's sidecars in the
// pods it selects (and takes them out of the base's detection of pods
// without its sidecars), so it needs what changing the base needs: to
// create pods in each namespace the base reaches by name, or
// inject-all-namespaces on the base. This is judged here, not in the
// authoring policy: the API server evaluates a policy on the object alone,
// and the base's reach is another object's.
func (a *AuthoringPolicy) checkCanaryBase(ctx context.Context, canary, base *appsv1beta1.SidecarSet) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	u := userInfo(req.UserInfo)
	allowed := func(attrs authorizer.AttributesRecord) (bool, error) {
		attrs.User, attrs.ResourceRequest = u, true
		decision, _, err := a.Authorizer.Authorize(ctx, attrs)
		return decision == authorizer.DecisionAllow, err
	}
	path := fmt.Sprintf("metadata.annotations[%s]", appsv1beta1.SidecarSetBaseAnnotation)
	refuse := func(lacks string) error {
		return apierrors.NewForbidden(sidecarSetsResource, canary.Name, fmt.Errorf(
			"%s: a canary of SidecarSet %q replaces its sidecars in the pods it selects, which needs the authority over %q: %s, which user %q does not have",
			path, base.Name, base.Name, lacks, u.GetName()))
	}
	names, every := authority.Namespaces(base)
	if every {
		ok, err := allowed(authorizer.AttributesRecord{Verb: authority.VerbAllNamespaces, APIGroup: appsv1beta1.GroupVersion.Group, Resource: "sidecarsets", Name: base.Name})
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if !ok {
			return refuse(fmt.Sprintf("permission to %s sidecarsets.apps.kruise.io %q", authority.VerbAllNamespaces, base.Name))
		}
		return nil
	}
	// As the base's own writes are judged: one question for every
	// namespace, then one per namespace.
	missing, err := authoring.Missing(ctx, authoring.Request{User: u},
		authoring.NamespaceCheck{Verb: "create", Resource: "pods", Namespaces: names}, a.Authorizer)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(missing) > 0 {
		return refuse(fmt.Sprintf("permission to create pods in namespace %q", missing[0]))
	}
	return nil
}

// toUnstructured gives the policy a SidecarSet as the API server would: its
// apps.kruise.io/v1beta1 form (the policy matches that version).
func toUnstructured(s *appsv1beta1.SidecarSet) (*unstructured.Unstructured, error) {
	typed := s.DeepCopy()
	typed.APIVersion, typed.Kind = appsv1beta1.GroupVersion.String(), "SidecarSet"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, fmt.Errorf("converting the SidecarSet: %w", err)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

func userInfo(u authenticationv1.UserInfo) user.Info {
	extra := make(map[string][]string, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = v
	}
	return &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra}
}
