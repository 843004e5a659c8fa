package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
)

// The rollout commands (rollout_*.go) work on the SidecarSets of the
// cluster, as kubectl rollout works on Deployments: status follows a
// rollout, history lists the ControllerRevisions, undo writes a recorded
// revision back into the SidecarSet, pause and resume set
// updateStrategy.paused. The decisions stay the operator's: status reads
// the conditions the controller writes, and names the pods the planner
// (controllers/rollout) finds upgrading or failed.

// resourceName is how the commands name a SidecarSet, as kubectl does.
const resourceName = "sidecarset.apps.kruise.io"

func newRolloutCommand(o *options) *cobra.Command {
	cmd := groupCommand(&cobra.Command{
		Use:   "rollout",
		Short: "Follow, list, undo, pause and resume the in-place rollout of a SidecarSet",
		Long: "rollout manages the in-place rollout of a SidecarSet as kubectl rollout manages a Deployment's:\n" +
			"status follows it until it completes (exit 0) or fails (exit 1), history lists its revisions,\n" +
			"undo rolls it back to a recorded revision, pause and resume set updateStrategy.paused.",
	})
	cmd.AddCommand(newRolloutStatusCommand(o), newRolloutHistoryCommand(o), newRolloutUndoCommand(o),
		newRolloutPauseCommand(o, true), newRolloutPauseCommand(o, false))
	return cmd
}

// sidecarSetName reads NAME or sidecarset/NAME (also sidecarsets/NAME,
// sidecarset.apps.kruise.io/NAME).
func sidecarSetName(args []string) (string, error) {
	if len(args) != 1 {
		return "", usagef("give one SidecarSet: NAME or sidecarset/NAME")
	}
	kind, name, ok := strings.Cut(args[0], "/")
	if !ok {
		return args[0], nil
	}
	switch kind {
	case "sidecarset", "sidecarsets", resourceName, "sidecarsets.apps.kruise.io":
		if name != "" {
			return name, nil
		}
	}
	return "", usagef("%q: want a SidecarSet, as NAME or sidecarset/NAME", args[0])
}

// clusterClient returns a client of the cluster; the rollout commands have
// no offline mode. Admission warnings go to the command's standard error.
func (o *options) clusterClient(cmd *cobra.Command) (client.WithWatch, error) {
	o.warnings = cmd.ErrOrStderr()
	return o.client()
}

// rolloutStart checks what every rollout command is given (one
// SidecarSet, -o) and returns a client of the cluster and the SidecarSet's
// name.
func (o *options) rolloutStart(cmd *cobra.Command, args []string, output *output) (client.WithWatch, string, error) {
	name, err := sidecarSetName(args)
	if err != nil {
		return nil, "", err
	}
	if err := output.validate(); err != nil {
		return nil, "", err
	}
	c, err := o.clusterClient(cmd)
	return c, name, err
}

// rolloutTarget is rolloutStart, then reads the SidecarSet.
func (o *options) rolloutTarget(cmd *cobra.Command, args []string, output *output) (client.Client, *appsv1beta1.SidecarSet, error) {
	c, name, err := o.rolloutStart(cmd, args, output)
	if err != nil {
		return nil, nil, err
	}
	s, err := getSidecarSet(cmd.Context(), c, name)
	return c, s, err
}

// getSidecarSet reads a SidecarSet.
func getSidecarSet(ctx context.Context, c client.Client, name string) (*appsv1beta1.SidecarSet, error) {
	s := &appsv1beta1.SidecarSet{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading SidecarSet %s: %w", name, err)
	}
	return s, nil
}

// revisionsOf lists the SidecarSet's ControllerRevisions in the operator's
// namespace (those labelled with its name that it controls by UID, as the
// controller counts them: revision.OwnedBy), by revision number. A revision
// without a controller is left out: undo writes with the caller's
// credentials, and must not restore content someone planted.
func (o *options) revisionsOf(ctx context.Context, c client.Client, s *appsv1beta1.SidecarSet) ([]appsv1.ControllerRevision, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := c.List(ctx, list, client.InNamespace(o.operatorNamespace), client.MatchingLabels{appsv1beta1.SidecarSetNameLabel: s.Name}); err != nil {
		return nil, fmt.Errorf("listing the ControllerRevisions of %s in %s: %w", s.Name, o.operatorNamespace, err)
	}
	revs := slices.DeleteFunc(list.Items, func(r appsv1.ControllerRevision) bool { return !revision.OwnedBy(&r, s) })
	slices.SortFunc(revs, func(a, b appsv1.ControllerRevision) int {
		return cmp.Or(cmp.Compare(a.Revision, b.Revision), strings.Compare(a.Name, b.Name))
	})
	return revs, nil
}

// podsOf lists the SidecarSet's pods as the controller counts them: active
// pods its selector and namespace selection select that list it in their
// injected-list (listed by selectedPods).
func podsOf(ctx context.Context, c client.Client, s *appsv1beta1.SidecarSet) ([]*corev1.Pod, error) {
	listed, err := selectedPods(ctx, c, s)
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	nsSelected := map[string]bool{}
	for _, p := range listed {
		if !match.PodActive(p) || !slices.Contains(podstate.DecodeInjectedList(p.Annotations[appsv1beta1.SidecarSetListAnnotation]), s.Name) {
			continue
		}
		selected, seen := nsSelected[p.Namespace]
		if !seen {
			var labels map[string]string
			if match.NeedsNamespaceLabels(s) {
				if labels, err = lookup.NamespaceLabels(ctx, c, p.Namespace); client.IgnoreNotFound(err) != nil {
					return nil, fmt.Errorf("reading namespace %s: %w", p.Namespace, err)
				}
			}
			selected, _ = match.Namespace(s, p.Namespace, labels)
			nsSelected[p.Namespace] = selected
		}
		if selected {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// selectedPods lists the pods the SidecarSet's selector selects, in the
// namespaces it is pinned to (match.IndexValues), else in every namespace:
// the API server filters by the selector. An empty selector selects no pod.
func selectedPods(ctx context.Context, c client.Client, s *appsv1beta1.SidecarSet) ([]*corev1.Pod, error) {
	if match.IsEmpty(s.Spec.Selector) {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("the selector of SidecarSet %s: %w", s.Name, err)
	}
	namespaces := match.IndexValues(s)
	if slices.Contains(namespaces, match.ClusterScope) {
		namespaces = []string{metav1.NamespaceAll}
	}
	var pods []*corev1.Pod
	for _, ns := range namespaces {
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, fmt.Errorf("listing the pods of SidecarSet %s: %w", s.Name, err)
		}
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
	}
	return pods, nil
}

// printSidecarSet prints a SidecarSet with kubectl's printer of -o.
func printSidecarSet(w io.Writer, output *output, s *appsv1beta1.SidecarSet) error {
	out := s.DeepCopy()
	out.APIVersion, out.Kind = appsv1beta1.GroupVersion.String(), "SidecarSet"
	return output.printObjects(w, out)
}
