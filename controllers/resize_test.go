package controllers

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRefusesResize(t *testing.T) {
	t.Parallel()
	pods := schema.GroupResource{Resource: "pods"}
	forbidden := func(cause metav1.CauseType) error {
		err := apierrors.NewForbidden(pods, "p", errors.New("node cannot fit it"))
		if cause != "" {
			err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: cause})
		}
		return err
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "invalid: the rule of the resize", err: apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), want: true},
		{name: "the node cannot fit it", err: forbidden("NodeCapacity"), want: true},
		{name: "a node that is not Linux", err: forbidden("UnsupportedPlatform"), want: true},
		{name: "a node the API server does not know yet is retried", err: forbidden("")},
		{name: "a server error is retried", err: apierrors.NewInternalError(errors.New("boom"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := refusesResize(tc.err); got != tc.want {
				t.Errorf("refusesResize(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
