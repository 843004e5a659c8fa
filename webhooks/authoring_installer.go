package webhooks

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
)

// FieldOwner is the manager's field manager for server-side apply.
const FieldOwner = "sidecarset-operator"

// AuthoringPolicyInstaller applies the shipped SidecarSet authoring policy
// and its binding once, when the leader starts. It exists for OLM, whose
// bundles cannot carry admission policies (--install-authoring-policy; its
// RBAC is in config/manifests, not in config/default, which installs the
// policy itself).
//
// It uses server-side apply without forcing: a field an administrator has
// changed since (kubectl edit, another apply) is a conflict, and the
// administrator's version is kept; an absent object is created. To keep the
// policy from denying requests, change the binding's validationActions
// rather than deleting it: a deleted binding is created again at the next
// start.
type AuthoringPolicyInstaller struct {
	// Client writes the policy and the binding.
	Client client.Client
}

// NeedLeaderElection is true: one replica applies.
func (i *AuthoringPolicyInstaller) NeedLeaderElection() bool { return true }

// Start applies the policy and the binding, retrying failures with backoff
// for a few minutes; it never stops the manager (meanwhile the validating
// webhook enforces the policy).
func (i *AuthoringPolicyInstaller) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("authoring-policy")
	objects, err := authoring.Unstructured()
	if err != nil {
		return err
	}
	for _, obj := range objects {
		kv := []any{"kind", obj.GetKind(), "name", obj.GetName()}
		backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 9, Cap: time.Minute}
		err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			err := i.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner(FieldOwner))
			switch {
			case err == nil:
				log.Info("Applied the SidecarSet authoring policy", kv...)
				return true, nil
			case apierrors.IsConflict(err):
				log.Info("Kept the administrator's changes to the SidecarSet authoring policy", append(kv, "conflict", err.Error())...)
				return true, nil
			default:
				log.Error(err, "Applying the SidecarSet authoring policy", kv...)
				return false, nil
			}
		})
		if err != nil && ctx.Err() == nil {
			log.Error(err, "Gave up applying the SidecarSet authoring policy; the validating webhook enforces it meanwhile", kv...)
		}
	}
	return nil
}
