package main

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOperatorPatch_AsksTheOperatorsWebhookAsTheAPIServerWould(t *testing.T) {
	answer := &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(`[{"op":"add","path":"/spec/containers/0","value":{"name":"bench-sidecar"}}]`)}
	var got admissionv1.AdmissionReview
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil || r.URL.Path != "/mutate-pod" {
			http.Error(w, fmt.Sprintf("path %s: %v", r.URL.Path, err), http.StatusBadRequest)
			return
		}
		answer.UID = got.Request.UID
		_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{TypeMeta: got.TypeMeta, Response: answer})
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	operator := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{
		{Name: "other.example", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: new("https://127.0.0.1:1/other")}},
		{Name: podWebhookName, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: new(srv.URL + "/mutate-pod"), CABundle: ca}},
	}}
	created := benchPod(7)
	created.UID, created.ResourceVersion, created.Generation, created.CreationTimestamp = "dry-run", "12", 1, metav1.Now()
	created.Status.QOSClass = corev1.PodQOSBestEffort

	patch, err := operatorPatch(t.Context(), operator, t.TempDir(), requestPod(created))
	if err != nil {
		t.Fatal(err)
	}
	if string(patch) != string(answer.Patch) {
		t.Errorf("patch %s, want the webhook's %s", patch, answer.Patch)
	}
	r := got.Request
	if r == nil || r.Operation != admissionv1.Create || r.Namespace != webhookNamespace || r.Kind.Kind != "Pod" || r.Resource.Resource != "pods" {
		t.Fatalf("the webhook got %+v, want a pod's creation in %s", r, webhookNamespace)
	}
	sent := &corev1.Pod{}
	if err := json.Unmarshal(r.Object.Raw, sent); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(benchPod(7), sent); diff != "" {
		t.Errorf("the webhook got a pod other than the request's, without what the API server sets after admission (-want +got):\n%s", diff)
	}

	answer.Patch = nil
	if _, err := operatorPatch(t.Context(), operator, t.TempDir(), benchPod(7)); err == nil {
		t.Error("an answer without a patch was taken, want an error: the bench's pods must be injected")
	}
}

func TestBareWebhookConfig_KeepsThePodWebhooksPointedAtIt(t *testing.T) {
	operator := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: podWebhookConfig},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: podWebhookName, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: new("https://localhost:9443/mutate-pod")},
				Rules:           []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{Resources: []string{"pods"}}}},
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "scope", Expression: "true"}}},
			{Name: "msidecarset.example", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: new("https://localhost:9443/mutate-sidecarset")},
				Rules: []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{Resources: []string{"sidecarsets"}}}}},
			{Name: "mpod-service.example", ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Name: "s", Namespace: "n", Path: new("/mutate-pod-best-effort")}},
				Rules: []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{Resources: []string{"pods"}}}}},
		},
	}
	b := &bareWebhook{url: "https://127.0.0.1:1234", caBundle: []byte("ca")}
	cfg := b.config(operator)
	if cfg.Name != bareWebhookConfig || len(cfg.Webhooks) != 2 {
		t.Fatalf("got %s with %d webhooks, want %s with the 2 pod webhooks", cfg.Name, len(cfg.Webhooks), bareWebhookConfig)
	}
	for i, want := range []string{"https://127.0.0.1:1234/" + podWebhookName, "https://127.0.0.1:1234/mpod-service.example"} {
		got := cfg.Webhooks[i].ClientConfig
		if got.URL == nil || *got.URL != want || got.Service != nil || string(got.CABundle) != "ca" {
			t.Errorf("webhook %d: client config %+v, want the URL %s and the bare webhook's CA", i, got, want)
		}
	}
	if len(cfg.Webhooks[0].MatchConditions) != 1 || operator.Webhooks[0].ClientConfig.URL == nil || *operator.Webhooks[0].ClientConfig.URL != "https://localhost:9443/mutate-pod" {
		t.Error("the pod webhook lost its matchConditions, or the operator's configuration was changed")
	}
}

func TestForPod_NamesThePodsOwnTokenVolume(t *testing.T) {
	patch := []byte(`[{"op":"add","path":"/spec/containers/0","value":{"name":"s","volumeMounts":[{"name":"kube-api-access-aaaaa","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}]}}]`)
	pod := benchPod(1)
	pod.Spec.Volumes = []corev1.Volume{{Name: "data"}, {Name: "kube-api-access-bbbbb"}}
	want := `[{"op":"add","path":"/spec/containers/0","value":{"name":"s","volumeMounts":[{"name":"kube-api-access-bbbbb","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}]}}]`
	if got := string(forPod(patch, "kube-api-access-aaaaa", pod)); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got := string(forPod(patch, "kube-api-access-aaaaa", benchPod(1))); got != string(patch) {
		t.Errorf("a pod without a token volume: got %s, want the patch unchanged", got)
	}
}
