package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/sidecarset-operator/sidecarset-operator/api/install"
	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// scheme knows the built-in types and the SidecarSet API.
var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	install.Install(scheme)
}

// readInput reads a file, a directory's YAML and JSON files (sorted by
// name), or standard input for "-", as one multi-document manifest.
func readInput(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		if stdin == nil {
			return nil, errors.New("standard input cannot be read here")
		}
		return io.ReadAll(stdin)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return os.ReadFile(path) //nolint:gosec // the user names the file to read
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(path, e.Name())) //nolint:gosec // a file of the directory the user names
		if err != nil {
			return nil, err
		}
		if out.Len() > 0 {
			out.WriteString("\n---\n")
		}
		out.Write(data)
	}
	return out.Bytes(), nil
}

// decodeObjects decodes the objects of a manifest that the scheme knows
// (a List's items one by one; SidecarSets of either version as v1beta1);
// other kinds are skipped.
func decodeObjects(data []byte) ([]runtime.Object, error) {
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []runtime.Object
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if strings.TrimSpace(string(doc)) == "" {
			continue
		}
		objs, err := decodeDocument(decoder, doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, objs...)
	}
}

func decodeDocument(decoder runtime.Decoder, doc []byte) ([]runtime.Object, error) {
	obj, _, err := decoder.Decode(doc, nil, nil)
	switch {
	case runtime.IsNotRegisteredError(err) || runtime.IsMissingKind(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if spoke, ok := obj.(*appsv1alpha1.SidecarSet); ok {
		// A v1alpha1 SidecarSet is read as the API server stores it.
		hub := &appsv1beta1.SidecarSet{}
		if err := spoke.ConvertTo(hub); err != nil {
			return nil, err
		}
		hub.APIVersion, hub.Kind = appsv1beta1.GroupVersion.String(), "SidecarSet"
		return []runtime.Object{hub}, nil
	}
	list, ok := obj.(*corev1.List)
	if !ok {
		return []runtime.Object{obj}, nil
	}
	var out []runtime.Object
	for i, item := range list.Items {
		objs, err := decodeDocument(decoder, item.Raw)
		if err != nil {
			return nil, fmt.Errorf("items[%d]: %w", i, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// namespacesOf returns the labels of the Namespace objects among objs.
func namespacesOf(objs []runtime.Object) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, o := range objs {
		if ns, ok := o.(*corev1.Namespace); ok {
			out[ns.Name] = ns.Labels
		}
	}
	return out
}
