package controllers

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestPodStates_DecodesEachVersionOnce(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: "7", Annotations: map[string]string{
		appsv1beta1.SidecarSetHashAnnotation: `{"a":{"updateTimestamp":"2026-01-02T03:04:05Z","hash":"h1","sidecarSetName":"a","sidecarList":["x"]}}`,
	}}}
	c := newPodStates()
	first, err := c.read(pod)
	if err != nil || first.Hashes["a"].Hash != "h1" {
		t.Fatalf("read = %+v, %v", first, err)
	}
	again, _ := c.read(pod)
	if reflect.ValueOf(again.Hashes).Pointer() != reflect.ValueOf(first.Hashes).Pointer() {
		t.Fatal("the same resourceVersion was decoded again")
	}
	changed := pod.DeepCopy()
	changed.ResourceVersion = "8"
	changed.Annotations[appsv1beta1.SidecarSetHashAnnotation] = `{"a":"legacy"}`
	if got, _ := c.read(changed); got.Hashes["a"].Hash != "legacy" {
		t.Fatalf("a new resourceVersion was not decoded: %+v", got.Hashes)
	}
	broken := changed.DeepCopy()
	broken.ResourceVersion = "9"
	broken.Annotations[appsv1beta1.SidecarSetHashAnnotation] = `{`
	if _, err := c.read(broken); err == nil {
		t.Fatal("a malformed annotation decoded without error")
	}
	c.forget("u1")
	if len(c.m) != 0 {
		t.Fatalf("forget left %d entries", len(c.m))
	}
}
