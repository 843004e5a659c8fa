// Package cli is the kubectl sidecarset plugin: explain, which says for a
// pod or a manifest which SidecarSets select it and why the others do not;
// inject, which prints a manifest as the pod webhook would admit its pods;
// and plan, which says what the next rollout of a SidecarSet would do to
// each of its pods. explain and inject gather what the webhook reads (from
// the cluster with the user's kubeconfig, or from files) and run the
// webhook's own decision (decide.Injector.Decide); plan runs the
// controller's (controllers/rollout.Compute): there is no second
// implementation of either. rollout (rollout*.go) follows, lists, undoes,
// pauses and resumes a SidecarSet's rollout, as kubectl rollout does a
// Deployment's.
package cli

import (
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
)

// Streams are the command's standard streams.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// NewCommand returns the plugin's root command, kubectl-sidecarset.
func NewCommand(streams Streams) *cobra.Command {
	return newRootCommand(&options{sidecarSetsFrom: fromCluster, timestamp: "now", coin: 0.5}, streams)
}

// newRootCommand returns the root command over o (a test's may hold a
// client).
func newRootCommand(o *options, streams Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-sidecarset",
		Short: "Explain and preview the sidecar injection and the rollouts of SidecarSets (apps.kruise.io), and manage their rollouts",
		Long: "kubectl sidecarset explains which SidecarSets select a pod and why the others do not, injects\n" +
			"manifests offline as the operator's pod webhook would admit their pods, and plans the next rollout of a\n" +
			"SidecarSet pod by pod. They run the webhook's and the controller's own code.\n" +
			"kubectl sidecarset rollout follows, lists, undoes, pauses and resumes a SidecarSet's rollout.\n\n" + exitCodesHelp,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl sidecarset"},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)

	flags := root.PersistentFlags()
	flags.StringVar(&o.kubeconfig, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config).")
	clientcmd.BindOverrideFlags(&o.overrides, flags, clientcmd.RecommendedConfigOverrideFlags(""))
	flags.StringVar(&o.operatorNamespace, "operator-namespace", "kruise-system",
		"The operator's namespace: its ControllerRevisions and the kruise-configuration ConfigMap.")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return asUsage(err) })
	groupCommand(root)

	root.AddCommand(newExplainCommand(o), newInjectCommand(o), newPlanCommand(o), newRolloutCommand(o), newVersionCommand(o))
	return root
}

// addInjectionFlags registers the flags of the webhook's inputs, for
// explain and inject.
func (o *options) addInjectionFlags(flags *pflag.FlagSet) {
	flags.StringVar(&o.sidecarSetsFrom, "sidecarsets-from", fromCluster,
		"Where the SidecarSets come from: \"cluster\", or a file or directory of SidecarSets (with, optionally, their ControllerRevisions, "+
			"Namespaces and the kruise-configuration ConfigMap).")
	o.addNamespaceLabelsFlag(flags)
	flags.StringVar(&o.timestamp, "timestamp", "now", "The injection time recorded in the pods' annotations (RFC 3339), \"now\" for the current time.")
	flags.Float64Var(&o.coin, "partition-coin", 0.5,
		"The coin, in [0,1), of a pinned revision with policy Partial and a percentage partition: the pinned revision is injected when it is below the percentage.")
	flags.BoolVar(&o.sortByName, "sort-containers-by-name", false, "As the manager's EnableSortSidecarContainerByName feature gate.")
	o.addDefaultsAllowedFlag(flags)
}

// addNamespaceLabelsFlag registers --namespace-labels (explain, inject,
// plan).
func (o *options) addNamespaceLabelsFlag(flags *pflag.FlagSet) {
	flags.StringToStringVar(&o.labelsFlag, "namespace-labels", nil,
		"Labels of the pods' namespace, for namespaceSelectors (default: the Namespace objects of the inputs, else the cluster's).")
	flags.Lookup("namespace-labels").DefValue = "" // the usage says the default
}

// addDefaultsAllowedFlag registers --patch-metadata-defaults-allowed
// (explain, inject, plan).
func (o *options) addDefaultsAllowedFlag(flags *pflag.FlagSet) {
	flags.BoolVar(&o.defaultsAllowed, "patch-metadata-defaults-allowed", false,
		"As the manager's SidecarSetPatchPodMetadataDefaultsAllowed feature gate (the whitelist check of patchPodMetadata).")
}
