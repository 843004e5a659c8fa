package cluster

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sidecarset-operator/sidecarset-operator/test/pki"
)

// WebhookClientName is the subject common name of the client certificate
// the cluster's API server presents to admission webhooks.
const WebhookClientName = "kube-apiserver-webhook-client"

// WebhookClientDir holds the API server's admission webhook client
// credentials: a CA (ca.crt, ca.key), the client certificate it signed
// (client.crt, client.key), the kubeconfig naming them and the admission
// configuration naming that kubeconfig.
func (c *Cluster) WebhookClientDir() string { return filepath.Join(c.WorkDir, "webhook-client") }

// WebhookClientCAPath is the CA of the API server's webhook client
// certificate: the manager's --webhook-client-ca-file.
func (c *Cluster) WebhookClientCAPath() string { return filepath.Join(c.WebhookClientDir(), "ca.crt") }

// WebhookClientCertPath and WebhookClientKeyPath are the API server's
// webhook client certificate and key (a spec may present them as the API
// server would).
func (c *Cluster) WebhookClientCertPath() string {
	return filepath.Join(c.WebhookClientDir(), "client.crt")
}

// WebhookClientKeyPath is the key of WebhookClientCertPath.
func (c *Cluster) WebhookClientKeyPath() string {
	return filepath.Join(c.WebhookClientDir(), "client.key")
}

func (c *Cluster) admissionConfigPath() string {
	return filepath.Join(c.WebhookClientDir(), "admission.yaml")
}

// WebhookClientArgs are the manager's flags that make it require the API
// server's client certificate on the admission paths; none for a cluster
// made before the API server presented one.
func (c *Cluster) WebhookClientArgs() []string {
	if _, err := os.Stat(c.WebhookClientCAPath()); err != nil {
		return nil
	}
	return []string{"--webhook-client-ca-file=" + c.WebhookClientCAPath(), "--webhook-client-names=" + WebhookClientName}
}

// writeWebhookClientAuth makes the API server's admission webhook client
// credentials and its admission configuration. The kubeconfig's users are
// matched by the webhook's address: each of WebhookHosts (host:port of a URL
// webhook, as the host's manager is reached) and "*.svc" (a Service's
// <name>.<namespace>.svc, as the in-cluster install's is). The API server
// presents no certificate to conversion webhooks whatever this says.
func (c *Cluster) writeWebhookClientAuth() error {
	dir := c.WebhookClientDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := pki.NewCA("sidecarset-e2e-webhook-client-ca")
	if err != nil {
		return err
	}
	client, err := ca.Issue(WebhookClientName, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return err
	}
	caKeyPEM, err := pki.EncodeKey(ca.Key)
	if err != nil {
		return err
	}
	keyPEM, err := pki.EncodeKey(client.PrivateKey)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt":     ca.CertPEM(),
		"ca.key":     caKeyPEM,
		"client.crt": pki.EncodeCert(client.Certificate[0]),
		"client.key": keyPEM,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	for _, host := range append([]string{"*.svc"}, c.WebhookHosts...) {
		cfg.AuthInfos[host] = &clientcmdapi.AuthInfo{
			ClientCertificate: filepath.Join(dir, "client.crt"),
			ClientKey:         filepath.Join(dir, "client.key"),
		}
	}
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		return err
	}
	admission := fmt.Appendf(nil, `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]q
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]q
`, kubeconfig)
	return os.WriteFile(c.admissionConfigPath(), admission, 0o600)
}
