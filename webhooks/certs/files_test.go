package certs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sidecarset-operator/sidecarset-operator/test/expect"
)

// TestWaitForFiles: the certificate is ready once both its files are in
// the directory, and not before; a context that ends stops the wait
// without it.
func TestWaitForFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- waitForFiles(t.Context(), dir, ready) }()
	if err := os.WriteFile(filepath.Join(dir, corev1.TLSCertKey), []byte("cert"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
		t.Fatal("ready with the certificate's key missing")
	case <-time.After(1500 * time.Millisecond):
	}
	if err := os.WriteFile(filepath.Join(dir, corev1.TLSPrivateKeyKey), []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("not ready 5s after both files were written")
	}
	if err := <-done; err != nil {
		t.Fatalf("waitForFiles: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	never := make(chan struct{})
	go func() { done <- waitForFiles(ctx, t.TempDir(), never) }()
	cancel()
	if err := expect.Returned(t, done, "waitForFiles after its context ended"); err != nil {
		t.Fatalf("waitForFiles after the context ended: %v", err)
	}
	select {
	case <-never:
		t.Fatal("ready without the files")
	default:
	}
}

// TestSecretToDir: the Secret's certificate and key are copied into the
// directory; the copy returns nil when its context ends, and stops with
// the error of a write that fails.
func TestSecretToDir(t *testing.T) {
	t.Parallel()
	key := types.NamespacedName{Namespace: "ops", Name: "cert"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Data: map[string][]byte{corev1.TLSCertKey: []byte("cert"), corev1.TLSPrivateKeyKey: []byte("key")}}
	reader := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(secret).Build()

	dir := filepath.Join(t.TempDir(), "certs")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- (&secretToDir{reader: reader, key: key, dir: dir}).Start(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cert, errCert := os.ReadFile(filepath.Join(dir, corev1.TLSCertKey))
		tlsKey, errKey := os.ReadFile(filepath.Join(dir, corev1.TLSPrivateKeyKey))
		if errCert == nil && errKey == nil && bytes.Equal(cert, []byte("cert")) && bytes.Equal(tlsKey, []byte("key")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Secret's files are not in the directory after 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start after its context ended: %v", err)
	}

	// The directory cannot be made: a file stands at its path.
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() { done <- (&secretToDir{reader: reader, key: key, dir: blocked}).Start(t.Context()) }()
	if err := expect.Returned(t, done, "Start after a failed write"); err == nil {
		t.Fatal("Start returned nil after a failed write")
	}
}
