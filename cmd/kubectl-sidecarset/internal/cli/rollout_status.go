package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// Where a rollout stands (RolloutStatus.State).
const (
	// StateObserving: the controller has not yet written the status of the
	// SidecarSet's current generation.
	StateObserving = "Observing"
	// StateProgressing: the rollout goes on, or waits (paused, held, ...).
	StateProgressing = "Progressing"
	// StateComplete: every pod the strategy lets the rollout reach runs the
	// latest sidecars, ready.
	StateComplete = "Complete"
	// StateFailed: the rollout passed its progress deadline, or paused
	// itself on failures.
	StateFailed = "Failed"
)

// maxListedPods is how many pods a text line names.
const maxListedPods = 5

// RolloutStatus is one report of rollout status: where the rollout stands,
// its counts and why, and the pods upgrading or failed.
type RolloutStatus struct {
	SidecarSet         string `json:"sidecarSet"`
	Generation         int64  `json:"generation"`
	ObservedGeneration int64  `json:"observedGeneration"`
	// Revision is the ControllerRevision of the current spec.
	Revision         string `json:"revision,omitempty"`
	MatchedPods      int32  `json:"matchedPods"`
	UpdatedPods      int32  `json:"updatedPods"`
	ReadyPods        int32  `json:"readyPods"`
	UpdatedReadyPods int32  `json:"updatedReadyPods"`
	// State is Observing, Progressing, Complete or Failed.
	State string `json:"state"`
	// Reason and Message are the controller's (its Progressing condition,
	// or Updated once complete).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Upgrading are the pods upgraded in place whose new sidecars do not
	// run ready yet: the current batch. Failed are those that count
	// against the failure budget.
	Upgrading []PodProgress `json:"upgrading,omitempty"`
	Failed    []PodProgress `json:"failed,omitempty"`
}

// PodProgress is a pod upgraded in place, with when and what it waits on.
type PodProgress struct {
	Pod      string      `json:"pod"`
	Upgraded metav1.Time `json:"upgraded"`
	Reason   string      `json:"reason"`
}

func newRolloutStatusCommand(o *options) *cobra.Command {
	var (
		watch   bool
		timeout time.Duration
		output  *output
	)
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Follow a SidecarSet's rollout until it completes (exit 0) or fails (exit 1)",
		Long: "status prints where the rollout of a SidecarSet stands (pods updated and ready, the pods being upgraded,\n" +
			"what it waits for and why) each time it changes, until it completes: it then exits 0. It exits 1 when the\n" +
			"rollout passes its progress deadline or pauses itself on failed pods (the SidecarSet's rollout guards),\n" +
			"when --timeout passes, or when the SidecarSet's updateStrategy.type is NotUpdate (it has no rollout); 3 when\n" +
			"the API server cannot be reached or refuses the user. A rollout held by its partition or\n" +
			"updateStrategy.selector is complete once the pods it may reach run the latest sidecars. With --watch=false\n" +
			"it prints once and exits 0 unless it failed.\n" +
			"-o json, yaml, jsonpath and go-template print one document per change, as kubectl get --watch does: a\n" +
			"stream of JSON documents, or YAML documents separated by ---; with --watch=false, one document.",
		Example: "  kubectl sidecarset rollout status log-agent\n" +
			"  kubectl sidecarset rollout status log-agent --timeout 10m\n" +
			"  kubectl sidecarset rollout status log-agent --watch=false -o json",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, name, err := o.rolloutStart(cmd, args, output)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			printer, err := statusPrinter(cmd.OutOrStdout(), output)
			if err != nil {
				return err
			}
			f := &follower{c: c, name: name, watch: watch, print: printer, errOut: cmd.ErrOrStderr()}
			return f.follow(ctx)
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "Follow the rollout until it completes or fails; with false, print its status once.")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "How long to wait before giving up (exit 1); 0 waits forever.")
	output = addOutputFlags(cmd, outputOptions{text: "kubectl rollout status's lines"})
	return cmd
}

// follower follows one SidecarSet's rollout.
type follower struct {
	c     client.WithWatch
	name  string
	watch bool
	print func(*RolloutStatus) error
	// errOut gets the notes; podsHidden is set once the pods turned out
	// not to be readable (their names are then left out).
	errOut     io.Writer
	podsHidden bool
	// last is the last report printed, of the SidecarSet at lastVersion.
	last        *RolloutStatus
	lastVersion string
}

// follow reports the rollout each time it changes until it completes,
// fails, or ctx ends: it reads the SidecarSet, then, with watch, follows
// it through a watch, as kubectl rollout status does.
func (f *follower) follow(ctx context.Context) error {
	s, err := getSidecarSet(ctx, f.c, f.name)
	if err != nil {
		return f.timedOut(ctx, err)
	}
	if done, err := f.report(ctx, s); done || err != nil || !f.watch {
		return err
	}
	return f.watchRollout(ctx)
}

// watchRollout follows the SidecarSet through a watch until its report
// ends the follow. The watch lists again and resumes after a lost
// connection or an expired resourceVersion, until ctx ends; the API server
// refusing the user (401, 403) ends it with that error, as a read would.
func (f *follower) watchRollout(ctx context.Context) error {
	watchCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	refused := func(err error) {
		if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
			cancel(fmt.Errorf("watching SidecarSet %s: %w", f.name, err))
		}
	}
	byName := &client.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", f.name)}
	lw := &oneObjectListWatch{ListWatch: cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &appsv1beta1.SidecarSetList{}
			err := f.c.List(ctx, list, byName, &client.ListOptions{Raw: &opts})
			refused(err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := f.c.Watch(ctx, &appsv1beta1.SidecarSetList{}, byName, &client.ListOptions{Raw: &opts})
			refused(err)
			return w, err
		},
	}}
	_, err := watchtools.UntilWithSync(watchCtx, lw, &appsv1beta1.SidecarSet{}, nil, func(e watch.Event) (bool, error) {
		switch e.Type {
		case watch.Added, watch.Modified:
			s, ok := e.Object.(*appsv1beta1.SidecarSet)
			if !ok {
				return false, fmt.Errorf("watching SidecarSet %s: unexpected %T", f.name, e.Object)
			}
			return f.report(ctx, s)
		case watch.Deleted:
			return false, fmt.Errorf("reading SidecarSet %s: %w", f.name,
				apierrors.NewNotFound(schema.GroupResource{Group: appsv1beta1.GroupVersion.Group, Resource: "sidecarsets"}, f.name))
		}
		return false, nil
	})
	switch {
	case ctx.Err() != nil:
		return f.timedOut(ctx, ctx.Err())
	case watchCtx.Err() != nil:
		return context.Cause(watchCtx)
	}
	return err
}

// oneObjectListWatch lists then watches, without the streaming list
// (WatchList): for one object it brings nothing, and not every client
// serves it.
type oneObjectListWatch struct{ cache.ListWatch }

// IsWatchListSemanticsUnSupported tells the reflector to list.
func (*oneObjectListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// report prints the SidecarSet's rollout if it changed since the last
// report, and says whether the follow ends: done when the rollout
// completed, an error when it failed or has no rollout (NotUpdate).
func (f *follower) report(ctx context.Context, s *appsv1beta1.SidecarSet) (done bool, err error) {
	if s.Spec.UpdateStrategy.Type == appsv1beta1.NotUpdateSidecarSetStrategyType {
		return false, fmt.Errorf("sidecarset %q has updateStrategy.type NotUpdate: its pods are never upgraded, there is no rollout to follow", f.name)
	}
	if s.ResourceVersion == f.lastVersion {
		return false, nil
	}
	f.lastVersion = s.ResourceVersion
	st := judgeRollout(s)
	if err := f.addPods(ctx, s, st); err != nil {
		return false, f.timedOut(ctx, err)
	}
	if f.last == nil || !sameReport(f.last, st) {
		if err := f.print(st); err != nil {
			return false, err
		}
		f.last = st
	}
	switch st.State {
	case StateFailed:
		return false, failure(f.name, st.Reason)
	case StateComplete:
		return true, nil
	}
	return false, nil
}

// failure is the error of a failed rollout, worded as kubectl's (the
// report printed before says why).
func failure(name, reason string) error {
	if reason == appsv1beta1.ReasonProgressDeadlineExceeded {
		return fmt.Errorf("sidecarset %q exceeded its progress deadline", name)
	}
	return fmt.Errorf("sidecarset %q paused itself: more upgraded pods fail than its failure budget allows", name)
}

// timedOut words an error that the end of --timeout caused.
func (f *follower) timedOut(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out waiting for the rollout of sidecarset %q to finish", f.name)
	}
	return err
}

// addPods names the pods upgrading and failed of a rollout that is not
// complete; without permission to list pods, it says so once and goes on
// without them.
func (f *follower) addPods(ctx context.Context, s *appsv1beta1.SidecarSet, st *RolloutStatus) error {
	if f.podsHidden || (st.State != StateProgressing && st.State != StateFailed) {
		return nil
	}
	err := addPods(ctx, f.c, s, st)
	if apierrors.IsForbidden(err) {
		f.podsHidden = true
		_, err = fmt.Fprintf(f.errOut, "Note: the pods are not named: %v\n", err)
	}
	return err
}

// judgeRollout says where a SidecarSet's rollout stands from the status the
// controller wrote: Observing until it describes the current generation;
// Complete when every matched pod runs the latest sidecars (Updated True),
// or when the partition, updateStrategy.selector or unreadable pods leave
// nothing else for the rollout to do and every updated pod is ready;
// Failed past the progress deadline or over the failure budget; otherwise
// Progressing (paused, held by maxUnavailable, pods not upgradable, ...).
func judgeRollout(s *appsv1beta1.SidecarSet) *RolloutStatus {
	st := &s.Status
	r := &RolloutStatus{
		SidecarSet: s.Name, Generation: s.Generation, ObservedGeneration: st.ObservedGeneration, Revision: st.LatestRevision,
		MatchedPods: st.MatchedPods, UpdatedPods: st.UpdatedPods, ReadyPods: st.ReadyPods, UpdatedReadyPods: st.UpdatedReadyPods,
		State: StateObserving,
	}
	current := func(c *metav1.Condition) bool { return c != nil && c.ObservedGeneration >= s.Generation }
	progressing := meta.FindStatusCondition(st.Conditions, appsv1beta1.SidecarSetConditionProgressing)
	updated := meta.FindStatusCondition(st.Conditions, appsv1beta1.SidecarSetConditionUpdated)
	switch {
	case st.ObservedGeneration < s.Generation:
		return r
	case progressing == nil && current(updated) && updated.Status == metav1.ConditionTrue:
		r.State, r.Reason, r.Message = StateComplete, updated.Reason, updated.Message
		return r
	case !current(progressing):
		return r
	}
	r.Reason, r.Message = progressing.Reason, progressing.Message
	switch progressing.Reason {
	case appsv1beta1.ReasonFailureBudgetExceeded, appsv1beta1.ReasonProgressDeadlineExceeded:
		r.State = StateFailed
	case appsv1beta1.ReasonPartitionHeld, appsv1beta1.ReasonNotSelected, appsv1beta1.ReasonRolloutComplete:
		r.State = StateProgressing
		if st.UpdatedReadyPods == st.UpdatedPods {
			r.State = StateComplete
		}
	default:
		r.State = StateProgressing
	}
	return r
}

// addPods names the pods upgrading and failed, as the planner finds them
// in the pods the SidecarSet selects.
func addPods(ctx context.Context, c client.Client, s *appsv1beta1.SidecarSet, st *RolloutStatus) error {
	pods, err := podsOf(ctx, c, s)
	if err != nil {
		return err
	}
	upgraded, err := upgradedPods(s, pods, time.Now())
	if err != nil {
		return err
	}
	for _, u := range upgraded {
		p := PodProgress{Pod: u.Pod.String(), Upgraded: metav1.NewTime(u.Since), Reason: u.Reason}
		if u.Failed {
			st.Failed = append(st.Failed, p)
		} else {
			st.Upgrading = append(st.Upgrading, p)
		}
	}
	return nil
}

// upgradedPods runs the planner on the SidecarSet's pods for the pods
// upgraded in place whose new sidecars do not run ready (Plan.Upgraded).
func upgradedPods(s *appsv1beta1.SidecarSet, pods []*corev1.Pod, now time.Time) ([]rollout.UpgradedPod, error) {
	in, err := plannerInput(s, now)
	if err != nil {
		return nil, err
	}
	in.Pods = pods
	plan, err := rollout.Compute(in)
	if err != nil {
		return nil, err
	}
	return plan.Upgraded, nil
}

// sameReport reports whether two reports say the same.
func sameReport(a, b *RolloutStatus) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// statusPrinter prints the reports as text, or each as a document of
// kubectl's printer of -o (one printer: YAML documents are separated).
func statusPrinter(out io.Writer, output *output) (func(*RolloutStatus) error, error) {
	if output.text() {
		return func(st *RolloutStatus) error {
			_, err := io.WriteString(out, statusText(st))
			return err
		}, nil
	}
	p, err := output.printer()
	if err != nil {
		return nil, err
	}
	return func(st *RolloutStatus) error { return p.PrintObj(&report{v: st}, out) }, nil
}

// statusText renders a report as kubectl rollout status does, with the
// pods and the controller's explanation on the following lines.
func statusText(st *RolloutStatus) string {
	var b strings.Builder
	switch st.State {
	case StateObserving:
		fmt.Fprintf(&b, "Waiting for sidecarset %q spec update to be observed...\n", st.SidecarSet)
		return b.String()
	case StateComplete:
		if st.Reason == appsv1beta1.ReasonRolloutComplete && st.UpdatedPods == st.MatchedPods {
			fmt.Fprintf(&b, "sidecarset %q successfully rolled out: %s (revision %s)\n", st.SidecarSet, st.Message, st.Revision)
		} else {
			fmt.Fprintf(&b, "sidecarset %q rollout complete as far as its strategy goes: %s: %s\n", st.SidecarSet, st.Reason, st.Message)
		}
		return b.String()
	case StateFailed:
		fmt.Fprintf(&b, "sidecarset %q rollout failed: %d of %d pods updated, %d of them ready\n",
			st.SidecarSet, st.UpdatedPods, st.MatchedPods, st.UpdatedReadyPods)
	default:
		fmt.Fprintf(&b, "Waiting for sidecarset %q rollout to finish: %d of %d pods updated, %d of them ready\n",
			st.SidecarSet, st.UpdatedPods, st.MatchedPods, st.UpdatedReadyPods)
	}
	writePods(&b, "upgrading", st.Upgrading)
	writePods(&b, "failed", st.Failed)
	fmt.Fprintf(&b, "  %s: %s\n", st.Reason, st.Message)
	return b.String()
}

// writePods writes a line naming the first pods of a list, by reason.
func writePods(b *strings.Builder, what string, pods []PodProgress) {
	if len(pods) == 0 {
		return
	}
	reasons := make([]rollout.PodReason, 0, len(pods))
	for _, p := range pods {
		reasons = append(reasons, rollout.PodReason{Pod: p.Pod, Reason: p.Reason})
	}
	fmt.Fprintf(b, "  %s: %s\n", what, rollout.GroupPods(reasons, maxListedPods))
}
