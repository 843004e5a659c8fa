// Package authoringpolicy installs the shipped SidecarSet authoring policy
// (policy/authoring) and its binding where the install's manifests cannot
// carry them.
package authoringpolicy

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// Installer installs the shipped SidecarSet authoring policy
// and its binding once, when the leader starts. It exists for OLM, whose
// bundles cannot carry admission policies (--install-authoring-policy; its
// RBAC is in config/manifests, not in config/default, which installs the
// policy itself).
//
// A missing object is created. An object only the manager has written is
// brought to this version's content (an upgrade). An object whose spec
// someone else has changed (kubectl edit, apply) is left as it is: the
// administrator has tuned it. To stop the policy from denying requests,
// change the binding's validationActions rather than deleting it: a deleted
// binding is created again at the next start.
type Installer struct {
	// Client reads and writes the policy and the binding.
	Client client.Client
}

// NeedLeaderElection is true: one replica installs.
func (i *Installer) NeedLeaderElection() bool { return true }

// Start installs the policy and the binding, retrying failures with backoff
// for a few minutes; it never stops the manager (meanwhile the validating
// webhook enforces the policy).
func (i *Installer) Start(ctx context.Context) error {
	policy, binding, err := authoring.Manifests()
	if err != nil {
		return err
	}
	i.installWithRetries(ctx, policy, &admissionregistrationv1.ValidatingAdmissionPolicy{}, func(current client.Object) {
		current.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec = policy.Spec
	})
	i.installWithRetries(ctx, binding, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, func(current client.Object) {
		current.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec = binding.Spec
	})
	return nil
}

// errChangedByAdministrator says an object was left as an administrator
// changed it.
var errChangedByAdministrator = errors.New("the spec was changed by another field manager")

func (i *Installer) installWithRetries(ctx context.Context, shipped, current client.Object, copySpec func(client.Object)) {
	log := ctrl.LoggerFrom(ctx).WithName("authoring-policy")
	kv := []any{"kind", shipped.GetObjectKind().GroupVersionKind().Kind, "name", shipped.GetName()}
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 9, Cap: time.Minute}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		err := i.install(ctx, shipped, current, copySpec)
		switch {
		case err == nil:
			log.Info("Installed the SidecarSet authoring policy", kv...)
			return true, nil
		case errors.Is(err, errChangedByAdministrator):
			log.Info("Kept the administrator's changes to the SidecarSet authoring policy", kv...)
			return true, nil
		default:
			log.Error(err, "Installing the SidecarSet authoring policy", kv...)
			return false, nil
		}
	})
	if err != nil && ctx.Err() == nil {
		log.Error(err, "Gave up installing the SidecarSet authoring policy; the validating webhook enforces it meanwhile", kv...)
	}
}

// install creates the shipped object, or updates current (read into it) to
// the shipped spec while only the manager has written its spec.
func (i *Installer) install(ctx context.Context, shipped, current client.Object, copySpec func(client.Object)) error {
	err := i.Client.Get(ctx, client.ObjectKeyFromObject(shipped), current)
	if apierrors.IsNotFound(err) {
		return i.Client.Create(ctx, shipped.DeepCopyObject().(client.Object), client.FieldOwner(names.FieldOwner))
	}
	if err != nil {
		return err
	}
	if specChangedByOthers(current.GetManagedFields()) {
		return errChangedByAdministrator
	}
	copySpec(current)
	labels := current.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, shipped.GetLabels())
	current.SetLabels(labels)
	// An unchanged object is not written again by the API server.
	return i.Client.Update(ctx, current, client.FieldOwner(names.FieldOwner))
}

// specChangedByOthers reports whether a field manager other than the
// manager owns a field of the spec.
func specChangedByOthers(entries []metav1.ManagedFieldsEntry) bool {
	for _, e := range entries {
		if e.Manager != names.FieldOwner && e.FieldsV1 != nil && bytes.Contains(e.FieldsV1.GetRawBytes(), []byte(`"f:spec"`)) {
			return true
		}
	}
	return false
}
