package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// newRolloutPauseCommand returns pause (paused true) or resume (false).
func newRolloutPauseCommand(o *options, paused bool) *cobra.Command {
	var (
		output *output
		write  writeOptions
	)
	verb, short := "resume", "Resume a paused rollout (updateStrategy.paused: false)"
	if paused {
		verb, short = "pause", "Pause a SidecarSet's rollout (updateStrategy.paused: true): upgraded pods stay, the others wait"
	}
	cmd := &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Long: short + ".\nNew pods are still injected, with the latest sidecars. A rollout the controller paused because of its failure\n" +
			"budget is paused again at once while as many upgraded pods still fail: undo it, fix the sidecar, or raise the budget.\n" +
			"The ClusterRole sidecarset-operator-oncall suffices, on any SidecarSet (docs/security.md).",
		Example: "  kubectl sidecarset rollout " + verb + " log-agent\n" +
			"  kubectl sidecarset rollout " + verb + " log-agent --dry-run=server -o yaml",
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
			if s.Spec.UpdateStrategy.Paused == paused {
				if paused {
					return fmt.Errorf("sidecarsets.apps.kruise.io %q is already paused", name)
				}
				return fmt.Errorf("sidecarsets.apps.kruise.io %q is not paused", name)
			}
			if w := resumeWarning(s, paused); w != "" {
				cmd.PrintErrln("Warning: " + w)
			}
			if write.send() {
				patch := fmt.Appendf(nil, `{"spec":{"updateStrategy":{"paused":%t}}}`, paused)
				if err := c.Patch(ctx, s, client.RawPatch(types.MergePatchType, patch), write.patchOptions()...); err != nil {
					return fmt.Errorf("%s SidecarSet %s: %w", verb, name, err)
				}
			} else {
				s.Spec.UpdateStrategy.Paused = paused
			}
			if !output.text() {
				return printSidecarSet(cmd.OutOrStdout(), output, s)
			}
			done := "resumed"
			if paused {
				done = "paused"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s%s\n", resourceName, name, done, write.dryRunSuffix())
			return err
		},
	}
	addWriteFlags(cmd, &write)
	output = addOutputFlags(cmd, outputOptions{name: true, text: "a line naming the SidecarSet"})
	return cmd
}

// resumeWarning warns that resuming a rollout paused over its failure
// budget pauses it again while the pods still fail.
func resumeWarning(s *appsv1beta1.SidecarSet, paused bool) string {
	c := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing)
	if paused || c == nil || c.Reason != appsv1beta1.ReasonFailureBudgetExceeded {
		return ""
	}
	return fmt.Sprintf("the rollout exceeds its failure budget (%s): the controller pauses it again while as many upgraded pods fail; "+
		"roll back with kubectl sidecarset rollout undo %s, fix the sidecar, or raise the annotation %s",
		c.Message, s.Name, appsv1beta1.FailureBudgetAnnotation)
}
