// Command promfiles writes what a Prometheus running outside the cluster
// needs to scrape the operator as config/prometheus says: the rules file
// extracted from the shipped PrometheusRule (rules.yaml) and a
// configuration file (prometheus.yml) whose scrape job carries the shipped
// ServiceMonitor's settings and loads those rules. The e2e suite runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sidecarset-operator/sidecarset-operator/test/monitoring"
)

func main() {
	var (
		root   = flag.String("root", "../..", "the repository's root")
		out    = flag.String("out", "", "the directory to write rules.yaml and prometheus.yml into")
		target monitoring.Target
	)
	flag.StringVar(&target.Address, "target", "", "host:port of the metrics endpoint")
	flag.StringVar(&target.Job, "job", "sidecarset-operator-metrics", "the job label (the Prometheus Operator's: the Service's name)")
	flag.StringVar(&target.TokenFile, "token-file", "", "the file holding the Prometheus' ServiceAccount token")
	flag.DurationVar(&target.Interval, "scrape-interval", 0, "replaces the ServiceMonitor's interval when set")
	flag.DurationVar(&target.EvaluationInterval, "evaluation-interval", 0, "how often the rules are evaluated (Prometheus' default when 0)")
	flag.Parse()
	if err := run(*root, *out, target); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(root, out string, target monitoring.Target) error {
	if out == "" || target.Address == "" || target.TokenFile == "" {
		return fmt.Errorf("-out, -target and -token-file are required")
	}
	pr, err := monitoring.LoadPrometheusRule(root)
	if err != nil {
		return err
	}
	sm, err := monitoring.LoadServiceMonitor(root)
	if err != nil {
		return err
	}
	rules, err := monitoring.RulesFile(pr)
	if err != nil {
		return err
	}
	rulesPath := filepath.Join(out, "rules.yaml")
	target.RuleFiles = []string{rulesPath}
	config, err := monitoring.PrometheusConfig(sm, target)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(rulesPath, rules, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "prometheus.yml"), config, 0o600)
}
