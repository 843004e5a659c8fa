package failureevents

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/expect"
)

// TestReporter_OneEventPerSidecarSet: the failures counted are written as
// one event per SidecarSet, naming how many pods and the last one, when
// the reporter stops as at every interval; Start returns once its context
// ends.
func TestReporter_OneEventPerSidecarSet(t *testing.T) {
	t.Parallel()
	recorder := events.NewFakeRecorder(10)
	r := NewReporter(recorder)
	set := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}
	r.Report(set, "default/a", "first")
	r.Report(set, "default/b", "the image is not allowed")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	cancel()
	if err := expect.Returned(t, done, "Start after its context ended"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	var got []string
	for len(recorder.Events) > 0 {
		got = append(got, <-recorder.Events)
	}
	want := "Warning InjectionFailed 2 pods admitted without this best-effort SidecarSet; last: pod default/b: the image is not allowed"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("events %q, want one: %q", got, want)
	}
}
