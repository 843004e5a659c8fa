package monitoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// promtool is the promtool `make test-rules` builds into bin/prometheus, or
// $PROMTOOL.
func promtool(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PROMTOOL")
	if path == "" {
		path = filepath.Join(root, "bin", "prometheus", "promtool")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("no promtool (make test-rules builds it into bin/prometheus): %v", err)
	}
	return abs
}

// TestRules runs testdata/rules_test.yaml with `promtool test rules` on the
// rules extracted from the shipped PrometheusRule.
func TestRules(t *testing.T) {
	t.Parallel()
	pr, err := LoadPrometheusRule(root)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := RulesFile(pr)
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool(t), "test", "rules", "rules_test.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("promtool test rules:\n%s", out)
	if err != nil {
		t.Fatalf("promtool test rules: %v", err)
	}
}

// ruleTests is what TestRuleTestsCoverEveryAlert reads of promtool's test
// file.
type ruleTests struct {
	Tests []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestRuleTestsCoverEveryAlert: every alert of the PrometheusRule is
// expected firing somewhere in the rule tests and not firing somewhere else,
// and the tests name no alert the PrometheusRule lacks.
func TestRuleTestsCoverEveryAlert(t *testing.T) {
	t.Parallel()
	pr, err := LoadPrometheusRule(root)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file ruleTests
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	firing, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range file.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	alerts := map[string]bool{}
	for _, a := range Alerts(pr) {
		alerts[a.Alert] = true
		if !firing[a.Alert] {
			t.Errorf("no rule test expects %s firing", a.Alert)
		}
		if !silent[a.Alert] {
			t.Errorf("no rule test expects %s not firing", a.Alert)
		}
	}
	for name := range firing {
		if !alerts[name] {
			t.Errorf("the rule tests expect %s, which the PrometheusRule does not define", name)
		}
	}
	for name := range silent {
		if !alerts[name] {
			t.Errorf("the rule tests check %s, which the PrometheusRule does not define", name)
		}
	}
}
