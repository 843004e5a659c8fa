package crdconversion

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

func TestDesiredConversion_FollowsTheSidecarSetWebhook(t *testing.T) {
	t.Parallel()
	ca := []byte("ca")
	tests := []struct {
		name    string
		in      admissionregistrationv1.WebhookClientConfig
		want    apiextensionsv1.WebhookClientConfig
		wantErr bool
	}{{
		name: "a Service: same Service and port, path /convert",
		in: admissionregistrationv1.WebhookClientConfig{CABundle: ca, Service: &admissionregistrationv1.ServiceReference{
			Namespace: "kruise-system", Name: "sidecarset-operator-webhook", Path: new(names.SidecarSetDefaultPath), Port: new(int32(8443))}},
		want: apiextensionsv1.WebhookClientConfig{CABundle: ca, Service: &apiextensionsv1.ServiceReference{
			Namespace: "kruise-system", Name: "sidecarset-operator-webhook", Path: new("/convert"), Port: new(int32(8443))}},
	}, {
		name: "a Service without a port: the API server's 443",
		in: admissionregistrationv1.WebhookClientConfig{CABundle: ca, Service: &admissionregistrationv1.ServiceReference{
			Namespace: "ops", Name: "webhook"}},
		want: apiextensionsv1.WebhookClientConfig{CABundle: ca, Service: &apiextensionsv1.ServiceReference{
			Namespace: "ops", Name: "webhook", Path: new("/convert"), Port: new(int32(443))}},
	}, {
		name: "a URL: same scheme and host, path /convert, no query",
		in:   admissionregistrationv1.WebhookClientConfig{CABundle: ca, URL: new("https://localhost:9443/mutate-apps-kruise-io-sidecarset?x=1")},
		want: apiextensionsv1.WebhookClientConfig{CABundle: ca, URL: new("https://localhost:9443/convert")},
	}, {
		name:    "neither is an error",
		in:      admissionregistrationv1.WebhookClientConfig{CABundle: ca},
		wantErr: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DesiredConversion(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			want := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &tc.want, ConversionReviewVersions: []string{"v1", "v1beta1"}}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("conversion (-want +got):\n%s", diff)
			}
		})
	}
}
