package webhook_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
	"github.com/sidecarset-operator/sidecarset-operator/test/pki"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/certs"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// A manager that issues its own certificate may find a certificate of another
// CA in its directory and in its Secret (files of an earlier install: a host
// manager started again after make undeploy, a container restarted with its
// emptyDir kept; a Secret whose CA is gone or expired). The rotator replaces
// them and the webhook configurations trust its new CA. The certificate is
// ready, and the server may start, only once the directory holds the
// certificate they trust: a server started on the old files had every pod
// the API server sent it refused ("certificate signed by unknown
// authority") until the files were copied again.
var _ = ginkgo.Describe("Self-managed serving certificates", func() {
	ginkgo.It("are ready only once the directory holds the certificate the webhook configurations trust, files of an earlier install left in it", func(ctx ginkgo.SpecContext) {
		const name = "certs-left-over"
		dir := ginkgo.GinkgoT().TempDir()
		certPEM, key := servingCertificate(dir, "sidecarset-operator-ca")

		ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
		url := "https://127.0.0.1:1/unused"
		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "unused.certs.test", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
				FailurePolicy: &ignore, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"certs.test/never": "true"}}}}}
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "unused.certs.test", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
				FailurePolicy: &ignore, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"certs.test/never": "true"}}}}}
		for _, o := range []client.Object{mutating, validating} {
			gomega.Expect(k8s.Create(ctx, o)).To(gomega.Succeed())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) { gomega.Expect(k8s.Delete(ctx, o)).To(gomega.Succeed()) })
		}
		// The Secret holds that certificate without its CA, which the
		// rotator replaces: a new CA and certificate.
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: framework.OperatorNamespace}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: key}}
		gomega.Expect(k8s.Create(ctx, secret)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) { gomega.Expect(k8s.Delete(ctx, secret)).To(gomega.Succeed()) })

		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: framework.Scheme,
			Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		ready, err := certs.SetupCertificates(mgr, certs.CertOptions{Source: names.CertSourceSelf, Dir: dir,
			Namespace: framework.OperatorNamespace, SecretName: name, DNSName: "localhost", MutatingConfig: name, ValidatingConfig: name})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		startManager(ctx, mgr)

		gomega.Eventually(ready).WithContext(ctx).WithTimeout(30 * time.Second).Should(gomega.BeClosed())
		gomega.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mutating), mutating)).To(gomega.Succeed())
		trusted := x509.NewCertPool()
		gomega.Expect(trusted.AppendCertsFromPEM(mutating.Webhooks[0].ClientConfig.CABundle)).To(gomega.BeTrue(), "no CA bundle injected")
		served, err := os.ReadFile(filepath.Join(dir, corev1.TLSCertKey))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		block, _ := pem.Decode(served)
		gomega.Expect(block).NotTo(gomega.BeNil())
		leaf, err := x509.ParseCertificate(block.Bytes)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		_, err = leaf.Verify(x509.VerifyOptions{Roots: trusted, DNSName: "localhost"})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "ready with a certificate the webhook configuration does not trust")
	})
})

// Every replica serves the webhooks, the leader or not: a replica that is
// not the leader has its certificate ready too. With an external
// certificate (cert-manager, OLM), the wait for its files ran on the leader
// only, so a second replica never served.
var _ = ginkgo.Describe("External serving certificates", func() {
	ginkgo.It("are ready on a replica that is not the leader", func(ctx ginkgo.SpecContext) {
		const leaseName = "certs-follower"
		dir := ginkgo.GinkgoT().TempDir()
		servingCertificate(dir, "cert-manager-stand-in")

		// The lease is held by another replica for the spec's duration.
		holder, duration, now := "the-leader", int32(3600), metav1.NewMicroTime(time.Now())
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName, Namespace: framework.OperatorNamespace},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, AcquireTime: &now, RenewTime: &now}}
		gomega.Expect(k8s.Create(ctx, lease)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) { gomega.Expect(k8s.Delete(ctx, lease)).To(gomega.Succeed()) })

		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: framework.Scheme,
			Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			LeaderElection: true, LeaderElectionID: leaseName, LeaderElectionNamespace: framework.OperatorNamespace})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		ready, err := certs.SetupCertificates(mgr, certs.CertOptions{Source: names.CertSourceExternal, Dir: dir})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		startManager(ctx, mgr)

		gomega.Eventually(ready).WithContext(ctx).WithTimeout(10*time.Second).Should(gomega.BeClosed(), "not ready while another replica leads")
		gomega.Expect(mgr.Elected()).NotTo(gomega.BeClosed(), "the manager became the leader: the spec proves nothing")
	})
})

// servingCertificate writes a certificate for localhost, issued by a new CA
// of that name, and its key into dir, as tls.crt and tls.key; it returns
// both, PEM-encoded.
func servingCertificate(dir, caName string) (certPEM, keyPEM []byte) {
	ca, err := pki.NewCA(caName)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	cert, err := ca.Issue("localhost", x509.ExtKeyUsageServerAuth)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	keyPEM, err = pki.EncodeKey(cert.PrivateKey)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	certPEM = pki.EncodeCert(cert.Certificate[0])
	gomega.ExpectWithOffset(1, os.WriteFile(filepath.Join(dir, corev1.TLSCertKey), certPEM, 0o600)).To(gomega.Succeed())
	gomega.ExpectWithOffset(1, os.WriteFile(filepath.Join(dir, corev1.TLSPrivateKeyKey), keyPEM, 0o600)).To(gomega.Succeed())
	return certPEM, keyPEM
}

// startManager runs mgr until the spec ends, then waits for it to stop.
func startManager(ctx context.Context, mgr ctrl.Manager) {
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	ginkgo.DeferCleanup(func() {
		cancel()
		gomega.Eventually(done).WithTimeout(time.Minute).Should(gomega.Receive(gomega.Succeed()))
	})
}
