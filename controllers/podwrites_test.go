package controllers

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// A pod patch goes to the pod (or its subresource) as a strategic merge
// patch and asks for a protobuf answer; a successful answer is not read (a
// body no decoder could read still succeeds), an error's is.
func TestPatchPod_ReadsOnlyErrors(t *testing.T) {
	type request struct{ method, path, contentType, accept, body string }
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		got = append(got, request{req.Method, req.URL.Path, req.Header.Get("Content-Type"), req.Header.Get("Accept"), string(body)})
		if req.URL.Path == "/api/v1/namespaces/ns/pods/gone" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,"message":"the object has been modified"}`)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		_, _ = io.WriteString(w, "not a pod")
	}))
	defer srv.Close()
	pods, err := PodWrites(&rest.Config{Host: srv.URL}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	r := &SidecarSetReconciler{Pods: pods}
	ctx := context.Background()
	if err := r.patchPod(ctx, types.NamespacedName{Namespace: "ns", Name: "a"}, "", []byte(`{"spec":{}}`)); err != nil {
		t.Errorf("patch: %v", err)
	}
	if err := r.patchPod(ctx, types.NamespacedName{Namespace: "ns", Name: "a"}, "resize", []byte(`{"spec":{}}`)); err != nil {
		t.Errorf("resize: %v", err)
	}
	if err := r.patchPod(ctx, types.NamespacedName{Namespace: "ns", Name: "gone"}, "", []byte(`{}`)); !apierrors.IsConflict(err) {
		t.Errorf("a conflict's answer: got %v, want a Conflict error", err)
	}
	want := []request{
		{"PATCH", "/api/v1/namespaces/ns/pods/a", "application/strategic-merge-patch+json", "application/vnd.kubernetes.protobuf,application/json", `{"spec":{}}`},
		{"PATCH", "/api/v1/namespaces/ns/pods/a/resize", "application/strategic-merge-patch+json", "application/vnd.kubernetes.protobuf,application/json", `{"spec":{}}`},
		{"PATCH", "/api/v1/namespaces/ns/pods/gone", "application/strategic-merge-patch+json", "application/vnd.kubernetes.protobuf,application/json", `{}`},
	}
	if len(got) != len(want) {
		t.Fatalf("requests: got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
