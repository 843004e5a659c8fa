package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// panel is what the check reads of a Grafana panel.
type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// dashboard is what the check reads of the Grafana dashboard.
type dashboard struct {
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// labelValues matches the label_values(selector, label) query of a Grafana
// variable.
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// TestDashboardQueries: every query of the dashboard, its panels' and its
// variables', parses as PromQL and names only metrics the manager
// registers; every graph has a query.
func TestDashboardQueries(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(root, DashboardPath))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" {
		t.Error("the dashboard has no uid")
	}
	queries := 0
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %d %q has no query", p.ID, p.Title)
			}
			for _, q := range p.Targets {
				checkQuery(t, fmt.Sprintf("panel %d %q, query %s", p.ID, p.Title, q.RefID), withoutGrafanaVariables(q.Expr))
				queries++
			}
		}
	}
	walk(d.Panels)
	if queries == 0 {
		t.Fatal("the dashboard has no query")
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, ok := v.Query.(map[string]any)
		if !ok {
			t.Errorf("variable %s: query %v", v.Name, v.Query)
			continue
		}
		s, _ := q["query"].(string)
		m := labelValues.FindStringSubmatch(s)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(selector, label)", v.Name, s)
			continue
		}
		checkQuery(t, "variable "+v.Name, withoutGrafanaVariables(m[1]))
	}
	t.Logf("%d queries checked", queries)
}
