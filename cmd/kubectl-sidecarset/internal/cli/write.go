package cli

import (
	"slices"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Dry-run modes of the commands that write, as kubectl's --dry-run.
const (
	dryRunNone   = "none"
	dryRunClient = "client"
	dryRunServer = "server"
)

// defaultFieldManager is the field manager the writes record.
const defaultFieldManager = "kubectl-sidecarset"

// writeOptions are the flags of the commands that write (undo, pause,
// resume): --dry-run and --field-manager, as kubectl's.
//
// The writes are merge patches, recorded as Update operations of the field
// manager, not server-side apply: an apply would make the plugin the owner
// of the fields it sets (spec.updateStrategy.paused, an undo's containers),
// and the next apply of the manifest by its owner (a GitOps tool) would
// then conflict, or need --force-conflicts, instead of taking them back.
type writeOptions struct {
	dryRun       string
	fieldManager string
}

// addWriteFlags registers --dry-run and --field-manager on cmd.
func addWriteFlags(cmd *cobra.Command, w *writeOptions) {
	cmd.Flags().StringVar(&w.dryRun, "dry-run", dryRunNone,
		`"none", "client" (print what would be written, send nothing) or "server" (send it with dryRun=All: `+
			`the API server and its webhooks check it, nothing is stored). --dry-run alone is "client".`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = dryRunClient
	cmd.Flags().StringVar(&w.fieldManager, "field-manager", defaultFieldManager, "The name of the manager the write records in managedFields.")
}

// validate checks the flags' values.
func (w writeOptions) validate() error {
	if !slices.Contains([]string{dryRunNone, dryRunClient, dryRunServer}, w.dryRun) {
		return usagef("--dry-run %q: want none, client or server", w.dryRun)
	}
	if w.fieldManager == "" {
		return usagef("--field-manager: want a name")
	}
	return nil
}

// send reports whether the write is sent to the API server.
func (w writeOptions) send() bool { return w.dryRun != dryRunClient }

// patchOptions are the options of the write's patch.
func (w writeOptions) patchOptions() []client.PatchOption {
	opts := []client.PatchOption{client.FieldOwner(w.fieldManager)}
	if w.dryRun == dryRunServer {
		opts = append(opts, client.DryRunAll)
	}
	return opts
}

// dryRunSuffix is what a write's line adds in a dry run.
func (w writeOptions) dryRunSuffix() string {
	if w.dryRun == dryRunNone {
		return ""
	}
	return " (dry run: " + w.dryRun + ")"
}
