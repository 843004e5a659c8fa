package promtext

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const scrape = `# TYPE requests_total counter
requests_total{verb="PATCH",code="200",subresource=""} 3
requests_total{verb="PATCH",code="409",subresource=""} 1
requests_total{verb="PATCH",code="200",subresource="status"} 7
requests_total{verb="UPDATE",code="200"} 2
# TYPE duration_seconds histogram
duration_seconds_bucket{name="a",le="1"} 2
duration_seconds_bucket{name="a",le="+Inf"} 2
duration_seconds_sum{name="a"} 0.5
duration_seconds_count{name="a"} 2
duration_seconds_bucket{name="b",le="1"} 1
duration_seconds_bucket{name="b",le="+Inf"} 1
duration_seconds_sum{name="b"} 0.25
duration_seconds_count{name="b"} 1
`

func TestScrape_SumAndSumBy(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(scrape))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name              string
		metric            string
		match             map[string]string
		wantValue, wantCt float64
	}{
		{"every series", "requests_total", nil, 13, 0},
		{"an empty value matches a missing label", "requests_total", map[string]string{"subresource": ""}, 6, 0},
		{"several pairs", "requests_total", map[string]string{"verb": "PATCH", "code": "200"}, 10, 0},
		{"histogram sum and count", "duration_seconds", map[string]string{"name": "a"}, 0.5, 2},
		{"unknown metric", "nothing", nil, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, c := s.Sum(tc.metric, tc.match)
			if v != tc.wantValue || c != tc.wantCt {
				t.Errorf("Sum = %v, %v; want %v, %v", v, c, tc.wantValue, tc.wantCt)
			}
		})
	}
	got := s.SumBy("requests_total", map[string]string{"subresource": ""}, "code")
	if diff := cmp.Diff(map[string]float64{"200": 5, "409": 1}, got); diff != "" {
		t.Errorf("SumBy (-want +got):\n%s", diff)
	}
}

func TestParse_RejectsMalformedText(t *testing.T) {
	t.Parallel()
	if _, err := Parse([]byte("requests_total{verb=\"PATCH\" 3\n")); err == nil {
		t.Error("Parse accepted a malformed sample")
	}
}
