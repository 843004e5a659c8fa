// Package monitoring reads what config/prometheus ships (the ServiceMonitor
// and the PrometheusRule), strictly, as the Prometheus Operator's types, and
// turns them into what a plain Prometheus reads: the rules file and a scrape
// job. The rule tests, the dashboard check and the e2e Prometheus use it, so
// that every one of them reads the shipped objects rather than a copy.
package monitoring

import (
	"fmt"
	"os"
	"path/filepath"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

// Paths of the shipped objects, relative to the repository's root.
const (
	ServiceMonitorPath = "config/prometheus/servicemonitor.yaml"
	PrometheusRulePath = "config/prometheus/prometheusrule.yaml"
	DashboardPath      = "config/grafana/sidecarset-operator.json"
)

// decodeStrict decodes one YAML object into out, failing on any field out's
// type does not have.
func decodeStrict(path string, out any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// LoadServiceMonitor reads the shipped ServiceMonitor under root.
func LoadServiceMonitor(root string) (*monitoringv1.ServiceMonitor, error) {
	sm := &monitoringv1.ServiceMonitor{}
	if err := decodeStrict(filepath.Join(root, ServiceMonitorPath), sm); err != nil {
		return nil, err
	}
	if sm.Kind != monitoringv1.ServiceMonitorsKind || sm.APIVersion != monitoringv1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("%s is a %s %s, want a %s %s", ServiceMonitorPath, sm.APIVersion, sm.Kind,
			monitoringv1.SchemeGroupVersion, monitoringv1.ServiceMonitorsKind)
	}
	return sm, nil
}

// LoadPrometheusRule reads the shipped PrometheusRule under root.
func LoadPrometheusRule(root string) (*monitoringv1.PrometheusRule, error) {
	pr := &monitoringv1.PrometheusRule{}
	if err := decodeStrict(filepath.Join(root, PrometheusRulePath), pr); err != nil {
		return nil, err
	}
	if pr.Kind != monitoringv1.PrometheusRuleKind || pr.APIVersion != monitoringv1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("%s is a %s %s, want a %s %s", PrometheusRulePath, pr.APIVersion, pr.Kind,
			monitoringv1.SchemeGroupVersion, monitoringv1.PrometheusRuleKind)
	}
	return pr, nil
}

// RulesFile is the PrometheusRule's spec as a Prometheus rules file: the
// Prometheus Operator mounts the same groups into its Prometheus.
func RulesFile(pr *monitoringv1.PrometheusRule) ([]byte, error) {
	return yaml.Marshal(pr.Spec)
}

// Alerts lists the PrometheusRule's alerting rules, in file order.
func Alerts(pr *monitoringv1.PrometheusRule) []monitoringv1.Rule {
	var out []monitoringv1.Rule
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}
