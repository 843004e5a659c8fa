package crdconversion

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sidecarset-operator/sidecarset-operator/test/expect"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// TestConversionConfig_Start: the runnable points the CRD's conversion at
// the SidecarSet webhook once its configuration has a CA bundle, is ready
// then, and returns once its context ends.
func TestConversionConfig_Start(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	config := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: names.MutatingConfigName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: names.SidecarSetWebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: []byte("ca"),
				Service: &admissionregistrationv1.ServiceReference{Namespace: "kruise-system", Name: "webhook"}}}},
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: names.SidecarSetCRDName}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(config, crd).Build()
	conv := &ConversionConfig{Reader: c, Client: c, MutatingConfig: names.MutatingConfigName}
	if err := conv.ReadyCheck()(nil); err == nil {
		t.Fatal("ready before the conversion was written")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- conv.Start(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for conv.ReadyCheck()(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatal("not ready 5s after the start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, types.NamespacedName{Name: names.SidecarSetCRDName}, got); err != nil {
		t.Fatal(err)
	}
	if w := got.Spec.Conversion; w == nil || w.Webhook == nil || w.Webhook.ClientConfig == nil || string(w.Webhook.ClientConfig.CABundle) != "ca" ||
		w.Webhook.ClientConfig.Service == nil || *w.Webhook.ClientConfig.Service.Path != names.ConversionPath {
		t.Fatalf("the CRD's conversion is %+v, want the webhook's Service at %s with its CA bundle", got.Spec.Conversion, names.ConversionPath)
	}
	cancel()
	if err := expect.Returned(t, done, "Start after its context ended"); err != nil {
		t.Fatalf("Start: %v", err)
	}
}
