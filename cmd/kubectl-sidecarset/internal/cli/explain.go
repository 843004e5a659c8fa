package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/spf13/cobra"

	"github.com/sidecarset-operator/sidecarset-operator/cmd/kubectl-sidecarset/explain"
	"github.com/sidecarset-operator/sidecarset-operator/cmd/kubectl-sidecarset/manifest"
)

// target is one pod to explain.
type target struct {
	source   string
	pod      *corev1.Pod
	existing bool
}

func newExplainCommand(o *options) *cobra.Command {
	var output *output
	cmd := &cobra.Command{
		Use:   "explain (pod/NAME | pod NAME | -f FILE)",
		Short: "Say which SidecarSets select a pod, why the others do not, and what injection adds",
		Long: "explain runs the pod webhook's decision for a pod of the cluster (as if it were created now) or for the pods\n" +
			"and pod templates of manifests, and prints, for every SidecarSet, whether it selects the pod and why not\n" +
			"(selector, namespace, namespaceSelector, paused, canary, name conflict, ...), whether the API server sends the\n" +
			"pod to a pod webhook at all (their scope), what injection adds, and what an existing pod's annotations record.",
		Example: "  kubectl sidecarset explain pod/web-7d4b9 -n shop\n" +
			"  kubectl sidecarset explain -f deploy.yaml\n" +
			"  kubectl sidecarset explain -f pod.yaml --sidecarsets-from sidecarsets.yaml",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			return runExplain(cmd.Context(), o, args, output, cmd)
		},
	}
	cmd.Flags().StringArrayVarP(&o.files, "filename", "f", nil, "A manifest of pods or workloads to explain (a file, a directory, or - for standard input).")
	o.addInjectionFlags(cmd.Flags())
	output = addOutputFlags(cmd, outputOptions{text: "the report as text"})
	return cmd
}

func runExplain(ctx context.Context, o *options, args []string, output *output, cmd *cobra.Command) error {
	targets, inputs, err := explainTargets(ctx, o, args, cmd)
	if err != nil {
		return err
	}
	st, err := o.load(ctx, inputs)
	if err != nil {
		return err
	}
	for _, n := range st.notes {
		cmd.PrintErrf("Note: %s\n", n)
	}
	var reports []explain.Report
	for _, t := range targets {
		r, err := explainOne(ctx, o, st, t)
		if err != nil {
			return fmt.Errorf("%s: %w", t.source, err)
		}
		reports = append(reports, r)
	}
	if !output.text() {
		if len(reports) == 1 {
			return output.printReport(cmd.OutOrStdout(), reports[0])
		}
		return output.printReport(cmd.OutOrStdout(), reports)
	}
	var out bytes.Buffer
	for i, r := range reports {
		if i > 0 {
			out.WriteString("\n---\n")
		}
		if err := r.WriteText(&out); err != nil {
			return err
		}
	}
	_, err = cmd.OutOrStdout().Write(out.Bytes())
	return err
}

// explainTargets finds the pods to explain: one of the cluster, or those
// of the -f manifests (whose objects are returned too).
func explainTargets(ctx context.Context, o *options, args []string, cmd *cobra.Command) ([]target, []runtime.Object, error) {
	name, err := podName(args)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case name != "" && len(o.files) > 0:
		return nil, nil, usagef("give a pod or -f, not both")
	case name != "":
		c, err := o.client()
		if err != nil {
			return nil, nil, err
		}
		pod := &corev1.Pod{}
		key := types.NamespacedName{Namespace: o.namespace(), Name: name}
		if err := c.Get(ctx, key, pod); err != nil {
			return nil, nil, fmt.Errorf("reading pod %s: %w", key, err)
		}
		return []target{{source: "Pod " + key.String(), pod: asCreated(pod), existing: true}}, nil, nil
	case len(o.files) == 0:
		return nil, nil, usagef("give a pod (pod/NAME) or a manifest (-f FILE)")
	}
	var targets []target
	var inputs []runtime.Object
	for _, f := range o.files {
		data, err := readInput(f, cmd.InOrStdin())
		if err != nil {
			return nil, nil, err
		}
		pods, err := manifest.Pods(ctx, data, o.namespace())
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		objs, err := decodeObjects(data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		inputs = append(inputs, objs...)
		for _, p := range pods {
			source := p.Object.String()
			if p.Object.Kind != "Pod" {
				source += " (pod template)"
			}
			targets = append(targets, target{source: source, pod: p.Pod})
		}
	}
	if len(targets) == 0 {
		return nil, nil, errors.New("the manifests hold no pod and no pod template")
	}
	return targets, inputs, nil
}

// podName reads "pod/NAME" or "pod NAME" from the arguments.
func podName(args []string) (string, error) {
	switch len(args) {
	case 0:
		return "", nil
	case 1:
		kind, name, ok := strings.Cut(args[0], "/")
		if ok && isPodKind(kind) && name != "" {
			return name, nil
		}
	case 2:
		if isPodKind(args[0]) {
			return args[1], nil
		}
	}
	return "", usagef("%q: explain takes a pod, as pod/NAME or pod NAME", strings.Join(args, " "))
}

func isPodKind(s string) bool {
	return s == "pod" || s == "pods" || s == "po"
}

// asCreated returns an existing pod as its creation request would carry it:
// no status, no deletion, no server-set identity.
func asCreated(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	p.Status = corev1.PodStatus{}
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = nil, nil
	p.ManagedFields = nil
	return p
}

// explainOne runs the webhook's decision for one pod and explains it.
func explainOne(ctx context.Context, o *options, st *state, t target) (explain.Report, error) {
	ns := t.pod.Namespace
	if ns == "" {
		ns = o.namespace()
	}
	labels, known, err := o.namespaceLabels(ctx, st, ns)
	if err != nil {
		return explain.Report{}, err
	}
	injector, err := o.injector(ctx, st, map[string]map[string]string{ns: labels}, true)
	if err != nil {
		return explain.Report{}, err
	}
	d, err := injector.Decide(ctx, t.pod, ns)
	if err != nil {
		return explain.Report{}, err
	}
	r := explain.Explain(ctx, explain.Input{
		Pod: t.pod, Existing: t.existing, Source: t.source, Namespace: ns, NamespaceLabels: labels,
		Injection: d.Input, Output: d.Output, Denied: d.Denied,
		Whitelist: st.whitelist, DefaultsAllowed: o.defaultsAllowed, Webhooks: st.webhooks, OperatorNamespace: o.operatorNamespace,
	})
	if !known && st.needsNamespaceLabels() {
		r.Notes = append(r.Notes, fmt.Sprintf("the labels of namespace %s are not known (--namespace-labels): it was taken as having none", ns))
	}
	return r, nil
}
