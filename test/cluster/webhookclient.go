package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sidecarset-e2e-webhook-client-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: WebhookClientName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt":     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"ca.key":     pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: caKeyDER}),
		"client.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"client.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
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
