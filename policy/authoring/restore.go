package authoring

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// The custom verbs on sidecarsets.apps.kruise.io that stop a rollout, or go
// back to what a SidecarSet's recorded authority approved, on any
// SidecarSet without the inject verbs (the on-call role,
// sidecarset-operator-oncall, grants both).
const (
	// VerbPauseRollouts allows an update that only pauses the rollout, or
	// injection, or both (the policy's pauseOnly).
	VerbPauseRollouts = "pause-rollouts"
	// VerbRollback allows an update that only resumes the rollout or
	// injection, or puts back a revision this SidecarSet owns, within its
	// recorded authority (the policy's restoreOnly, and CheckRestore).
	VerbRollback = "rollback"
)

// restoredFact is the policy's variable that says a write is a restore by
// the verb rollback.
const restoredFact = "variables.restoredByVerb"

// RestoredByVerb reports whether the policy allows a write as a restore by
// the verb rollback (its variable restoredByVerb): the write only resumes,
// or puts back content with what undo changes besides, and its author holds
// the verb. The policy cannot read revisions: CheckRestore says whether the
// content put back is a revision's. false for a policy without the
// variable.
func (p *Policy) RestoredByVerb(ctx context.Context, r Request, authz authorizer.UnconditionalAuthorizer) (bool, error) {
	if p.restored == nil || r.Object == nil || r.OldObject == nil {
		return false, nil
	}
	versioned, request := p.input(r)
	results, _, err := p.restored.ForInput(ctx, versioned, request,
		plugincel.OptionalVariableBindings{Authorizer: authz}, nil, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return false, fmt.Errorf("policy %s: %w", p.name, err)
	}
	if len(results) != 1 {
		return false, fmt.Errorf("policy %s: %s: %d results", p.name, restoredFact, len(results))
	}
	if results[0].Error != nil {
		return false, fmt.Errorf("policy %s: %s: %w", p.name, restoredFact, results[0].Error)
	}
	restored, ok := results[0].EvalResult.Value().(bool)
	if !ok {
		return false, fmt.Errorf("policy %s: %s: want a bool, got %v", p.name, restoredFact, results[0].EvalResult.Type())
	}
	return restored, nil
}

// CheckRestore returns nil if an update that RestoredByVerb allows goes
// back to what the SidecarSet's recorded authority approved, or the reason
// it does not:
//
//   - content that changes (sidecars, volumes, image pull secrets,
//     patchPodMetadata) must be the content of one of revs that old owns
//     (revision.OwnedBy: controlled by its UID), and a custom version that
//     changes must be that revision's;
//   - what the new content needs (authority.SpecNeeds) must be within the
//     authority recorded on old (authority.Of), which the write keeps.
//
// The function is pure: revs are the ControllerRevisions of the
// SidecarSet's name, s is the object as stored (defaulted).
func CheckRestore(old, s *appsv1beta1.SidecarSet, revs []appsv1.ControllerRevision) error {
	now := recorded(&s.Spec)
	if !equality.Semantic.DeepEqual(recorded(&old.Spec), now) {
		var match *appsv1.ControllerRevision
		for i := range revs {
			if !revision.OwnedBy(&revs[i], old) {
				continue
			}
			data, err := revision.Decode(revs[i].Data.Raw)
			if err == nil && equality.Semantic.DeepEqual(data, now) {
				match = &revs[i]
				break
			}
		}
		if match == nil {
			return fmt.Errorf("spec: the content is not that of a revision SidecarSet %q owns", old.Name)
		}
		if v := s.Spec.CustomVersion; v != old.Spec.CustomVersion && v != match.Labels[appsv1beta1.SidecarSetCustomVersionLabel] {
			return fmt.Errorf("spec.customVersion: %q is neither the SidecarSet's nor that of revision %s", v, match.Name)
		}
	} else if s.Spec.CustomVersion != old.Spec.CustomVersion {
		return errors.New("spec.customVersion: it changes without the content")
	}
	have := authority.Of(old)
	for _, n := range authority.SpecNeeds(&s.Spec) {
		if missing := have.Missing(n.Verbs); missing != authority.None {
			return fmt.Errorf("%s needs %s, which the SidecarSet's recorded authority (%s) does not hold", n.Path, missing, have)
		}
	}
	return nil
}

// recorded is the part of a spec a revision records.
func recorded(spec *appsv1beta1.SidecarSetSpec) revision.Data {
	return revision.Data{
		Containers:       spec.Containers,
		InitContainers:   spec.InitContainers,
		Volumes:          spec.Volumes,
		ImagePullSecrets: spec.ImagePullSecrets,
		PatchPodMetadata: spec.PatchPodMetadata,
	}
}

// WithoutVerb answers as authz does, except that it denies verb: a write
// that is not what the verb allows is judged as if its author lacked it.
func WithoutVerb(authz authorizer.UnconditionalAuthorizer, verb string) authorizer.UnconditionalAuthorizer {
	return withoutVerb{authz: authz, verb: verb}
}

type withoutVerb struct {
	authz authorizer.UnconditionalAuthorizer
	verb  string
}

func (w withoutVerb) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() == w.verb && a.GetAPIGroup() == appsv1beta1.GroupVersion.Group && a.GetResource() == "sidecarsets" {
		return authorizer.DecisionNoOpinion, "", nil
	}
	return w.authz.Authorize(ctx, a)
}
