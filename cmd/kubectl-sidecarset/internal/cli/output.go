package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// Output formats the commands print themselves; the others are kubectl's
// printers (k8s.io/cli-runtime): json, yaml, kyaml, name, jsonpath,
// go-template and their -file forms.
const (
	outputText = ""
	outputWide = "wide"
	outputJSON = "json"
	outputYAML = "yaml"
)

// output is a command's -o (and --template, --show-managed-fields,
// --allow-missing-template-keys), as kubectl's.
type output struct {
	flags *genericclioptions.PrintFlags
	// wide is set for a command whose table has a wide form.
	wide bool
	// formats are the values -o takes, for the errors.
	formats []string
	// made is the printer, made once: the YAML printer separates the
	// documents of successive prints.
	made printers.ResourcePrinter
}

// outputOptions are the formats a command offers besides kubectl's json,
// yaml, jsonpath and go-template.
type outputOptions struct {
	// name: -o name prints the objects as KIND.GROUP/NAME (commands that
	// print Kubernetes objects).
	name bool
	// wide: -o wide prints the table with more columns.
	wide bool
	// text is what the default output is, for the help.
	text string
}

// addOutputFlags registers -o and kubectl's printing flags on cmd.
func addOutputFlags(cmd *cobra.Command, opts outputOptions) *output {
	f := genericclioptions.NewPrintFlags("").WithTypeSetter(scheme)
	if !opts.name {
		f.NamePrintFlags = nil
	}
	f.AddFlags(cmd)
	formats := f.AllowedFormats()
	if opts.wide {
		formats = append([]string{outputWide}, formats...)
	}
	cmd.Flag("output").Usage = fmt.Sprintf("Output format. One of: (%s). Default: %s.", strings.Join(formats, ", "), opts.text)
	return &output{flags: f, wide: opts.wide, formats: formats}
}

// format is the -o given, "" for the default text (or go-template when
// only --template is given).
func (o *output) format() string {
	format := strings.ToLower(*o.flags.OutputFormat)
	tmpl := o.flags.TemplatePrinterFlags.TemplateArgument
	if format == "" && tmpl != nil && *tmpl != "" {
		return "go-template"
	}
	return format
}

// text reports whether the command prints its own text (the default, or
// wide).
func (o *output) text() bool {
	f := o.format()
	return f == outputText || (o.wide && f == outputWide)
}

// validate checks -o before the command does anything.
func (o *output) validate() error {
	if o.text() {
		return nil
	}
	_, err := o.printer()
	return err
}

// printer is kubectl's printer of -o.
func (o *output) printer() (printers.ResourcePrinter, error) {
	if o.made != nil {
		return o.made, nil
	}
	p, err := o.flags.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return nil, usagef("--output %q: want one of %s", o.format(), strings.Join(o.formats, ", "))
	}
	if err != nil {
		return nil, asUsage(err)
	}
	o.made = p
	return p, nil
}

// printObjects prints Kubernetes objects with kubectl's printer of -o.
func (o *output) printObjects(w io.Writer, objs ...runtime.Object) error {
	p, err := o.printer()
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := p.PrintObj(obj, w); err != nil {
			return err
		}
	}
	return nil
}

// printReport prints a report (not a Kubernetes object) with kubectl's
// printer of -o: json and yaml print its JSON form; jsonpath and
// go-template read a list as {"items": [...]}, as they read kubectl's
// lists.
func (o *output) printReport(w io.Writer, v any) error {
	p, err := o.printer()
	if err != nil {
		return err
	}
	if !slices.Contains([]string{outputJSON, outputYAML, "kyaml"}, o.format()) && reflect.ValueOf(v).Kind() == reflect.Slice {
		v = map[string]any{"items": v}
	}
	return p.PrintObj(&report{v: v}, w)
}

// report makes a value printable by kubectl's printers, which print its
// JSON form. They print typed objects only: its kind is set, never
// printed.
type report struct{ v any }

// reportKind is the kind of every report.
var reportKind = schema.GroupVersionKind{Group: "kubectl.sidecarset-operator.dev", Version: "v1", Kind: "Report"}

func (r *report) GetObjectKind() schema.ObjectKind              { return r }
func (r *report) GroupVersionKind() schema.GroupVersionKind     { return reportKind }
func (r *report) SetGroupVersionKind(_ schema.GroupVersionKind) {}
func (r *report) DeepCopyObject() runtime.Object                { return &report{v: r.v} }
func (r *report) MarshalJSON() ([]byte, error)                  { return json.Marshal(r.v) }
