package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/spf13/cobra"

	"github.com/sidecarset-operator/sidecarset-operator/cmd/kubectl-sidecarset/manifest"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/decide"
)

func newInjectCommand(o *options) *cobra.Command {
	var output *output
	cmd := &cobra.Command{
		Use:   "inject -f FILE",
		Short: "Print manifests with the sidecars injected, as the pod webhook would admit their pods",
		Long: "inject reads manifests (Pods, Deployments, StatefulSets, DaemonSets, ReplicaSets, ReplicationControllers,\n" +
			"Jobs, CronJobs; other kinds pass through unchanged) and prints them with each pod or pod template injected\n" +
			"as the operator's pod webhook would inject the pods. A pod template is decided once, for all its pods.\n" +
			"Pods the webhook would refuse make the command fail. Warnings go to standard error.\n" +
			"The default output, and -o yaml, is the manifest with its documents in their order; -o json prints the\n" +
			"objects as JSON (a List when there are several), -o name their names.",
		Example: "  kubectl sidecarset inject -f deploy.yaml | kubectl apply -f -\n" +
			"  kubectl sidecarset inject -f deploy.yaml -o json\n" +
			"  kubectl sidecarset inject -f k8s/ --sidecarsets-from sidecarsets.yaml --timestamp 2026-01-01T00:00:00Z",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			return runInject(cmd.Context(), o, output, cmd)
		},
	}
	cmd.Flags().StringArrayVarP(&o.files, "filename", "f", nil, "A manifest to inject (a file, a directory, or - for standard input).")
	o.addInjectionFlags(cmd.Flags())
	output = addOutputFlags(cmd, outputOptions{name: true, text: "the manifest, YAML"})
	return cmd
}

func runInject(ctx context.Context, o *options, output *output, cmd *cobra.Command) error {
	if len(o.files) == 0 {
		return usagef("give the manifests to inject with -f")
	}
	var docs [][]byte
	var inputs []runtime.Object
	for _, f := range o.files {
		data, err := readInput(f, cmd.InOrStdin())
		if err != nil {
			return err
		}
		objs, err := decodeObjects(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		docs, inputs = append(docs, data), append(inputs, objs...)
	}
	st, err := o.load(ctx, inputs)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for i, data := range docs {
		injector, err := o.manifestInjector(ctx, st, data)
		if err != nil {
			return fmt.Errorf("%s: %w", o.files[i], err)
		}
		res, err := manifest.Inject(ctx, data, o.namespace(), injector)
		if err != nil {
			return fmt.Errorf("%s: %w", o.files[i], err)
		}
		if err := res.Denied(); err != nil {
			return err
		}
		for _, obj := range res.Objects {
			for _, w := range obj.Warnings {
				cmd.PrintErrf("Warning: %s: %s\n", obj, w)
			}
		}
		if out.Len() > 0 && len(res.Manifest) > 0 {
			out.WriteString("---\n")
		}
		out.Write(res.Manifest)
	}
	for _, n := range st.notes {
		cmd.PrintErrf("Note: %s\n", n)
	}
	if f := output.format(); f != outputText && f != outputYAML {
		return printManifest(cmd.OutOrStdout(), output, out.Bytes())
	}
	_, err = cmd.OutOrStdout().Write(out.Bytes())
	return err
}

// printManifest prints the objects of an injected manifest with kubectl's
// printer of -o: several as a List (kubectl's form of several objects),
// except for -o name, which names each.
func printManifest(w io.Writer, output *output, manifest []byte) error {
	var items []unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if len(obj) > 0 {
			items = append(items, unstructured.Unstructured{Object: obj})
		}
	}
	if len(items) == 1 {
		return output.printObjects(w, &items[0])
	}
	list := &unstructured.UnstructuredList{Items: items}
	list.SetAPIVersion("v1")
	list.SetKind("List")
	return output.printObjects(w, list)
}

// manifestInjector returns the webhook over the state, with the labels of
// the namespaces of a manifest's pods.
func (o *options) manifestInjector(ctx context.Context, st *state, data []byte) (manifest.Injector, error) {
	pods, err := manifest.Pods(ctx, data, o.namespace())
	if err != nil {
		return nil, err
	}
	namespaces := map[string]map[string]string{}
	for _, p := range pods {
		ns := p.Object.Namespace
		if _, done := namespaces[ns]; done {
			continue
		}
		labels, known, err := o.namespaceLabels(ctx, st, ns)
		if err != nil {
			return nil, err
		}
		if !known && st.needsNamespaceLabels() {
			st.notes = append(st.notes, fmt.Sprintf("the labels of namespace %s are not known (--namespace-labels): it was taken as having none", ns))
		}
		namespaces[ns] = labels
	}
	pi, err := o.injector(ctx, st, namespaces, false)
	if err != nil {
		return nil, err
	}
	// The manifests have not been admitted: the API server will mount the
	// pods' tokens when they are created.
	pi.Options.BeforeAdmission = true
	return webhookInjector{pi}, nil
}

// webhookInjector is the pod webhook as a manifest.Injector.
type webhookInjector struct{ h *decide.Injector }

func (w webhookInjector) Inject(ctx context.Context, pod *corev1.Pod, namespace string) (manifest.Decision, error) {
	d, err := w.h.Decide(ctx, pod, namespace)
	return manifest.Decision{Output: d.Output, Denied: d.Denied}, err
}
