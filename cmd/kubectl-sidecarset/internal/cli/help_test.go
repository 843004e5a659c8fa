package cli

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// offlineFlags are the flags of the webhook's inputs, and the commands that
// take each.
var offlineFlags = map[string][]string{
	"sidecarsets-from":                {"explain", "inject"},
	"timestamp":                       {"explain", "inject"},
	"partition-coin":                  {"explain", "inject"},
	"sort-containers-by-name":         {"explain", "inject"},
	"namespace-labels":                {"explain", "inject", "plan"},
	"patch-metadata-defaults-allowed": {"explain", "inject", "plan"},
}

// helpOf runs `kubectl sidecarset PATH --help` and returns what it prints.
func helpOf(t *testing.T, path []string) string {
	t.Helper()
	var out strings.Builder
	cmd := NewCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs(append(slices.Clone(path), "--help"))
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("%v --help: %v", path, err)
	}
	return out.String()
}

// commandPaths lists the plugin's commands, as paths below the root.
func commandPaths(cmd *cobra.Command, prefix []string) [][]string {
	paths := [][]string{prefix}
	for _, c := range cmd.Commands() {
		if c.Name() == "help" {
			continue
		}
		paths = append(paths, commandPaths(c, append(slices.Clone(prefix), c.Name()))...)
	}
	return paths
}

var listedFlag = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z-]+)`)

// TestHelp_ShowsOnlyTheFlagsTheCommandTakes: each command's help lists the
// offline flags it takes and no other (rollout status --help listed
// --sidecarsets-from, which rollout refused), prints each default once
// (--namespace-labels printed two), and names no package of the operator.
func TestHelp_ShowsOnlyTheFlagsTheCommandTakes(t *testing.T) {
	t.Parallel()
	root := NewCommand(Streams{})
	for _, path := range commandPaths(root, nil) {
		name := strings.Join(path, " ")
		t.Run("kubectl sidecarset "+name, func(t *testing.T) {
			t.Parallel()
			help := helpOf(t, path)
			listed := map[string]bool{}
			for _, m := range listedFlag.FindAllStringSubmatch(help, -1) {
				listed[m[1]] = true
			}
			leaf := ""
			if len(path) > 0 {
				leaf = path[len(path)-1]
			}
			for flag, takers := range offlineFlags {
				takes := len(path) == 1 && slices.Contains(takers, leaf)
				if listed[flag] != takes {
					t.Errorf("--%s listed: %v, want %v", flag, listed[flag], takes)
				}
			}
			for line := range strings.SplitSeq(help, "\n") {
				if strings.Count(line, "(default") > 1 {
					t.Errorf("a default printed twice: %q", line)
				}
			}
			for _, pkg := range []string{"controllers/", "webhooks/", "policy/", "PodInjector", "rollout.Compute"} {
				if strings.Contains(help, pkg) {
					t.Errorf("the help names a package (%s):\n%s", pkg, help)
				}
			}
		})
	}
}

// TestHelp_ExitCodes: the root command's help has the table of exit codes.
func TestHelp_ExitCodes(t *testing.T) {
	t.Parallel()
	help := helpOf(t, nil)
	for _, code := range []string{"\n  0  success\n", "\n  1  the operation failed", "\n  2  usage", "\n  3  the API server cannot be reached"} {
		if !strings.Contains(help, code) {
			t.Errorf("help lacks %q:\n%s", code, help)
		}
	}
}
