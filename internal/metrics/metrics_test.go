package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
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
	if len(seen) != 22 {
		t.Errorf("%d metrics, want the 22 the operator exports (update this count with the docs)", len(seen))
	}
}

// TestNames: every metric the operator exports is named, once.
func TestNames(t *testing.T) {
	t.Parallel()
	names := Names()
	if len(names) != len(all) || !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Fatalf("Names() = %v: want the %d metrics' names, sorted, each once", names, len(all))
	}
	for _, want := range []string{"sidecarset_pods", "sidecarset_pod_admission_duration_seconds", "sidecarset_webhook_certificate_expiry_timestamp_seconds"} {
		if !slices.Contains(names, want) {
			t.Errorf("Names() lacks %s", want)
		}
	}
}

// TestForgetSidecarSet_DeletedSidecarSetKeepsNoSeries: once a SidecarSet is
// deleted, no metric keeps a series for it, the webhooks' counters
// included (those stayed: a series per deleted SidecarSet that ever
// injected, for the manager's lifetime).
func TestForgetSidecarSet_DeletedSidecarSetKeepsNoSeries(t *testing.T) {
	const set = "metrics-test-deleted"
	RolloutPods.WithLabelValues(set, "matched").Set(1)
	InPlaceUpdates.WithLabelValues(set, "succeeded").Inc()
	PodResizes.WithLabelValues(set, "succeeded").Inc()
	PodEvictions.WithLabelValues(set, "succeeded").Inc()
	RolloutFailedPods.WithLabelValues(set).Set(1)
	RolloutDeadlineExceeded.WithLabelValues(set).Set(1)
	RolloutAutoPauses.WithLabelValues(set).Inc()
	Injections.WithLabelValues(set, "injected").Inc()
	InjectionFailures.WithLabelValues(set, "Ignore").Inc()
	ForgetSidecarSet(set)
	for _, c := range all {
		ch := make(chan prometheus.Metric, 100)
		c.Collect(ch)
		close(ch)
		for m := range ch {
			var out dto.Metric
			if err := m.Write(&out); err != nil {
				t.Fatal(err)
			}
			for _, l := range out.GetLabel() {
				if l.GetName() == "sidecarset" && l.GetValue() == set {
					t.Errorf("%s keeps a series for the deleted SidecarSet: %v", m.Desc(), out.GetLabel())
				}
			}
		}
	}
}

// TestDenialsStartAtZero: the denial counter has its series from the start,
// so that increase() over it sees the first denial.
func TestDenialsStartAtZero(t *testing.T) {
	t.Parallel()
	if n := testutil.CollectAndCount(Denials); n != 1 {
		t.Fatalf("%d series of sidecarset_pod_denials_total at start, want 1 (reason InjectionError at 0)", n)
	}
}
