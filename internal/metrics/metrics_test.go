package metrics

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestEveryMetricIsDocumented: every metric the operator exports is named
// sidecarset_* and has its row in docs/observability.md.
func TestEveryMetricIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	seen := map[string]bool{}
	for _, c := range all {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		m := fqName.FindStringSubmatch((<-ch).String())
		if m == nil {
			t.Fatalf("no name in the description of %v", c)
		}
		name := m[1]
		if seen[name] {
			t.Errorf("%s is declared twice", name)
		}
		seen[name] = true
		if !strings.HasPrefix(name, "sidecarset_") {
			t.Errorf("%s is not named sidecarset_*", name)
		}
		if !strings.Contains(string(doc), "| `"+name+"` |") {
			t.Errorf("%s has no row in docs/observability.md", name)
		}
	}
	if len(seen) != 19 {
		t.Errorf("%d metrics, want the 19 the operator exports (update this count with the docs)", len(seen))
	}
}
