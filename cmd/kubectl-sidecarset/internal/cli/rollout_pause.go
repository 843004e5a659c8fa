package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// newRolloutPauseCommand returns pause (paused true) or resume (false).
func newRolloutPauseCommand(o *options, paused bool) *cobra.Command {
	var (
		output   *output
		write    writeOptions
		selector string
	)
	verb, short := "resume", "Resume a paused rollout (updateStrategy.paused: false)"
	if paused {
		verb, short = "pause", "Pause a SidecarSet's rollout (updateStrategy.paused: true): upgraded pods stay, the others wait"
	}
	cmd := &cobra.Command{
		Use:   verb + " (NAME | -l SELECTOR)",
		Short: short,
		Long: short + ".\nNew pods are still injected, with the latest sidecars. A rollout the controller paused because of its failure\n" +
			"budget is paused again at once while as many upgraded pods still fail: undo it, fix the sidecar, or raise the budget.\n" +
			"With -l, every SidecarSet the label selector selects is " + verb + "d; one already in that state is an error, the others\n" +
			"are still written. The ClusterRole sidecarset-operator-oncall suffices, on any SidecarSet (docs/security.md).",
		Example: "  kubectl sidecarset rollout " + verb + " log-agent\n" +
			"  kubectl sidecarset rollout " + verb + " -l team=payments\n" +
			"  kubectl sidecarset rollout " + verb + " log-agent --dry-run=server -o yaml",
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := write.validate(); err != nil {
				return err
			}
			c, sets, err := o.pauseTargets(cmd, args, selector, output)
			if err != nil {
				return err
			}
			p := pauser{c: c, paused: paused, verb: verb, write: write, output: output, cmd: cmd}
			var errs []error
			for i := range sets {
				if err := p.pause(&sets[i]); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "Selector (label query) of the SidecarSets to "+verb+", instead of NAME (e.g. -l team=payments).")
	addWriteFlags(cmd, &write)
	output = addOutputFlags(cmd, outputOptions{name: true, text: "a line naming the SidecarSet"})
	return cmd
}

// pauseTargets reads the SidecarSets to pause or resume: NAME, or those
// the selector selects, by name.
func (o *options) pauseTargets(cmd *cobra.Command, args []string, selector string, output *output) (client.Client, []appsv1beta1.SidecarSet, error) {
	switch {
	case selector == "":
		c, s, err := o.rolloutTarget(cmd, args, output)
		if err != nil {
			return nil, nil, err
		}
		return c, []appsv1beta1.SidecarSet{*s}, nil
	case len(args) > 0:
		return nil, nil, usagef("give NAME or -l SELECTOR, not both")
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, nil, usagef("--selector: %w", err)
	}
	if err := output.validate(); err != nil {
		return nil, nil, err
	}
	c, err := o.clusterClient(cmd)
	if err != nil {
		return nil, nil, err
	}
	list := &appsv1beta1.SidecarSetList{}
	if err := c.List(cmd.Context(), list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, nil, fmt.Errorf("listing SidecarSets: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil, fmt.Errorf("no SidecarSet matches the selector %q", selector)
	}
	slices.SortFunc(list.Items, func(a, b appsv1beta1.SidecarSet) int { return strings.Compare(a.Name, b.Name) })
	return c, list.Items, nil
}

// pauser pauses or resumes SidecarSets and says so.
type pauser struct {
	c      client.Client
	paused bool
	verb   string
	write  writeOptions
	output *output
	cmd    *cobra.Command
}

// pause writes updateStrategy.paused of one SidecarSet, and prints it.
func (p pauser) pause(s *appsv1beta1.SidecarSet) error {
	name := s.Name
	if s.Spec.UpdateStrategy.Paused == p.paused {
		if p.paused {
			return fmt.Errorf("sidecarsets.apps.kruise.io %q is already paused", name)
		}
		return fmt.Errorf("sidecarsets.apps.kruise.io %q is not paused", name)
	}
	if w := resumeWarning(s, p.paused); w != "" {
		p.cmd.PrintErrln("Warning: " + w)
	}
	if p.write.send() {
		patch := fmt.Appendf(nil, `{"spec":{"updateStrategy":{"paused":%t}}}`, p.paused)
		if err := p.c.Patch(p.cmd.Context(), s, client.RawPatch(types.MergePatchType, patch), p.write.patchOptions()...); err != nil {
			return fmt.Errorf("%s SidecarSet %s: %w", p.verb, name, err)
		}
	} else {
		s.Spec.UpdateStrategy.Paused = p.paused
	}
	if !p.output.text() {
		return printSidecarSet(p.cmd.OutOrStdout(), p.output, s)
	}
	done := "resumed"
	if p.paused {
		done = "paused"
	}
	_, err := fmt.Fprintf(p.cmd.OutOrStdout(), "%s/%s %s%s\n", resourceName, name, done, p.write.dryRunSuffix())
	return err
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
