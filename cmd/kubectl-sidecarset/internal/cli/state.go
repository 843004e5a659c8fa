package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/cmd/kubectl-sidecarset/explain"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/decide"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// fromCluster is the value of --sidecarsets-from that reads the cluster.
const fromCluster = "cluster"

// options are the flags the commands share.
type options struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides

	files             []string
	sidecarSetsFrom   string
	operatorNamespace string
	labelsFlag        map[string]string
	timestamp         string
	coin              float64
	sortByName        bool
	defaultsAllowed   bool

	// warnings, when set, receives the API server's warnings (as kubectl
	// prints them).
	warnings io.Writer

	// clientConfig and cl are made on first use.
	clientConfig clientcmd.ClientConfig
	cl           client.WithWatch
}

// config is the kubeconfig with the flags' overrides.
func (o *options) config() clientcmd.ClientConfig {
	if o.clientConfig == nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = o.kubeconfig
		o.clientConfig = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &o.overrides)
	}
	return o.clientConfig
}

// namespace is the namespace of the command: -n, or the kubeconfig
// context's, or default.
func (o *options) namespace() string {
	ns, _, err := o.config().Namespace()
	if err != nil || ns == "" {
		return metav1.NamespaceDefault
	}
	return ns
}

// client returns a client of the cluster of the kubeconfig.
func (o *options) client() (client.WithWatch, error) {
	if o.cl != nil {
		return o.cl, nil
	}
	cfg, err := o.config().ClientConfig()
	if err != nil {
		return nil, clusterError{fmt.Errorf("reading the kubeconfig: %w", err)}
	}
	if o.warnings != nil {
		cfg.WarningHandlerWithContext = nil
		cfg.WarningHandler = rest.NewWarningWriter(o.warnings, rest.WarningWriterOptions{Deduplicate: true})
	}
	if o.cl, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, clusterError{err}
	}
	return o.cl, nil
}

// now is the injection time the commands use.
func (o *options) now() (metav1.Time, error) {
	if o.timestamp == "" || o.timestamp == "now" {
		return metav1.NewTime(time.Now().UTC().Truncate(time.Second)), nil
	}
	t, err := time.Parse(time.RFC3339, o.timestamp)
	if err != nil {
		return metav1.Time{}, usagef("--timestamp: %w", err)
	}
	return metav1.NewTime(t.UTC()), nil
}

// state is what the pod webhook reads, gathered from the cluster or from
// files.
type state struct {
	sets       []appsv1beta1.SidecarSet
	revisions  []appsv1.ControllerRevision
	namespaces map[string]map[string]string
	// whitelist is nil when it was not read.
	whitelist *policy.Snapshot
	// whitelistStore holds it as the webhook does, for the injector: the
	// ConfigMap read, or none (a missing ConfigMap) when it was not found or
	// not given.
	whitelistStore *policy.Store
	webhooks       explain.Webhooks
	// live is set when the state comes from the cluster.
	live bool
	// notes are what the user should know about the gathering.
	notes []string
}

// load gathers the state: from the cluster, or from --sidecarsets-from.
// inputs are the objects of the -f files (their Namespaces count).
func (o *options) load(ctx context.Context, inputs []runtime.Object) (*state, error) {
	st := &state{namespaces: namespacesOf(inputs)}
	st.webhooks.Required.Name, st.webhooks.BestEffort.Name = names.PodWebhookName, names.PodBestEffortWebhookName
	if o.sidecarSetsFrom == fromCluster {
		if err := o.loadCluster(ctx, st); err != nil {
			return nil, err
		}
	} else if err := o.loadFile(st); err != nil {
		return nil, err
	}
	slices.SortFunc(st.sets, func(a, b appsv1beta1.SidecarSet) int { return strings.Compare(a.Name, b.Name) })
	return st, nil
}

func (o *options) loadCluster(ctx context.Context, st *state) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	st.live = true
	sets := &appsv1beta1.SidecarSetList{}
	if err := c.List(ctx, sets); err != nil {
		return fmt.Errorf("listing SidecarSets: %w", err)
	}
	st.sets = sets.Items
	if slices.ContainsFunc(st.sets, func(s appsv1beta1.SidecarSet) bool { return s.Spec.InjectionStrategy.Revision != nil }) {
		revs := &appsv1.ControllerRevisionList{}
		if err := c.List(ctx, revs, client.InNamespace(o.operatorNamespace), client.HasLabels{appsv1beta1.SidecarSetNameLabel}); err != nil {
			return fmt.Errorf("listing the ControllerRevisions of %s: %w", o.operatorNamespace, err)
		}
		st.revisions = revs.Items
	}
	cm := &corev1.ConfigMap{}
	err = c.Get(ctx, types.NamespacedName{Namespace: o.operatorNamespace, Name: appsv1beta1.ConfigurationConfigMapName}, cm)
	switch {
	case apierrors.IsNotFound(err):
		st.whitelist = &policy.Snapshot{}
	case err != nil:
		st.notes = append(st.notes, fmt.Sprintf("the patchPodMetadata whitelist was not read: %v", err))
	default:
		st.whitelist, st.whitelistStore = snapshotOf(cm)
	}
	configs := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	if err := c.List(ctx, configs); err != nil {
		st.webhooks.NotRead = fmt.Sprintf("the MutatingWebhookConfigurations were not read: %v", err)
		return nil
	}
	st.webhooks.Read = true
	for _, cfg := range configs.Items {
		for _, w := range cfg.Webhooks {
			inst := explain.Installed{Configuration: cfg.Name, Webhook: w}
			switch w.Name {
			case names.PodWebhookName:
				st.webhooks.Required.Installed = append(st.webhooks.Required.Installed, inst)
			case names.PodBestEffortWebhookName:
				st.webhooks.BestEffort.Installed = append(st.webhooks.BestEffort.Installed, inst)
			}
		}
	}
	return nil
}

// loadFile reads SidecarSets, and the ControllerRevisions, Namespaces and
// kruise-configuration ConfigMap that may come with them, from a file or
// directory.
func (o *options) loadFile(st *state) error {
	data, err := readInput(o.sidecarSetsFrom, nil)
	if err != nil {
		return fmt.Errorf("--sidecarsets-from: %w", err)
	}
	objs, err := decodeObjects(data)
	if err != nil {
		return fmt.Errorf("--sidecarsets-from %s: %w", o.sidecarSetsFrom, err)
	}
	st.webhooks.NotRead = "the SidecarSets come from a file"
	for name, labels := range namespacesOf(objs) {
		if _, ok := st.namespaces[name]; !ok {
			st.namespaces[name] = labels
		}
	}
	for _, obj := range objs {
		switch x := obj.(type) {
		case *appsv1beta1.SidecarSet:
			st.sets = append(st.sets, *x)
		case *appsv1.ControllerRevision:
			if x.Namespace == "" {
				x.Namespace = o.operatorNamespace
			}
			st.revisions = append(st.revisions, *x)
		case *corev1.ConfigMap:
			if x.Name == appsv1beta1.ConfigurationConfigMapName && (x.Namespace == "" || x.Namespace == o.operatorNamespace) {
				st.whitelist, st.whitelistStore = snapshotOf(x)
			}
		}
	}
	if st.whitelist == nil && slices.ContainsFunc(st.sets, func(s appsv1beta1.SidecarSet) bool { return len(s.Spec.PatchPodMetadata) > 0 }) {
		st.notes = append(st.notes, fmt.Sprintf("no %s ConfigMap in %s: patchPodMetadata is not checked against the whitelist",
			appsv1beta1.ConfigurationConfigMapName, o.sidecarSetsFrom))
	}
	return nil
}

// snapshotOf loads the whitelist of a kruise-configuration ConfigMap as the
// webhooks do (a whitelist that does not parse is kept as LoadError).
func snapshotOf(cm *corev1.ConfigMap) (*policy.Snapshot, *policy.Store) {
	store := policy.NewStore()
	_ = store.Update(cm) // an invalid whitelist is recorded in the snapshot's LoadError
	return store.Current(), store
}

// namespaceLabels returns the labels of a namespace: --namespace-labels, a
// Namespace object among the inputs, or the cluster's (in cluster mode).
// known is false when none says.
func (o *options) namespaceLabels(ctx context.Context, st *state, name string) (labels map[string]string, known bool, err error) {
	if o.labelsFlag != nil {
		return withNameLabel(name, o.labelsFlag), true, nil
	}
	if l, ok := st.namespaces[name]; ok {
		return withNameLabel(name, l), true, nil
	}
	if !st.live {
		return withNameLabel(name, nil), false, nil
	}
	c, err := o.client()
	if err != nil {
		return nil, false, err
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return withNameLabel(name, nil), false, nil
		}
		return nil, false, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	return withNameLabel(name, ns.Labels), true, nil
}

// needsNamespaceLabels reports whether some SidecarSet selects namespaces
// by their labels.
func (st *state) needsNamespaceLabels() bool {
	return slices.ContainsFunc(st.sets, func(s appsv1beta1.SidecarSet) bool {
		return match.NeedsNamespaceLabels(&s)
	})
}

// injector returns the pod webhook's handler over the state, with the
// namespaces' labels given.
func (o *options) injector(ctx context.Context, st *state, namespaces map[string]map[string]string, every bool) (*decide.Injector, error) {
	sets := make([]*appsv1beta1.SidecarSet, len(st.sets))
	for i := range st.sets {
		sets[i] = &st.sets[i]
	}
	registry, err := candidate.New(sets...)
	if err != nil {
		return nil, err
	}
	reader, err := newStateReader(ctx, namespaces, st.revisions)
	if err != nil {
		return nil, err
	}
	now, err := o.now()
	if err != nil {
		return nil, err
	}
	if o.coin < 0 || o.coin >= 1 {
		return nil, fmt.Errorf("--partition-coin %v: want a number in [0,1)", o.coin)
	}
	coin := o.coin
	return &decide.Injector{
		Registry:  registry,
		Reader:    reader,
		Namespace: o.operatorNamespace,
		Options:   inject.Options{SortContainersByName: o.sortByName},
		// The injector applies patchPodMetadata under the whitelist, as
		// the webhook does (no store: as if the ConfigMap were missing).
		Whitelist:                    st.whitelistStore,
		PatchMetadataDefaultsAllowed: o.defaultsAllowed,
		Now:                          func() metav1.Time { return now },
		Coin:                         func() float64 { return coin },
		EverySidecarSet:              every,
	}, nil
}
