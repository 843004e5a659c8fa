package cli

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/version"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// VersionReport is what kubectl sidecarset version prints with -o json or
// yaml.
type VersionReport struct {
	// Plugin is this plugin's version.
	Plugin version.Info `json:"plugin"`
	// Operator is the operator's version, as its manager recorded it on the
	// webhook configuration holding the pod webhooks; nil when unknown.
	Operator *OperatorVersion `json:"operator,omitempty"`
	// OperatorUnknown says why the operator's version is unknown.
	OperatorUnknown string `json:"operatorUnknown,omitempty"`
	// Skew compares the two (absent with --client).
	Skew *version.Skew `json:"skew,omitempty"`
}

// OperatorVersion is the operator's version and where it was read.
type OperatorVersion struct {
	version.Info `json:",inline"`
	// Configuration is the MutatingWebhookConfiguration it was read from.
	Configuration string `json:"configuration"`
}

func newVersionCommand(o *options) *cobra.Command {
	var clientOnly bool
	configName := names.MutatingConfigName
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and the operator's, and warn when they differ",
		Long: "Print the plugin's release version and commit, and the operator's, which its manager records on the\n" +
			"MutatingWebhookConfiguration holding the pod webhooks (annotation " + version.Annotation + ").\n" +
			"explain, inject and plan run the code built into the plugin: when the plugin and the operator are not\n" +
			"the same release, a warning on standard error says so (the exit code stays 0). Reading the operator's\n" +
			"version needs get on that configuration, which the sidecarset-viewer ClusterRole grants.",
		Example: "  kubectl sidecarset version\n  kubectl sidecarset version --client -o json",
		Args:    cobra.NoArgs,
	}
	output := addOutputFlags(cmd, outputOptions{text: "the two versions, one a line"})
	cmd.Flags().BoolVar(&clientOnly, "client", false, "Print the plugin's version only; do not read the cluster.")
	cmd.Flags().StringVar(&configName, "webhook-configuration", configName,
		"The MutatingWebhookConfiguration holding the pod webhooks. When it cannot be read, every configuration that has the pod webhook "+
			names.PodWebhookName+" is looked for (OLM names them).")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := output.validate(); err != nil {
			return err
		}
		r := VersionReport{Plugin: version.Get()}
		var readErr error
		if !clientOnly {
			readErr = o.readOperatorVersion(cmd.Context(), cmd, configName, &r)
			skew := version.Compare(r.Plugin, operatorInfo(r.Operator), r.Operator != nil)
			r.Skew = &skew
		}
		if err := printVersion(cmd.OutOrStdout(), output, &r); err != nil {
			return err
		}
		if r.Skew != nil && r.Skew.Level != version.SkewNone {
			if _, err := fmt.Fprintf(cmd.ErrOrStderr(), "Warning: %s\n", r.Skew.Message); err != nil {
				return err
			}
		}
		return readErr
	}
	return cmd
}

// operatorInfo is the operator's version, zero when unknown.
func operatorInfo(o *OperatorVersion) version.Info {
	if o == nil {
		return version.Info{}
	}
	return o.Info
}

// readOperatorVersion fills the report's operator version from the
// cluster. A configuration the user may not read, or that does not exist,
// leaves it unknown with the reason (no error); any other failure to reach
// the cluster is also returned.
func (o *options) readOperatorVersion(ctx context.Context, cmd *cobra.Command, name string, r *VersionReport) error {
	c, err := o.clusterClient(cmd)
	if err != nil {
		r.OperatorUnknown = err.Error()
		return err
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	getErr := c.Get(ctx, types.NamespacedName{Name: name}, cfg)
	switch {
	case getErr == nil:
		r.Operator, r.OperatorUnknown = operatorVersionIn([]admissionregistrationv1.MutatingWebhookConfiguration{*cfg})
		return nil
	case !apierrors.IsNotFound(getErr) && !apierrors.IsForbidden(getErr):
		r.OperatorUnknown = fmt.Sprintf("reading the MutatingWebhookConfiguration %s: %v", name, getErr)
		return getErr
	}
	// Not there, or not readable by name: OLM's configurations (generated
	// names), or another install's, for a user who may list them.
	list := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	if err := c.List(ctx, list); err != nil {
		r.OperatorUnknown = fmt.Sprintf("the MutatingWebhookConfiguration %s: %s, and the configurations cannot be listed: %s",
			name, apierrors.ReasonForError(getErr), apierrors.ReasonForError(err))
		if !apierrors.IsForbidden(err) {
			return err
		}
		return nil
	}
	r.Operator, r.OperatorUnknown = operatorVersionIn(list.Items)
	return nil
}

// operatorVersionIn finds the version recorded on the configurations that
// hold the pod webhook (the first by name that has one), or says why none
// is known.
func operatorVersionIn(configs []admissionregistrationv1.MutatingWebhookConfiguration) (*OperatorVersion, string) {
	var holding []string
	for _, cfg := range configs {
		if !slices.ContainsFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == names.PodWebhookName }) {
			continue
		}
		holding = append(holding, cfg.Name)
	}
	slices.Sort(holding)
	for _, name := range holding {
		i := slices.IndexFunc(configs, func(c admissionregistrationv1.MutatingWebhookConfiguration) bool { return c.Name == name })
		if info, ok := version.FromAnnotations(configs[i].Annotations); ok {
			return &OperatorVersion{Info: info, Configuration: name}, ""
		}
	}
	if len(holding) == 0 {
		return nil, "no MutatingWebhookConfiguration has the pod webhook " + names.PodWebhookName + ": is the operator installed?"
	}
	return nil, fmt.Sprintf("%s records no version (%s): its manager has not written the pod webhooks' scope since it started, "+
		"runs with --scope-pod-webhook=false, or predates the annotation", holding[0], version.Annotation)
}

// printVersion prints the report as text or with -o.
func printVersion(w io.Writer, output *output, r *VersionReport) error {
	if !output.text() {
		return output.printReport(w, r)
	}
	if _, err := fmt.Fprintf(w, "Plugin:   %s\n", r.Plugin); err != nil {
		return err
	}
	var err error
	switch {
	case r.Operator != nil:
		_, err = fmt.Fprintf(w, "Operator: %s (MutatingWebhookConfiguration %s)\n", r.Operator.Info, r.Operator.Configuration)
	case r.OperatorUnknown != "":
		_, err = fmt.Fprintf(w, "Operator: unknown: %s\n", r.OperatorUnknown)
	}
	return err
}
