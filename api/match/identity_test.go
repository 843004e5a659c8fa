package match

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestNamespaceUIDs_RoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		uids map[string]types.UID
		want string
	}{
		{name: "no namespace recorded writes no annotation", uids: nil, want: ""},
		{name: "names are written sorted", uids: map[string]types.UID{"team-b": "2", "team-a": "1"}, want: `{"team-a":"1","team-b":"2"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := FormatNamespaceUIDs(tc.uids)
			if got != tc.want {
				t.Fatalf("FormatNamespaceUIDs = %q, want %q", got, tc.want)
			}
			s := &appsv1beta1.SidecarSet{}
			if got != "" {
				s.Annotations = map[string]string{appsv1beta1.NamespaceUIDsAnnotation: got}
			}
			back, err := NamespaceUIDs(s)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.uids) > 0 {
				if diff := cmp.Diff(tc.uids, back); diff != "" {
					t.Errorf("decoded (-want +got):\n%s", diff)
				}
			} else if back != nil {
				t.Errorf("decoded %v from no annotation, want nil", back)
			}
		})
	}
}

func TestPinsNamespace(t *testing.T) {
	t.Parallel()
	with := func(record string) *appsv1beta1.SidecarSet {
		return &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{appsv1beta1.NamespaceUIDsAnnotation: record}}}
	}
	tests := []struct {
		name string
		s    *appsv1beta1.SidecarSet
		ns   string
		want bool
	}{
		{name: "no record pins nothing", s: &appsv1beta1.SidecarSet{}, ns: "team-a", want: false},
		{name: "a recorded name is pinned", s: with(`{"team-a":"1"}`), ns: "team-a", want: true},
		{name: "a name not recorded is not pinned", s: with(`{"team-a":"1"}`), ns: "team-b", want: false},
		{name: "a record that cannot be read pins every name", s: with(`nope`), ns: "team-b", want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := PinsNamespace(tc.s, tc.ns); got != tc.want {
				t.Errorf("PinsNamespace = %v, want %v", got, tc.want)
			}
		})
	}
}
