package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
)

func newPlanCommand(o *options) *cobra.Command {
	var (
		output *output
		files  []string
	)
	cmd := &cobra.Command{
		Use:   "plan NAME [-f new.yaml]",
		Short: "Say what the next rollout of a SidecarSet would do to each pod, and in which order",
		Long: "plan runs the controller's own rollout decision over a SidecarSet's pods as they are\n" +
			"in the cluster, and prints, per pod, what the next rollout would do (an image changed in place, a resize,\n" +
			"a recreation, nothing, or why it is blocked) and the batch its upgrade falls in. With -f, the SidecarSet is\n" +
			"planned as the file describes it, as if it were applied. It changes nothing. Later batches assume that\n" +
			"each batch completes before the next; PodDisruptionBudgets are applied by the API server at eviction time.\n" +
			"-o wide adds the blocker of each blocked pod.",
		Example: "  kubectl sidecarset plan log-agent\n" +
			"  kubectl sidecarset plan log-agent -f log-agent-v2.yaml\n" +
			"  kubectl sidecarset plan log-agent -o json",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			if len(files) > 1 {
				return usagef("plan takes one -f: the new version of SidecarSet %s", args[0])
			}
			file := ""
			if len(files) == 1 {
				file = files[0]
			}
			return runPlan(cmd.Context(), o, args[0], file, output, cmd)
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil,
		"The new version of the SidecarSet NAME (a file that holds it, or - for standard input), planned as if it were applied; given once.")
	o.addNamespaceLabelsFlag(cmd.Flags())
	o.addDefaultsAllowedFlag(cmd.Flags())
	output = addOutputFlags(cmd, outputOptions{wide: true, text: "the plan as text, a table of the pods"})
	return cmd
}

// planReport is what plan prints.
type planReport struct {
	SidecarSet     string             `json:"sidecarSet"`
	Revision       string             `json:"revision,omitempty"`
	Hash           string             `json:"hash"`
	MaxUnavailable string             `json:"maxUnavailable"`
	Partition      string             `json:"partition"`
	Recreate       bool               `json:"recreate"`
	Status         string             `json:"status"`
	Pods           []planPod          `json:"pods"`
	Counts         map[string]int     `json:"counts"`
	Conditions     []metav1.Condition `json:"conditions,omitempty"`
}

type planPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Action    string `json:"action"`
	Detail    string `json:"detail"`
	Batch     int    `json:"batch,omitempty"`
	Blocker   string `json:"blocker,omitempty"`
}

func runPlan(ctx context.Context, o *options, name, file string, output *output, cmd *cobra.Command) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	s, err := planTarget(ctx, c, name, file, cmd.InOrStdin())
	if err != nil {
		return err
	}
	in, err := planInput(ctx, o, c, s)
	if err != nil {
		return err
	}
	in.Explain = true
	plan, err := rollout.Compute(in)
	if err != nil {
		return err
	}
	r := reportOf(s, in, plan)
	if !output.text() {
		return output.printReport(cmd.OutOrStdout(), r)
	}
	return r.writeText(cmd.OutOrStdout(), output.format() == outputWide)
}

// planTarget reads the SidecarSet to plan: the cluster's, or the file's.
func planTarget(ctx context.Context, c client.Client, name, file string, stdin io.Reader) (*appsv1beta1.SidecarSet, error) {
	live := &appsv1beta1.SidecarSet{}
	err := c.Get(ctx, types.NamespacedName{Name: name}, live)
	switch {
	case apierrors.IsNotFound(err) && file == "":
		return nil, fmt.Errorf("SidecarSet %s not found", name)
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return nil, fmt.Errorf("reading SidecarSet %s: %w", name, err)
	}
	if file == "" {
		return live, nil
	}
	data, err := readInput(file, stdin)
	if err != nil {
		return nil, err
	}
	objs, err := decodeObjects(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, obj := range objs {
		if s, ok := obj.(*appsv1beta1.SidecarSet); ok && s.Name == name {
			if live != nil {
				// As applied: the live object's identity, status and
				// revision bookkeeping, the file's spec and metadata.
				s.UID, s.ResourceVersion, s.Generation, s.Status = live.UID, live.ResourceVersion, live.Generation+1, live.Status
			}
			return s, nil
		}
	}
	return nil, fmt.Errorf("%s holds no SidecarSet named %s", file, name)
}

// plannerInput is the planner's input that the SidecarSet alone gives, as
// the controller builds it: the SidecarSet defaulted, its hashes, its
// latest revision and its rollout guards (a guard whose value the webhook
// would refuse is off).
func plannerInput(s *appsv1beta1.SidecarSet, now time.Time) (rollout.Input, error) {
	d := s.DeepCopy()
	appsv1beta1.SetDefaults(d)
	hashes, err := appsv1beta1.ComputeHashes(&d.Spec)
	if err != nil {
		return rollout.Input{}, err
	}
	guards, _ := appsv1beta1.ParseRolloutGuards(d.Annotations)
	return rollout.Input{SidecarSet: d, Hashes: hashes, LatestRevision: d.Status.LatestRevision, Now: now, Guards: guards}, nil
}

// planInput gathers what the controller would plan from: the SidecarSet's
// pods, the revisions it owns, the pods it selects that lack its sidecars,
// the whitelist and whether the cluster resizes in place.
func planInput(ctx context.Context, o *options, c client.Client, s *appsv1beta1.SidecarSet) (rollout.Input, error) {
	st, err := o.load(ctx, nil)
	if err != nil {
		return rollout.Input{}, err
	}
	in, err := plannerInput(s, time.Now())
	if err != nil {
		return rollout.Input{}, err
	}
	defaulted := in.SidecarSet
	if st.whitelist != nil {
		in.Whitelist = podmeta.Whitelist{Snapshot: st.whitelist, DefaultsAllowed: o.defaultsAllowed}
	}
	revs, err := o.revisionsOf(ctx, c, s)
	if err != nil {
		return rollout.Input{}, err
	}
	in.Revisions = make(map[string]*appsv1beta1.SidecarSetSpec, len(revs))
	for i := range revs {
		if h, spec, ok := rollout.RevisionSpec(defaulted, &revs[i]); ok {
			in.Revisions[h] = spec
		}
	}
	if cfg, err := o.config().ClientConfig(); err == nil {
		if d, err := discovery.NewDiscoveryClientForConfig(cfg); err == nil {
			if ok, err := lookup.ServesPodResize(d); err == nil {
				in.ResizeUnsupported = !ok
			}
		}
	}
	in.Pods, in.NotInjected, err = planPods(ctx, o, st, c, defaulted)
	return in, err
}

// planPods lists the pods the SidecarSet selects, split as the controller
// splits them: those that list it in their injected-list (its pods), and
// those that lack its sidecars and that a recreation would inject.
func planPods(ctx context.Context, o *options, st *state, c client.Client, s *appsv1beta1.SidecarSet) (managed, notInjected []*corev1.Pod, err error) {
	pods, err := selectedPods(ctx, c, s)
	if err != nil {
		return nil, nil, err
	}
	// Which SidecarSets apply is the webhook's and the detector's answer:
	// a canary of this one that applies to a pod replaces it there.
	cands := []match.Candidate{{SidecarSet: s}}
	for i := range st.sets {
		if st.sets[i].Name != s.Name {
			cands = append(cands, match.Candidate{SidecarSet: &st.sets[i]})
		}
	}
	nsLabels := map[string]map[string]string{}
	for _, p := range pods {
		if p.Namespace == o.operatorNamespace && p.Labels[appsv1beta1.OperatorPodLabel] == appsv1beta1.OperatorPodName {
			continue
		}
		labels, seen := nsLabels[p.Namespace]
		if !seen {
			if labels, _, err = o.namespaceLabels(ctx, st, p.Namespace); err != nil {
				return nil, nil, err
			}
			nsLabels[p.Namespace] = labels
		}
		a := match.Applicable(p, match.PodNamespace{Name: p.Namespace, Labels: labels}, cands)
		v := a.Verdicts[0]
		if !v.Selects || a.RecordedError != nil {
			continue
		}
		switch {
		case slices.Contains(a.Recorded.Injected, s.Name):
			managed = append(managed, p)
		case v.Reason != match.ReasonReplacedByCanary && v.Reason != match.ReasonNamespaceReplaced && v.Reason != match.ReasonCanaryBaseReplaced:
			reason := match.NotInjected(s, p, a.Recorded.Hashes)
			if reason == match.NotInjectedCreatedBefore || reason == match.NotInjectedAtAdmission {
				notInjected = append(notInjected, p)
			}
		}
	}
	return managed, notInjected, nil
}

// reportOf makes the report of a plan.
func reportOf(s *appsv1beta1.SidecarSet, in rollout.Input, plan rollout.Plan) planReport {
	us := in.SidecarSet.Spec.UpdateStrategy
	r := planReport{
		SidecarSet: s.Name, Revision: s.Status.LatestRevision, Hash: in.Hashes.Hash, Recreate: appsv1beta1.RecreatesPods(s),
		MaxUnavailable: strategyValue(us.MaxUnavailable, "1"), Partition: strategyValue(us.Partition, "0"),
		Counts: map[string]int{}, Conditions: plan.Status.Conditions,
	}
	for _, c := range plan.Status.Conditions {
		if c.Type == appsv1beta1.SidecarSetConditionProgressing {
			r.Status = c.Reason + ": " + c.Message
		}
	}
	for _, d := range plan.Decisions {
		r.Pods = append(r.Pods, planPod{Namespace: d.Pod.Namespace, Name: d.Pod.Name, Action: string(d.Action), Detail: d.Detail,
			Batch: d.Batch, Blocker: string(d.Blocker)})
		r.Counts[string(d.Action)]++
	}
	return r
}

// strategyValue renders a partition or maxUnavailable, def when unset.
func strategyValue(v *intstr.IntOrString, def string) string {
	if v == nil {
		return def
	}
	return v.String()
}

// writeText prints the report as a table, pods in rollout order; wide
// adds the blockers.
func (r planReport) writeText(w io.Writer, wide bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "SidecarSet %s", r.SidecarSet)
	if r.Revision != "" {
		fmt.Fprintf(&b, " (latest revision %s)", r.Revision)
	}
	fmt.Fprintf(&b, ": maxUnavailable %s, partition %s, recreate pods: %v\n", r.MaxUnavailable, r.Partition, r.Recreate)
	if r.Status != "" {
		fmt.Fprintf(&b, "Progressing: %s\n", r.Status)
	}
	for _, c := range r.Conditions {
		if c.Type == appsv1beta1.SidecarSetConditionResized || c.Type == appsv1beta1.SidecarSetConditionRecreated {
			fmt.Fprintf(&b, "%s: %s: %s\n", c.Type, c.Reason, c.Message)
		}
	}
	var counts []string
	for _, a := range []rollout.Action{rollout.ActionImage, rollout.ActionResize, rollout.ActionRecreate, rollout.ActionInProgress,
		rollout.ActionWait, rollout.ActionBlocked, rollout.ActionNothing} {
		if n := r.Counts[string(a)]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, a))
		}
	}
	if len(r.Pods) == 0 {
		counts = []string{"no pod"}
	}
	fmt.Fprintf(&b, "Pods: %s\n\n", strings.Join(counts, ", "))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(r.Pods) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "BATCH\tPOD\tACTION\tDETAIL"
	if wide {
		header += "\tBLOCKER"
	}
	if _, err := fmt.Fprintln(tw, header); err != nil {
		return err
	}
	for _, p := range r.Pods {
		batch := "-"
		if p.Batch > 0 {
			batch = fmt.Sprint(p.Batch)
		}
		line := fmt.Sprintf("%s\t%s/%s\t%s\t%s", batch, p.Namespace, p.Name, p.Action, p.Detail)
		if wide {
			line += "\t" + cmp.Or(p.Blocker, "<none>")
		}
		if _, err := fmt.Fprintln(tw, line); err != nil {
			return err
		}
	}
	return tw.Flush()
}
