package controllers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"

	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// An eviction dates from its request, not its response: the pod's
// controller may create the replacement while the response is on its way,
// and a replacement older than the record would never be matched to it
// (the eviction's share then held until RecreateTimeout).
func TestApplyEvictions_RecordsTheRequestTime(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 900_000_000, time.UTC)
	var mu sync.Mutex
	clock := t0
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		paths = append(paths, req.Method+" "+req.URL.Path)
		// The replacement is created, and the response arrives, in the
		// next second.
		clock = clock.Add(300 * time.Millisecond)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	defer srv.Close()
	client, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{
		GroupVersion: &schema.GroupVersion{Group: "policy", Version: "v1"}, NegotiatedSerializer: clientgoscheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	r := &SidecarSetReconciler{Evictions: client, Recorder: events.NewFakeRecorder(10), PodWriters: 1, now: now}

	r.applyEvictions(context.Background(), "mesh", []rollout.PodEviction{{
		Pod: types.NamespacedName{Namespace: "ns", Name: "a"}, UID: "uid-a", Owner: "rs-1", Reason: "env changed",
		Siblings: []types.UID{"uid-b2"}}})

	if want := []string{"POST /api/v1/namespaces/ns/pods/a/eviction"}; len(paths) != 1 || paths[0] != want[0] {
		t.Fatalf("requests %v, want %v", paths, want)
	}
	evicted, _ := r.memories.recreations("mesh")
	e, ok := evicted["uid-a"]
	if !ok {
		t.Fatalf("no eviction recorded: %v", evicted)
	}
	if !e.Since.Equal(t0) || e.Owner != "rs-1" || !slices.Equal(e.NotReplacements, []types.UID{"uid-b2"}) {
		t.Errorf("recorded %+v, want since %v (the request), owner rs-1, uid-b2 no replacement", e, t0)
	}
}
