package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// HistoryEntry is one revision of a SidecarSet's history.
type HistoryEntry struct {
	// Revision is the ControllerRevision's number, Name its name.
	Revision int64  `json:"revision"`
	Name     string `json:"name"`
	// CustomVersion is its apps.kruise.io/sidecarset-custom-version label.
	CustomVersion string `json:"customVersion,omitempty"`
	// Images are its sidecars' images, as container=image, init containers
	// first.
	Images []string `json:"images"`
	// Hash is the apps.kruise.io/sidecarset-hash its pods record.
	Hash string `json:"hash"`
	// Created is when it was recorded.
	Created metav1.Time `json:"created"`
	// Current is set for the revision of the SidecarSet's current spec
	// (status.latestRevision).
	Current bool `json:"current"`
	// Pods counts the pods that record it: injected with it, or upgraded to
	// it.
	Pods int `json:"pods"`
	// Spec is what it recorded (shown for one revision).
	Spec *revision.Data `json:"spec,omitempty"`
}

func newRolloutHistoryCommand(o *options) *cobra.Command {
	var (
		number int64
		output *output
	)
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List a SidecarSet's revisions (its ControllerRevisions), with how many pods run each",
		Long: "history lists the ControllerRevisions a SidecarSet recorded in the operator's namespace, by revision number:\n" +
			"number, name, custom version, sidecar images, when it was recorded, whether it is the current spec, and how\n" +
			"many of the SidecarSet's pods record it (-o wide adds the hash the pods record). An undo gives the revision it\n" +
			"restores the next number, so the numbers of a history change with each undo. --revision N shows what one\n" +
			"revision recorded. -o name prints the ControllerRevisions' names.",
		Example: "  kubectl sidecarset rollout history log-agent\n" +
			"  kubectl sidecarset rollout history log-agent --revision 2 -o yaml",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, s, err := o.rolloutTarget(cmd, args, output)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			revs, err := o.revisionsOf(ctx, c, s)
			if err != nil {
				return err
			}
			pods, err := podsOf(ctx, c, s)
			if err != nil {
				return err
			}
			entries, err := historyOf(s, revs, pods)
			if err != nil {
				return err
			}
			if number != 0 {
				return printRevision(cmd.OutOrStdout(), output, s.Name, entries, revs, number)
			}
			switch {
			case output.format() == "name":
				return output.printObjects(cmd.OutOrStdout(), revisionObjects(revs)...)
			case !output.text():
				return output.printReport(cmd.OutOrStdout(), entries)
			}
			return writeHistory(cmd.OutOrStdout(), entries, output.format() == outputWide)
		},
	}
	cmd.Flags().Int64Var(&number, "revision", 0, "Show the details of this revision (its number).")
	output = addOutputFlags(cmd, outputOptions{name: true, wide: true, text: "a table of the revisions"})
	return cmd
}

// historyOf lists a SidecarSet's revisions (sorted by number) with the
// number of pods that record each: by the controllerRevision of their hash
// entry, or, for pods that lack one (injected by an older OpenKruise), by
// the hash.
func historyOf(s *appsv1beta1.SidecarSet, revs []appsv1.ControllerRevision, pods []*corev1.Pod) ([]HistoryEntry, error) {
	entries := make([]HistoryEntry, 0, len(revs))
	byName := map[string]int{}
	byHash := map[string]int{}
	for i := range revs {
		r := &revs[i]
		data, err := revision.Decode(r.Data.Raw)
		if err != nil {
			return nil, fmt.Errorf("revision %s: %w", r.Name, err)
		}
		hashes, err := appsv1beta1.ComputeHashes(&appsv1beta1.SidecarSetSpec{Containers: data.Containers, InitContainers: data.InitContainers})
		if err != nil {
			return nil, fmt.Errorf("revision %s: %w", r.Name, err)
		}
		byName[r.Name], byHash[hashes.Hash] = i, i
		entries = append(entries, HistoryEntry{
			Revision: r.Revision, Name: r.Name, CustomVersion: r.Labels[appsv1beta1.SidecarSetCustomVersionLabel],
			Images: images(&data), Hash: hashes.Hash, Created: r.CreationTimestamp, Current: r.Name == s.Status.LatestRevision,
		})
	}
	for _, p := range pods {
		state, err := podstate.Read(p.Annotations)
		if err != nil {
			continue
		}
		e, ok := state.Hashes[s.Name]
		if !ok {
			continue
		}
		i, found := byName[e.ControllerRevision]
		if e.ControllerRevision == "" {
			i, found = byHash[e.Hash]
		}
		if found {
			entries[i].Pods++
		}
	}
	return entries, nil
}

// images lists a revision's sidecar images, init containers first.
func images(d *revision.Data) []string {
	out := []string{}
	for _, list := range [][]appsv1beta1.SidecarContainer{d.InitContainers, d.Containers} {
		for _, c := range list {
			out = append(out, c.Name+"="+c.Image)
		}
	}
	return out
}

// writeHistory prints the history as a table; wide adds the hashes.
func writeHistory(w io.Writer, entries []HistoryEntry, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var b strings.Builder
	b.WriteString("REVISION\tNAME\tCUSTOM-VERSION\tIMAGES\tCREATED\tPODS\tCURRENT")
	if wide {
		b.WriteString("\tHASH")
	}
	b.WriteString("\n")
	for _, e := range entries {
		version, current := e.CustomVersion, ""
		if version == "" {
			version = "<none>"
		}
		if e.Current {
			current = "*"
		}
		fmt.Fprintf(&b, "%d\t%s\t%s\t%s\t%s\t%d\t%s", e.Revision, e.Name, version, strings.Join(e.Images, ","),
			e.Created.UTC().Format("2006-01-02T15:04:05Z"), e.Pods, current)
		if wide {
			b.WriteString("\t" + e.Hash)
		}
		b.WriteString("\n")
	}
	if _, err := io.WriteString(tw, b.String()); err != nil {
		return err
	}
	return tw.Flush()
}

// revisionObjects are the revisions as objects to print.
func revisionObjects(revs []appsv1.ControllerRevision) []runtime.Object {
	objs := make([]runtime.Object, 0, len(revs))
	for i := range revs {
		objs = append(objs, &revs[i])
	}
	return objs
}

// printRevision prints one revision with what it recorded.
func printRevision(w io.Writer, output *output, set string, entries []HistoryEntry, revs []appsv1.ControllerRevision, number int64) error {
	for i := range entries {
		e := entries[i]
		if e.Revision != number {
			continue
		}
		data, err := revision.Decode(revs[i].Data.Raw)
		if err != nil {
			return err
		}
		e.Spec = &data
		switch {
		case output.format() == "name":
			return output.printObjects(w, &revs[i])
		case !output.text():
			return output.printReport(w, e)
		}
		current := ""
		if e.Current {
			current = " (current)"
		}
		spec, err := yaml.Marshal(map[string]any{"spec": data})
		if err != nil {
			return err
		}
		version := e.CustomVersion
		if version == "" {
			version = "<none>"
		}
		_, err = fmt.Fprintf(w, "sidecarset %q revision %d%s\n  name:            %s\n  custom version:  %s\n  created:         %s\n"+
			"  pods:            %d\n  images:          %s\n%s", set, e.Revision, current, e.Name, version,
			e.Created.UTC().Format("2006-01-02T15:04:05Z"), e.Pods, strings.Join(e.Images, ","), spec)
		return err
	}
	return errNoRevision(set, number, revs)
}

// errNoRevision says that a SidecarSet has no revision number, and which
// it has.
func errNoRevision(set string, number int64, revs []appsv1.ControllerRevision) error {
	nums := make([]string, 0, len(revs))
	for _, r := range revs {
		nums = append(nums, fmt.Sprint(r.Revision))
	}
	has := strings.Join(nums, ", ")
	if has == "" {
		has = "none"
	}
	return fmt.Errorf("sidecarset %q has no revision %d (it has %s)", set, number, has)
}
