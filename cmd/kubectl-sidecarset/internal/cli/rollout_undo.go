package cli

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// undoPlan is what undo writes: the SidecarSet with the revision restored,
// and what it changed in the update strategy, and why.
type undoPlan struct {
	target *appsv1.ControllerRevision
	// restored is the SidecarSet to write; nil when it already runs the
	// target revision.
	restored *appsv1beta1.SidecarSet
	notes    []string
}

func newRolloutUndoCommand(o *options) *cobra.Command {
	var (
		toRevision   int64
		keepStrategy bool
		write        writeOptions
		output       *output
	)
	cmd := &cobra.Command{
		Use:   "undo NAME [--to-revision N]",
		Short: "Roll a SidecarSet back to a recorded revision, in place",
		Long: "undo writes a recorded revision (the previous one, or --to-revision N) back into the SidecarSet: its containers,\n" +
			"init containers, volumes, image pull secrets and patchPodMetadata, and its custom version. The controller then\n" +
			"rolls the pods back in place under the update strategy, onto the recorded revision (no new one), and GitOps\n" +
			"tools see an ordinary spec change. So that the rollback reaches the pods, undo also resumes a paused rollout\n" +
			"and sets a partition to 0 (the partition would keep the pods of the undone revision on it); --keep-strategy\n" +
			"leaves updateStrategy as it is. The ClusterRole sidecarset-operator-oncall suffices, on any SidecarSet, for a revision\n" +
			"within its recorded authority (docs/security.md).",
		Example: "  kubectl sidecarset rollout undo log-agent\n" +
			"  kubectl sidecarset rollout undo log-agent --to-revision 3 --dry-run=server -o yaml",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := write.validate(); err != nil {
				return err
			}
			c, s, err := o.rolloutTarget(cmd, args, output)
			if err != nil {
				return err
			}
			ctx, name := cmd.Context(), s.Name
			revs, err := o.revisionsOf(ctx, c, s)
			if err != nil {
				return err
			}
			plan, err := planUndo(s, revs, toRevision, keepStrategy)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if plan.restored == nil {
				_, err := fmt.Fprintf(out, "%s/%s skipped rollback: it already runs revision %d (%s)\n", resourceName, name,
					plan.target.Revision, plan.target.Name)
				return err
			}
			written := plan.restored
			if write.send() {
				written = plan.restored.DeepCopy()
				if err := c.Patch(ctx, written, client.MergeFromWithOptions(s, client.MergeFromWithOptimisticLock{}), write.patchOptions()...); err != nil {
					return fmt.Errorf("rolling back SidecarSet %s: %w", name, err)
				}
			}
			if !output.text() {
				return printSidecarSet(out, output, written)
			}
			return writeUndone(out, name, plan, write)
		},
	}
	cmd.Flags().Int64Var(&toRevision, "to-revision", 0, "The revision to roll back to (its number); 0 is the previous one.")
	cmd.Flags().BoolVar(&keepStrategy, "keep-strategy", false,
		"Leave updateStrategy as it is: a paused rollout or a partition then holds the rollback back.")
	addWriteFlags(cmd, &write)
	output = addOutputFlags(cmd, outputOptions{name: true, text: "a line naming the SidecarSet and what changed"})
	return cmd
}

// planUndo chooses the revision to restore (number, or the newest one that
// differs from the current spec) and builds the SidecarSet to write: the
// revision's containers, init containers, volumes, image pull secrets and
// patchPodMetadata (revision.Restore) and its custom version; unless
// keepStrategy, a paused rollout resumed and a partition set to 0, so that
// the controller rolls the pods back. Selectors and the rest of the
// strategy are kept.
func planUndo(s *appsv1beta1.SidecarSet, revs []appsv1.ControllerRevision, number int64, keepStrategy bool) (undoPlan, error) {
	defaulted := s.DeepCopy()
	appsv1beta1.SetDefaults(defaulted)
	current, err := revision.Encode(&defaulted.Spec)
	if err != nil {
		return undoPlan{}, err
	}
	var plan undoPlan
	for i := len(revs) - 1; i >= 0 && plan.target == nil; i-- {
		r := &revs[i]
		if (number == 0 && !bytes.Equal(r.Data.Raw, current)) || (number != 0 && r.Revision == number) {
			plan.target = r
		}
	}
	switch {
	case plan.target == nil && number != 0:
		return undoPlan{}, errNoRevision(s.Name, number, revs)
	case plan.target == nil:
		return undoPlan{}, fmt.Errorf("sidecarset %q has no revision to roll back to: its history holds only its current spec", s.Name)
	case bytes.Equal(plan.target.Data.Raw, current):
		return plan, nil
	}
	restored, err := revision.Restore(s, plan.target)
	if err != nil {
		return undoPlan{}, err
	}
	// The webhook computes the hashes and the controller the status.
	restored.Annotations, restored.Status = s.Annotations, s.Status
	restored.Spec.CustomVersion = plan.target.Labels[appsv1beta1.SidecarSetCustomVersionLabel]
	if v := s.Spec.CustomVersion; v != restored.Spec.CustomVersion {
		plan.notes = append(plan.notes, fmt.Sprintf("spec.customVersion: %q -> %q, the revision's", v, restored.Spec.CustomVersion))
	}
	us := &restored.Spec.UpdateStrategy
	if !keepStrategy && us.Paused {
		us.Paused = false
		plan.notes = append(plan.notes, "updateStrategy.paused: true -> false, or the rollback would not start")
	}
	if p := us.Partition; !keepStrategy && p != nil && !isZero(p) {
		us.Partition = nil
		plan.notes = append(plan.notes, fmt.Sprintf("updateStrategy.partition: %s -> 0, or it would keep pods on the undone revision", p.String()))
	}
	plan.restored = restored
	return plan, nil
}

// writeUndone says what undo did.
func writeUndone(w io.Writer, name string, plan undoPlan, write writeOptions) error {
	if _, err := fmt.Fprintf(w, "%s/%s rolled back to revision %d (%s)%s\n", resourceName, name, plan.target.Revision, plan.target.Name,
		write.dryRunSuffix()); err != nil {
		return err
	}
	for _, n := range plan.notes {
		if _, err := fmt.Fprintf(w, "  %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// isZero reports whether a partition is 0 or 0%.
func isZero(v *intstr.IntOrString) bool {
	if v.Type == intstr.Int {
		return v.IntVal == 0
	}
	return v.StrVal == "0%"
}
