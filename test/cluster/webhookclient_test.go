package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// TestWriteWebhookClientAuth: the client certificate is one the manager
// accepts (signed by the CA file, for client auth, of WebhookClientName),
// the kubeconfig names it for the host's webhooks and every Service's, and
// the admission configuration names the kubeconfig for both webhook plugins.
func TestWriteWebhookClientAuth(t *testing.T) {
	t.Parallel()
	c := &Cluster{Name: "test", WorkDir: t.TempDir(), WebhookHosts: []string{"localhost:19443"}}
	if args := c.WebhookClientArgs(); args != nil {
		t.Errorf("before the credentials exist: %v, want no flags", args)
	}
	if err := c.writeWebhookClientAuth(); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(mustRead(t, c.WebhookClientCAPath())) {
		t.Fatal("ca.crt holds no certificate")
	}
	block, _ := pem.Decode(mustRead(t, c.WebhookClientCertPath()))
	if block == nil {
		t.Fatal("client.crt holds no certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the client certificate does not verify for client auth: %v", err)
	}
	if cert.Subject.CommonName != WebhookClientName {
		t.Errorf("common name %q, want %q", cert.Subject.CommonName, WebhookClientName)
	}
	kubeconfig, err := clientcmd.LoadFromFile(filepath.Join(c.WebhookClientDir(), "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"localhost:19443", "*.svc"} {
		if u, ok := kubeconfig.AuthInfos[user]; !ok || u.ClientCertificate != c.WebhookClientCertPath() || u.ClientKey != c.WebhookClientKeyPath() {
			t.Errorf("kubeconfig user %q: %+v, want the client certificate", user, u)
		}
	}
	admission := string(mustRead(t, c.admissionConfigPath()))
	for _, want := range []string{"name: ValidatingAdmissionWebhook", "name: MutatingAdmissionWebhook", filepath.Join(c.WebhookClientDir(), "kubeconfig")} {
		if !strings.Contains(admission, want) {
			t.Errorf("the admission configuration lacks %q:\n%s", want, admission)
		}
	}
	if args := c.WebhookClientArgs(); len(args) != 2 || !strings.HasSuffix(args[0], c.WebhookClientCAPath()) {
		t.Errorf("manager flags %v, want the CA file and the name", args)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
