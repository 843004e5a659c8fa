package monitoring

import (
	"fmt"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

// Target is where a Prometheus that does not run in the cluster finds the
// endpoint a ServiceMonitor describes, and what the ServiceMonitor leaves to
// the Prometheus that reads it.
type Target struct {
	// Address is the endpoint's host:port.
	Address string
	// Job is the job label the Prometheus Operator would give: the name of
	// the Service the ServiceMonitor selects.
	Job string
	// TokenFile holds the Prometheus' ServiceAccount token: what the
	// ServiceMonitor's bearerTokenFile names inside a Prometheus pod.
	TokenFile string
	// Interval, when set, replaces the ServiceMonitor's scrape interval (a
	// test waits seconds, not minutes).
	Interval time.Duration
	// EvaluationInterval is how often the rules are evaluated.
	EvaluationInterval time.Duration
	// RuleFiles are the rules files to load.
	RuleFiles []string
}

// PrometheusConfig is a Prometheus configuration file that scrapes t with
// the first endpoint of sm as the Prometheus Operator would configure it:
// its scheme, path, interval, bearer token and TLS settings. Settings it
// cannot carry over are an error, so that none is silently dropped.
func PrometheusConfig(sm *monitoringv1.ServiceMonitor, t Target) ([]byte, error) {
	if len(sm.Spec.Endpoints) != 1 {
		return nil, fmt.Errorf("ServiceMonitor %s has %d endpoints, want 1", sm.Name, len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Authorization != nil || ep.BasicAuth != nil || ep.OAuth2 != nil || ep.BearerTokenSecret != nil || //nolint:staticcheck // a setting to refuse, deprecated or not
		len(ep.RelabelConfigs) > 0 || len(ep.MetricRelabelConfigs) > 0 || len(ep.Params) > 0 {
		return nil, fmt.Errorf("ServiceMonitor %s: its endpoint has settings this conversion does not carry over", sm.Name)
	}
	job := map[string]any{
		"job_name":       t.Job,
		"metrics_path":   ep.Path,
		"static_configs": []any{map[string]any{"targets": []string{t.Address}}},
	}
	if ep.Scheme != nil {
		job["scheme"] = ep.Scheme.String()
	}
	interval := string(ep.Interval)
	if t.Interval > 0 {
		interval = t.Interval.String()
	}
	if interval != "" {
		job["scrape_interval"] = interval
	}
	// The Prometheus' own ServiceAccount token: only bearerTokenFile names
	// it (authorization takes a Secret), deprecated though it is.
	if ep.BearerTokenFile != "" { //nolint:staticcheck // see above
		job["authorization"] = map[string]any{"type": "Bearer", "credentials_file": t.TokenFile}
	}
	if tls := ep.TLSConfig; tls != nil {
		c := map[string]any{}
		if tls.InsecureSkipVerify != nil {
			c["insecure_skip_verify"] = *tls.InsecureSkipVerify
		}
		if tls.ServerName != nil {
			c["server_name"] = *tls.ServerName
		}
		if tls.CAFile != "" || tls.CertFile != "" || tls.KeyFile != "" || tls.CA != (monitoringv1.SecretOrConfigMap{}) ||
			tls.Cert != (monitoringv1.SecretOrConfigMap{}) || tls.KeySecret != nil {
			return nil, fmt.Errorf("ServiceMonitor %s: its TLS configuration names files or Secrets this conversion does not carry over", sm.Name)
		}
		job["tls_config"] = c
	}
	global := map[string]any{}
	if t.EvaluationInterval > 0 {
		global["evaluation_interval"] = t.EvaluationInterval.String()
	}
	return yaml.Marshal(map[string]any{
		"global":         global,
		"rule_files":     t.RuleFiles,
		"scrape_configs": []any{job},
	})
}
