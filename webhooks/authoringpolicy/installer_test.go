package authoringpolicy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

func TestSpecChangedByOthers(t *testing.T) {
	t.Parallel()
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		f := metav1.FieldsV1{}
		f.SetRawBytes([]byte(fields))
		return metav1.ManagedFieldsEntry{Manager: manager, FieldsV1: &f}
	}
	tests := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    bool
	}{
		{"only the manager wrote it", []metav1.ManagedFieldsEntry{entry(names.FieldOwner, `{"f:metadata":{},"f:spec":{}}`)}, false},
		{"someone else labelled it", []metav1.ManagedFieldsEntry{entry(names.FieldOwner, `{"f:spec":{}}`), entry("kubectl-label", `{"f:metadata":{"f:labels":{}}}`)}, false},
		{"an administrator edited its spec", []metav1.ManagedFieldsEntry{entry(names.FieldOwner, `{"f:spec":{}}`), entry("kubectl-edit", `{"f:spec":{"f:validationActions":{}}}`)}, true},
		{"kubectl applied it (config/default)", []metav1.ManagedFieldsEntry{entry("kubectl-client-side-apply", `{"f:spec":{}}`)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := specChangedByOthers(tc.entries); got != tc.want {
				t.Errorf("specChangedByOthers = %v, want %v", got, tc.want)
			}
		})
	}
}
