package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	jsoniter "github.com/json-iterator/go"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/test/pki"
)

// The bare webhook is the floor of what any injecting webhook costs here:
// a process that serves the pod webhook over TLS, decodes each
// AdmissionReview with its pod (in one pass, as the operator's handler
// does), answers every pod with the patch the operator answered for one of
// the bench's pods (asked once), and watches the pods in protobuf with an
// informer, as a controller that counts and updates them must. It decides
// nothing, but for naming each pod's own service account token volume in
// the patch, as the operator does. The bench runs it as a process of its
// own, so that its CPU is read apart, in place of the operator's pod
// webhooks, in each round with 1 SidecarSet: its CPU per pod is the least
// an operator that injects and watches the pods spends, and its pods/s the
// most a webhook that injects this patch lets the API server reach.

// bareVerb is the bench's verb for the bare webhook's process.
const bareVerb = "bare-webhook"

// bareComponent names the bare webhook's process in the CPU snapshots.
const bareComponent = "bare webhook"

// bareWebhookConfig is the name of the bare webhook's configuration.
const bareWebhookConfig = "bench-bare-webhook"

// bareJSON is the bare webhook's decoder: the operator's pod webhook's.
var bareJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// bareReview is the part of an AdmissionReview the bare webhook reads: what
// an injector must read, the request's UID and its pod.
type bareReview struct {
	Request *struct {
		UID    types.UID   `json:"uid"`
		Object *corev1.Pod `json:"object"`
	} `json:"request"`
}

// runBareWebhook is the bare webhook's process: bench bare-webhook
// --kubeconfig --addr --cert --key --patch --patch-path --token-volume.
func runBareWebhook(args []string) int {
	fs := flag.NewFlagSet("bench "+bareVerb, flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "Kubeconfig of the dev cluster.")
	addr := fs.String("addr", "", "Address to serve on.")
	certFile := fs.String("cert", "", "Serving certificate (PEM).")
	keyFile := fs.String("key", "", "Its key (PEM).")
	patchFile := fs.String("patch", "", "The JSON patch answered for every pod on --patch-path.")
	patchPath := fs.String("patch-path", "", "The URL path answered with the patch; other paths are allowed unchanged.")
	tokenVolume := fs.String("token-volume", "", "The service account token's volume in the pod the patch was made for; the patch names each pod's own.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := serveBareWebhook(*kubeconfig, *addr, *certFile, *keyFile, *patchFile, *patchPath, *tokenVolume); err != nil {
		fmt.Fprintln(os.Stderr, "bench "+bareVerb+":", err)
		return 1
	}
	return 0
}

func serveBareWebhook(kubeconfig, addr, certFile, keyFile, patchFile, patchPath, tokenVolume string) error {
	patch, err := os.ReadFile(patchFile)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// The pods watched as the floor client watches them (podwatch.go).
	w, err := (&env{config: cfg}).watchPods(context.Background())
	if err != nil {
		return err
	}
	defer w.stop()
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var review bareReview
		if err == nil {
			err = bareJSON.Unmarshal(body, &review)
		}
		if err == nil && (review.Request == nil || review.Request.Object == nil) {
			err = errors.New("no pod in the review")
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		if r.URL.Path == patchPath {
			answer.PatchType, answer.Patch = new(admissionv1.PatchTypeJSONPatch), forPod(patch, tokenVolume, review.Request.Object)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = bareJSON.NewEncoder(w).Encode(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
			Response: answer,
		})
	})
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	// HTTP/1.1, as the operator serves its webhooks by default.
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:    &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}}
	return srv.ListenAndServeTLS("", "")
}

// tokenVolumePrefix begins the name of the volume the API server gives a
// pod for its service account's token, with a random suffix.
const tokenVolumePrefix = "kube-api-access-"

// forPod is the patch made for another pod, whose service account token's
// volume was tokenVolume, for pod: the operator mounts the token in the
// sidecars it injects (the seed's default), under the pod's own volume name.
func forPod(patch []byte, tokenVolume string, pod *corev1.Pod) []byte {
	if tokenVolume == "" {
		return patch
	}
	if own := tokenVolumeOf(pod); own != "" {
		return bytes.ReplaceAll(patch, []byte(strconv.Quote(tokenVolume)), []byte(strconv.Quote(own)))
	}
	return patch
}

// tokenVolumeOf is the name of a pod's service account token volume ("" if
// it has none).
func tokenVolumeOf(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, tokenVolumePrefix) {
			return v.Name
		}
	}
	return ""
}

// bareWebhook is the bare webhook's process, as the bench started it.
type bareWebhook struct {
	cmd      *exec.Cmd
	url      string
	caBundle []byte
	// exited is closed when the process has ended.
	exited chan struct{}
}

// startBareWebhook starts the bare webhook's process, answering the
// operator's required pod webhook (at /<its name>) with patch, and waits
// until it serves.
func (e *env) startBareWebhook(ctx context.Context, dir, kubeconfig string, patch []byte, tokenVolume string) (*bareWebhook, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	ca, err := pki.NewCA("bench-bare-webhook-ca")
	if err != nil {
		return nil, err
	}
	pair, err := ca.Issue("bench-bare-webhook", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	key, err := pki.EncodeKey(pair.PrivateKey)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"tls.crt": pki.EncodeCert(pair.Certificate[0]), "tls.key": key, "patch.json": patch}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, bareVerb, "--kubeconfig="+kubeconfig, "--addr="+addr,
		"--cert="+filepath.Join(dir, "tls.crt"), "--key="+filepath.Join(dir, "tls.key"),
		"--patch="+filepath.Join(dir, "patch.json"), "--patch-path=/"+podWebhookName, "--token-volume="+tokenVolume)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// It ends with the bench, however the bench ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &bareWebhook{cmd: cmd, url: "https://" + addr, caBundle: ca.CertPEM(), exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(b.exited)
	}()
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	probe := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-b.exited:
			return false, errors.New("the bare webhook exited")
		default:
		}
		// Not serving yet until it answers.
		if resp, err := probe.Get(b.url + "/readyz"); err == nil {
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		}
		return false, nil
	})
	if err != nil {
		b.stop()
		return nil, fmt.Errorf("starting the bare webhook: %w", err)
	}
	return b, nil
}

func (b *bareWebhook) pid() string { return strconv.Itoa(b.cmd.Process.Pid) }

func (b *bareWebhook) stop() {
	_ = b.cmd.Process.Kill()
	<-b.exited
}

// config is the operator's mutating webhook configuration with its pod
// webhooks pointed at the bare webhook, each at /<its name> (same names,
// rules and matchConditions), and its other webhooks left out.
func (b *bareWebhook) config(operator *admissionregistrationv1.MutatingWebhookConfiguration) *admissionregistrationv1.MutatingWebhookConfiguration {
	out := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: bareWebhookConfig}}
	for _, w := range operator.Webhooks {
		if !forPods(w) {
			continue
		}
		w = *w.DeepCopy()
		url := b.url + "/" + w.Name
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: b.caBundle}
		out.Webhooks = append(out.Webhooks, w)
	}
	return out
}

// forPods reports whether a webhook's rules name pods.
func forPods(w admissionregistrationv1.MutatingWebhook) bool {
	for _, r := range w.Rules {
		for _, res := range r.Resources {
			if res == "pods" || res == "*" {
				return true
			}
		}
	}
	return false
}

// requestPod is the pod as the API server sends it to the mutating
// webhooks, made from a dry run's answer: the fields the API server sets
// after admission (identity, timestamps, status) left out.
func requestPod(created *corev1.Pod) *corev1.Pod {
	p := created.DeepCopy()
	p.UID, p.ResourceVersion, p.Generation, p.CreationTimestamp, p.ManagedFields = "", "", 0, metav1.Time{}, nil
	p.Status = corev1.PodStatus{}
	return p
}

// operatorPatch asks the operator's pod webhook, as the API server would
// (with its client certificate, clientDir's client.crt and client.key), for
// its answer to the creation of pod, and returns the JSON patch.
func operatorPatch(ctx context.Context, operator *admissionregistrationv1.MutatingWebhookConfiguration, clientDir string, pod *corev1.Pod) ([]byte, error) {
	var hook *admissionregistrationv1.MutatingWebhook
	for i := range operator.Webhooks {
		if operator.Webhooks[i].Name == podWebhookName {
			hook = &operator.Webhooks[i]
		}
	}
	if hook == nil || hook.ClientConfig.URL == nil {
		return nil, fmt.Errorf("%s has no webhook %s served at a URL", operator.Name, podWebhookName)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(hook.ClientConfig.CABundle) {
		return nil, fmt.Errorf("%s: no CA in its caBundle", podWebhookName)
	}
	tlsConfig := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if pair, err := tls.LoadX509KeyPair(filepath.Join(clientDir, "client.crt"), filepath.Join(clientDir, "client.key")); err == nil {
		tlsConfig.Certificates = []tls.Certificate{pair}
	}
	object, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	gvk := metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvr := metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "bench-bare-webhook-patch", Kind: gvk, Resource: gvr, RequestKind: &gvk, RequestResource: &gvr,
			Name: pod.Name, Namespace: pod.Namespace, Operation: admissionv1.Create, UserInfo: authenticationv1.UserInfo{Username: "bench"},
			Object: runtime.RawExtension{Raw: object}},
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, *hook.ClientConfig.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling the operator's pod webhook: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil {
		return nil, fmt.Errorf("the operator's pod webhook answered %s: %w", resp.Status, err)
	}
	if review.Response == nil || !review.Response.Allowed || len(review.Response.Patch) == 0 {
		return nil, fmt.Errorf("the operator's pod webhook did not inject the bench's pod: %+v", review.Response)
	}
	return review.Response.Patch, nil
}

// measureBare creates the pods with the bare webhook in place of the
// operator's pod webhooks, starting it the first time with the operator's
// answer for a measured pod.
func (e *env) measureBare(ctx context.Context, o webhookOptions, label string) (creation, error) {
	return e.withoutPodWebhooks(ctx, func(operator *admissionregistrationv1.MutatingWebhookConfiguration) (creation, error) {
		return e.withBare(ctx, o, label, operator)
	})
}

// withBare measures the creation with the bare webhook's configuration in
// place of the operator's, removed.
func (e *env) withBare(ctx context.Context, o webhookOptions, label string, operator *admissionregistrationv1.MutatingWebhookConfiguration) (creation, error) {
	if e.bare == nil {
		// The pod the API server sends the webhooks: a measured pod as a
		// dry run creates it with no pod webhook.
		plain := benchPod(0)
		if err := e.client.Create(ctx, plain, client.DryRunAll); err != nil {
			return creation{}, err
		}
		dir := filepath.Dir(e.kubeconfig)
		patch, err := operatorPatch(ctx, operator, filepath.Join(dir, "webhook-client"), requestPod(plain))
		if err != nil {
			return creation{}, err
		}
		if e.bare, err = e.startBareWebhook(ctx, filepath.Join(dir, "bare-webhook"), e.kubeconfig, patch, tokenVolumeOf(plain)); err != nil {
			return creation{}, err
		}
	}
	cfg := e.bare.config(operator)
	if err := e.client.Create(ctx, cfg); err != nil {
		return creation{}, err
	}
	err := e.waitWebhookCalled(ctx, true)
	var run creation
	if err == nil {
		run, err = e.measureCreation(ctx, o, label, true)
	}
	cleanup := context.WithoutCancel(ctx)
	if derr := e.client.Delete(cleanup, cfg); derr != nil {
		return run, errors.Join(err, derr)
	}
	return run, errors.Join(err, e.waitWebhookCalled(cleanup, false))
}
