package monitoring

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
)

const runbooks = "https://github.com/sidecarset-operator/sidecarset-operator/blob/main/docs/runbooks.md#"

// TestShippedObjectsDecodeStrictly: the ServiceMonitor and the
// PrometheusRule are the Prometheus Operator's types, with no field those
// types lack; a field they lack fails the decoding.
func TestShippedObjectsDecodeStrictly(t *testing.T) {
	t.Parallel()
	sm, err := LoadServiceMonitor(root)
	if err != nil {
		t.Fatal(err)
	}
	if ep := sm.Spec.Endpoints; len(ep) != 1 || ep[0].Port != "metrics" || ep[0].Scheme == nil || ep[0].Scheme.String() != "https" {
		t.Errorf("the ServiceMonitor's endpoints are %+v, want the metrics port over https", ep)
	}
	pr, err := LoadPrometheusRule(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(Alerts(pr)) == 0 {
		t.Fatal("the PrometheusRule has no alert")
	}

	dir := t.TempDir()
	shipped, err := os.ReadFile(filepath.Join(root, ServiceMonitorPath))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(shipped), "    scheme: https\n", "    scheme: https\n    bearerToken: abc\n", 1)
	if bad == string(shipped) {
		t.Fatal("the ServiceMonitor has no `scheme: https` line to put a field after")
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(ServiceMonitorPath)), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ServiceMonitorPath), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadServiceMonitor(dir); err == nil || !strings.Contains(err.Error(), "bearerToken") {
		t.Errorf("a ServiceMonitor with an unknown field decodes: %v", err)
	}
}

// TestRulesFileIsValid: the rules file extracted from the PrometheusRule is
// one Prometheus loads, every expression parsing.
func TestRulesFileIsValid(t *testing.T) {
	t.Parallel()
	pr, err := LoadPrometheusRule(root)
	if err != nil {
		t.Fatal(err)
	}
	data, err := RulesFile(pr)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(data, false, model.UTF8Validation, promQL, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("%v", errs)
	}
	n := 0
	for _, g := range groups.Groups {
		n += len(g.Rules)
	}
	if n != len(Alerts(pr)) {
		t.Errorf("%d rules in the rules file, want the PrometheusRule's %d alerts", n, len(Alerts(pr)))
	}
}

// TestAlertsAreComplete: every alert has a severity, a summary, a
// description and a runbook_url pointing at its section of docs/runbooks.md,
// which docs/observability.md links; every metric it reads is one the
// manager registers.
func TestAlertsAreComplete(t *testing.T) {
	t.Parallel()
	pr, err := LoadPrometheusRule(root)
	if err != nil {
		t.Fatal(err)
	}
	book, err := os.ReadFile(filepath.Join(root, "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	observability, err := os.ReadFile(filepath.Join(root, "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\w+)$`).FindAllStringSubmatch(string(book), -1) {
		headings[m[1]] = true
	}
	seen := map[string]bool{}
	for _, a := range Alerts(pr) {
		if seen[a.Alert] {
			t.Errorf("%s is defined twice", a.Alert)
		}
		seen[a.Alert] = true
		switch a.Labels["severity"] {
		case "critical", "warning", "info":
		default:
			t.Errorf("%s: severity %q, want critical, warning or info", a.Alert, a.Labels["severity"])
		}
		for _, k := range []string{"summary", "description"} {
			if strings.TrimSpace(a.Annotations[k]) == "" {
				t.Errorf("%s has no %s", a.Alert, k)
			}
		}
		anchor := strings.ToLower(a.Alert)
		if got := a.Annotations["runbook_url"]; got != runbooks+anchor {
			t.Errorf("%s: runbook_url %q, want %q", a.Alert, got, runbooks+anchor)
		}
		if !headings[a.Alert] {
			t.Errorf("%s has no section `## %s` in docs/runbooks.md", a.Alert, a.Alert)
		}
		if !strings.Contains(string(observability), "(runbooks.md#"+anchor+")") {
			t.Errorf("docs/observability.md does not link %s's runbook (runbooks.md#%s)", a.Alert, anchor)
		}
		checkQuery(t, a.Alert, a.Expr.String())
	}
	for h := range headings {
		if !seen[h] {
			t.Errorf("docs/runbooks.md has a section for %s, which is no alert", h)
		}
	}
}
