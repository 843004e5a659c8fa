package explain

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteText writes the report for a person to read.
func (r Report) WriteText(w io.Writer) error {
	p := &printer{w: w}
	if r.Existing {
		p.line("%s (an existing pod: the decision below is for a creation of the same pod now)", r.Source)
	} else {
		p.line("%s", r.Source)
	}
	p.line("  labels: %s", formatLabels(r.PodLabels))
	p.line("Namespace %s", r.Namespace)
	if r.NamespaceLabels != nil {
		p.line("  labels: %s", formatLabels(r.NamespaceLabels))
	} else {
		p.line("  labels: not read")
	}

	p.line("")
	switch r.Scope.Called {
	case CalledYes:
		p.line("Webhooks: the API server sends this pod to a pod webhook")
	case CalledNo:
		p.line("Webhooks: the API server sends this pod to no pod webhook")
	default:
		p.line("Webhooks: whether the API server sends this pod to a pod webhook cannot be told here")
	}
	for _, ws := range r.Scope.Webhooks {
		where := "failurePolicy " + ws.FailurePolicy
		if ws.Configuration != "" {
			where += ", in " + ws.Configuration
		}
		p.line("  %s (%s): %s: %s", ws.Name, where, calledWord(ws.Called), ws.Reason)
	}
	if r.Scope.Stale {
		p.line("  The installed scope is not the one the current SidecarSets give: the operator rewrites it within a second of a")
		p.line("  SidecarSet change; if it stays so, check that the manager runs (with --scope-pod-webhook) and can update the configuration.")
	}

	p.line("")
	selected := 0
	for _, v := range r.SidecarSets {
		if v.Selected {
			selected++
		}
	}
	p.line("SidecarSets: %d of %d select the pod", selected, len(r.SidecarSets))
	for _, v := range r.SidecarSets {
		class := "required"
		if v.FailurePolicy == "Ignore" {
			class = "best-effort"
		}
		p.line("  %s [%s]: %s", v.Name, class, v.Outcome)
		if v.Message != "" {
			p.line("    %s", v.Message)
		}
		if v.Selection != "" {
			p.line("    %s", v.Selection)
		}
		if v.Version != "" {
			p.line("    version: %s", v.Version)
		}
		for _, c := range v.Adds {
			p.line("    adds %s", describeContainer(c, false))
		}
		for _, w := range v.Whitelist {
			p.line("    patchPodMetadata: %s", w)
		}
	}

	a := r.Added
	if len(a.InitContainers)+len(a.Containers)+len(a.Volumes)+len(a.ImagePullSecrets)+len(a.Annotations)+len(a.Changed) > 0 {
		p.line("")
		p.line("Injection adds")
		for _, c := range append(slices.Clone(a.InitContainers), a.Containers...) {
			p.line("  %s", describeContainer(c, true))
		}
		p.list("changed containers", a.Changed)
		p.list("volumes", a.Volumes)
		p.list("imagePullSecrets", a.ImagePullSecrets)
		p.list("annotations", a.Annotations)
		p.line("  (%d JSON patch operations)", r.PatchOperations)
	}
	if len(r.Warnings) > 0 {
		p.line("")
		p.line("Warnings")
		for _, w := range r.Warnings {
			p.line("  - %s", w)
		}
	}
	if rec := r.Recorded; rec != nil {
		p.line("")
		p.line("Recorded on the pod")
		switch {
		case rec.Error != "":
			p.line("  %s", rec.Error)
		case len(rec.Injected) == 0 && len(rec.SidecarSets) == 0:
			p.line("  no SidecarSet annotation: no SidecarSet was injected when it was created")
		default:
			p.line("  injected list: %s", strings.Join(rec.Injected, ", "))
			for _, e := range rec.SidecarSets {
				p.line("  %s: hash %s, ControllerRevision %s, sidecars %s, written %s: %s", e.Name, e.Hash,
					orNone(e.ControllerRevision), strings.Join(e.Sidecars, ","), orNone(e.UpdateTimestamp), e.Current)
			}
		}
	}
	if len(r.Notes) > 0 {
		p.line("")
		p.line("Notes")
		for _, n := range r.Notes {
			p.line("  - %s", n)
		}
	}
	p.line("")
	p.line("Result: %s", r.Result)
	return p.err
}

// printer writes lines and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *printer) list(what string, items []string) {
	if len(items) > 0 {
		p.line("  %s: %s", what, strings.Join(items, ", "))
	}
}

func describeContainer(c Container, withSource bool) string {
	kind := "container"
	if c.Init {
		kind = "init container"
	}
	s := fmt.Sprintf("%s %s (image %s", kind, c.Name, c.Image)
	if withSource && c.SidecarSet != "" {
		s += ", from " + c.SidecarSet
	}
	return s + ")"
}

func calledWord(called string) string {
	switch called {
	case CalledYes:
		return "called"
	case CalledNo:
		return "not called"
	}
	return "unknown"
}

func formatLabels(m map[string]string) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
