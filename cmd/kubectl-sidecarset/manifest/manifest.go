// Package manifest injects sidecars into the pods and pod templates of a
// multi-document YAML manifest, as the pod webhook would inject the pods
// created from it: the offline half of the kubectl plugin (kubectl
// sidecarset inject), in the manner of istioctl kube-inject.
//
// Pods, and the pod templates of Deployments, StatefulSets, DaemonSets,
// ReplicaSets, ReplicationControllers, Jobs and CronJobs, are decided by an
// Injector (the webhook's own decision, decide.Injector.Decide) and
// the decision's JSON patch is applied to the template as written, as the
// API server applies the webhook's patch to the object as sent: fields the
// Go types do not know survive. Every other document, and every document
// that injection leaves unchanged, is written back byte for byte; changed
// ones are written as YAML with sorted keys. Lists (kind List) are entered.
package manifest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

// Injector decides the injection of one pod being created in a namespace.
type Injector interface {
	Inject(ctx context.Context, pod *corev1.Pod, namespace string) (Decision, error)
}

// Decision is an Injector's answer.
type Decision struct {
	// Output is the injector's output; its Patch is applied.
	Output inject.Output
	// Denied is set when the pod would be refused.
	Denied error
}

// Object is what happened to one pod or pod template.
type Object struct {
	// Kind, Namespace and Name identify the object holding the pod.
	Kind      string
	Namespace string
	Name      string
	// Injected names the SidecarSets injected.
	Injected []string
	// Warnings are the admission warnings.
	Warnings []string
	// Denied is the refusal of the pods, if any.
	Denied error
}

func (o Object) refused() bool { return o.Denied != nil }

// String names the object as kubectl does, with its namespace.
func (o Object) String() string {
	return fmt.Sprintf("%s %s/%s", o.Kind, o.Namespace, o.Name)
}

// Result is an injected manifest.
type Result struct {
	// Manifest is the manifest with the sidecars injected.
	Manifest []byte
	// Objects are the pods and pod templates found, in manifest order.
	Objects []Object
}

// Denied returns the refusals of the objects, joined; nil if none.
func (r Result) Denied() error {
	var errs []error
	for _, o := range r.Objects {
		if o.Denied != nil {
			errs = append(errs, fmt.Errorf("%s: the webhook would deny its pods: %w", o, o.Denied))
		}
	}
	return errors.Join(errs...)
}

// templatePaths are where each kind keeps the pod it creates, by group and
// kind: the empty path is the object itself.
var templatePaths = map[schema.GroupKind][]string{
	{Group: "", Kind: "Pod"}:                   {},
	{Group: "", Kind: "ReplicationController"}: {"spec", "template"},
	{Group: "apps", Kind: "Deployment"}:        {"spec", "template"},
	{Group: "apps", Kind: "StatefulSet"}:       {"spec", "template"},
	{Group: "apps", Kind: "DaemonSet"}:         {"spec", "template"},
	{Group: "apps", Kind: "ReplicaSet"}:        {"spec", "template"},
	{Group: "batch", Kind: "Job"}:              {"spec", "template"},
	{Group: "batch", Kind: "CronJob"}:          {"spec", "jobTemplate", "spec", "template"},
}

// Inject injects every pod and pod template of a manifest. Objects without
// a namespace are in defaultNamespace.
func Inject(ctx context.Context, data []byte, defaultNamespace string, injector Injector) (Result, error) {
	var res Result
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out bytes.Buffer
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Result{}, fmt.Errorf("document %d: %w", i+1, err)
		}
		if isBlank(doc) {
			continue
		}
		written, objects, err := injectDocument(ctx, doc, defaultNamespace, injector)
		if err != nil {
			return Result{}, fmt.Errorf("document %d: %w", i+1, err)
		}
		res.Objects = append(res.Objects, objects...)
		if out.Len() > 0 {
			out.WriteString("---\n")
		}
		out.Write(written)
		if !bytes.HasSuffix(written, []byte("\n")) {
			out.WriteByte('\n')
		}
	}
	res.Manifest = out.Bytes()
	return res, nil
}

// isBlank reports whether a document holds nothing but blank lines (a
// document of comments is written back).
func isBlank(doc []byte) bool {
	for line := range strings.SplitSeq(string(doc), "\n") {
		if line = strings.TrimSpace(line); line != "" && line != "---" {
			return false
		}
	}
	return true
}

// injectDocument injects one document, and returns it as it is when
// nothing changes.
func injectDocument(ctx context.Context, doc []byte, defaultNamespace string, injector Injector) ([]byte, []Object, error) {
	jsonDoc, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(jsonDoc, &obj); err != nil {
		return nil, nil, fmt.Errorf("not an object: %w", err)
	}
	changed, objects, err := injectObject(ctx, obj, defaultNamespace, injector)
	if err != nil || !changed {
		return doc, objects, err
	}
	written, err := yaml.Marshal(obj)
	return written, objects, err
}

// injectObject injects an object in place (a List's items one by one) and
// reports whether it changed.
func injectObject(ctx context.Context, obj map[string]any, defaultNamespace string, injector Injector) (bool, []Object, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return false, nil, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	if gv.Group == "" && kind == "List" {
		items, _ := obj["items"].([]any)
		changed := false
		var objects []Object
		for i, item := range items {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			c, o, err := injectObject(ctx, m, defaultNamespace, injector)
			if err != nil {
				return false, nil, fmt.Errorf("items[%d]: %w", i, err)
			}
			changed = changed || c
			objects = append(objects, o...)
		}
		return changed, objects, nil
	}
	path, ok := templatePaths[schema.GroupKind{Group: gv.Group, Kind: kind}]
	if !ok {
		return false, nil, nil
	}
	meta, _ := obj["metadata"].(map[string]any)
	o := Object{Kind: kind, Namespace: stringField(meta, "namespace"), Name: stringField(meta, "name")}
	if o.Namespace == "" {
		o.Namespace = defaultNamespace
	}
	template, err := templateAt(obj, path)
	if err != nil {
		return false, nil, fmt.Errorf("%s: %w", o, err)
	}
	patched, err := injectTemplate(ctx, template, &o, injector)
	if err != nil || patched == nil {
		return false, []Object{o}, err
	}
	if len(path) == 0 {
		clear(obj)
		maps.Copy(obj, patched)
	} else {
		parent, _ := templateAt(obj, path[:len(path)-1])
		parent[path[len(path)-1]] = patched
	}
	return true, []Object{o}, nil
}

// injectTemplate decides one pod template and returns it patched, or nil
// when nothing changes.
func injectTemplate(ctx context.Context, template map[string]any, o *Object, injector Injector) (map[string]any, error) {
	if _, ok := template["metadata"].(map[string]any); !ok {
		// The patch may add annotations: give it a metadata to add them to.
		template = maps.Clone(template)
		template["metadata"] = map[string]any{}
	}
	raw, err := json.Marshal(template)
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(raw, pod); err != nil {
		return nil, fmt.Errorf("%s: the pod template does not decode: %w", o, err)
	}
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	if pod.Name == "" && pod.GenerateName == "" {
		pod.GenerateName = o.Name + "-"
	}
	d, err := injector.Inject(ctx, pod, o.Namespace)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o, err)
	}
	o.Injected, o.Warnings, o.Denied = d.Output.Injected, d.Output.Warnings, d.Denied
	if len(d.Output.Patch) == 0 || o.refused() {
		return nil, nil // a refused pod is reported in o, and left as written
	}
	ops, err := json.Marshal(d.Output.Patch)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatchapply.DecodePatch(ops)
	if err != nil {
		return nil, err
	}
	patchedRaw, err := patch.Apply(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: applying the webhook's patch: %w", o, err)
	}
	var patched map[string]any
	if err := json.Unmarshal(patchedRaw, &patched); err != nil {
		return nil, err
	}
	return patched, nil
}

// templateAt returns the object at a path of nested fields.
func templateAt(obj map[string]any, path []string) (map[string]any, error) {
	cur := obj
	for i, field := range path {
		next, ok := cur[field].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("no object at .%s", strings.Join(path[:i+1], "."))
		}
		cur = next
	}
	return cur, nil
}

func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// Pod is a pod or pod template found in a manifest.
type Pod struct {
	// Object holds the pod.
	Object Object
	// Pod is the pod, or a pod made of the template.
	Pod *corev1.Pod
}

// Pods returns the pods and pod templates of a manifest, in manifest order,
// each as the webhook would receive it. Objects without a namespace are in
// defaultNamespace.
func Pods(ctx context.Context, data []byte, defaultNamespace string) ([]Pod, error) {
	c := &collector{}
	res, err := Inject(ctx, data, defaultNamespace, c)
	if err != nil {
		return nil, err
	}
	out := make([]Pod, len(res.Objects))
	for i, o := range res.Objects {
		out[i] = Pod{Object: o, Pod: c.pods[i]}
	}
	return out, nil
}

// collector is an Injector that keeps the pods and changes nothing.
type collector struct{ pods []*corev1.Pod }

func (c *collector) Inject(_ context.Context, pod *corev1.Pod, namespace string) (Decision, error) {
	pod.Namespace = namespace
	c.pods = append(c.pods, pod)
	return Decision{Output: inject.Output{Pod: pod}}, nil
}
