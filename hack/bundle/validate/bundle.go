// Package validate checks an OLM registry+v1 bundle with the rules
// OperatorHub applies (bundle format, bundle, CSV, CRD, OperatorHub fields,
// capabilities and categories, good practices) and with this project's own
// invariants. The rules are restated from the operator-framework documentation
// and sources; no code of theirs is used. Each rule is a pure function of the
// loaded bundle, except the API-server check, which takes the server as an
// argument.
package validate

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/layout"
)

// Bundle is a bundle as the rules see it.
type Bundle struct {
	// Files lists every entry under the bundle root, slash-separated and
	// sorted; directories end with a slash.
	Files []string
	// Annotations are metadata/annotations.yaml, nil if it is missing or
	// does not parse.
	Annotations map[string]string
	// Dockerfile is bundle.Dockerfile, nil if none was given.
	Dockerfile *Dockerfile
	// CSV is the ClusterServiceVersion, nil if there is none or it does not
	// decode; CSVFiles lists the files holding a CSV.
	CSV      *csv.ClusterServiceVersion
	CSVFiles []string
	// Objects are the other manifests.
	Objects []Object
	// CompressedSize is the gzip-compressed size of the bundle's files.
	CompressedSize int64
	// LoadFindings are the problems found while reading the files.
	LoadFindings []Finding
}

// Object is one manifest and the file it comes from.
type Object struct {
	File string
	*unstructured.Unstructured
}

// Dockerfile is what the rules read from bundle.Dockerfile.
type Dockerfile struct {
	// Labels are the LABEL key=value pairs.
	Labels map[string]string
	// Copies are the COPY instructions' source and destination.
	Copies [][2]string
}

// Load reads a bundle: fsys is rooted at the bundle directory; dockerfile is
// the content of bundle.Dockerfile, or nil. Problems with the content are
// findings; the error is for I/O failures only.
func Load(fsys fs.FS, dockerfile []byte) (*Bundle, error) {
	b := &Bundle{}
	var all bytes.Buffer
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if d.IsDir() {
			b.Files = append(b.Files, p+"/")
			return nil
		}
		b.Files = append(b.Files, p)
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		all.Write(data)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(b.Files)
	b.CompressedSize = gzipSize(all.Bytes())

	if data, err := fs.ReadFile(fsys, layout.AnnotationsFile); err == nil {
		var f struct {
			Annotations map[string]string `json:"annotations"`
		}
		if err := yaml.UnmarshalStrict(data, &f); err != nil {
			b.LoadFindings = append(b.LoadFindings, Finding{Rule: RuleAnnotationsFile, Severity: Error,
				Message: fmt.Sprintf("%s does not parse: %v", layout.AnnotationsFile, err)})
		} else {
			b.Annotations = f.Annotations
			if b.Annotations == nil {
				b.Annotations = map[string]string{}
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}

	for _, f := range b.Files {
		dir, name := path.Split(f)
		if dir != layout.ManifestsDir || name == "" || strings.HasPrefix(name, ".") {
			continue
		}
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		b.addManifests(f, data)
	}
	if dockerfile != nil {
		b.Dockerfile = ParseDockerfile(dockerfile)
	}
	return b, nil
}

// addManifests parses the objects of one manifest file.
func (b *Bundle) addManifests(file string, data []byte) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			b.LoadFindings = append(b.LoadFindings, Finding{Rule: RuleParse, Severity: Error, Message: fmt.Sprintf("%s: %v", file, err)})
			return
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil || u.GetKind() == "" || u.GetAPIVersion() == "" {
			msg := "not a Kubernetes object (apiVersion and kind are required)"
			if err != nil {
				msg = err.Error()
			}
			b.LoadFindings = append(b.LoadFindings, Finding{Rule: RuleParse, Severity: Error, Message: fmt.Sprintf("%s: %s", file, msg)})
			continue
		}
		if u.GetKind() == csv.Kind {
			b.CSVFiles = append(b.CSVFiles, file)
			c, err := csv.Decode(doc)
			if err != nil {
				b.LoadFindings = append(b.LoadFindings, Finding{Rule: RuleCSVSchema, Severity: Error, Message: fmt.Sprintf("%s: %v", file, err)})
				continue
			}
			if b.CSV == nil {
				b.CSV = c
			}
			continue
		}
		b.Objects = append(b.Objects, Object{File: file, Unstructured: u})
	}
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for line := range bytes.SplitSeq(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

func gzipSize(data []byte) int64 {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(data)
	_ = w.Close()
	return int64(buf.Len())
}

// ParseDockerfile reads the LABEL and COPY instructions of a Dockerfile.
// Labels are key=value pairs, several per instruction allowed, values
// optionally double-quoted.
func ParseDockerfile(data []byte) *Dockerfile {
	d := &Dockerfile{Labels: map[string]string{}}
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "LABEL":
			for _, kv := range fields[1:] {
				k, v, _ := strings.Cut(kv, "=")
				d.Labels[k] = strings.Trim(v, `"`)
			}
		case "COPY":
			if len(fields) == 3 {
				d.Copies = append(d.Copies, [2]string{fields[1], fields[2]})
			}
		}
	}
	return d
}

// CRDs returns the CustomResourceDefinition manifests.
func (b *Bundle) CRDs() []Object {
	var out []Object
	for _, o := range b.Objects {
		if o.GetKind() == "CustomResourceDefinition" {
			out = append(out, o)
		}
	}
	return out
}
