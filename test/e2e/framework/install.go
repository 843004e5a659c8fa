package framework

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/hack/image/release"
	"github.com/sidecarset-operator/sidecarset-operator/test/cluster"
	"github.com/sidecarset-operator/sidecarset-operator/test/node"
)

// ManagerImage is the reference the plain install (config/default) names.
const ManagerImage = "ghcr.io/sidecarset-operator/sidecarset-operator:v0.1.0"

// InstallFromImage builds the manager's release image for this host's
// platform as make image does (hack/image manager), pushes it to the real
// node's registry under the reference config/default names, and installs
// config/default as it is but for two patches the cluster needs: its
// namespace sends its pods to the real node (node.NamespaceAnnotations), and
// the manager reaches the API server at this host's address (there is no
// kube-proxy to route the kubernetes Service's ClusterIP); and, as a
// platform that sets it up would, with config/clientauth: the manager
// requires the API server's webhook client certificate, whose CA the
// cluster made. It returns the image's digest.
func (e *Env) InstallFromImage(ctx context.Context) (string, error) {
	if e.Node == nil {
		return "", fmt.Errorf("the operator runs from its image on the real node: the environment has none")
	}
	digest, err := e.pushImage(ctx, e.RepoRoot, filepath.Join(e.Dir, "image", "manager"), ManagerImage, "0.1.0")
	if err != nil {
		return "", err
	}
	manifests, err := e.renderInstall(ctx, e.RepoRoot, filepath.Join(e.Dir, "install"), "")
	if err != nil {
		return "", err
	}
	if _, err := e.Cluster.RunKubectlStdin(ctx, manifests, "apply", "--server-side", "-f", "-"); err != nil {
		return "", err
	}
	return digest, nil
}

// pushImage builds the manager's image from the checkout at root, as make
// image does, labelled with version, into layout, and pushes it to the
// real node's registry under image. It returns the image's digest.
func (e *Env) pushImage(ctx context.Context, root, layout, image, version string) (string, error) {
	build := exec.CommandContext(ctx, "go", "run", "./hack/image", "manager", "--platforms=linux/"+runtime.GOARCH,
		"--image="+image, "--version="+version, "--out="+layout)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager image in %s: %w\n%s", root, err, out)
	}
	idx, err := release.ReadLayout(layout)
	if err != nil {
		return "", err
	}
	ref, err := node.PushReference(e.Node.Registry(), image)
	if err != nil {
		return "", err
	}
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("pushing the manager image to the real node's registry: %w", err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return digest.String(), nil
}

// renderInstall renders the config/default of the checkout at root with
// the two patches, through an overlay written into dir; a non-empty digest
// pins the manager's image to it.
func (e *Env) renderInstall(ctx context.Context, root, dir, digest string) ([]byte, error) {
	server, err := url.Parse(e.Config.Host)
	if err != nil {
		return nil, err
	}
	hostIP, err := cluster.HostIP()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base, err := filepath.Rel(dir, filepath.Join(root, "config", "default"))
	if err != nil {
		return nil, err
	}
	clientAuth, err := filepath.Rel(dir, filepath.Join(root, "config", "clientauth"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(e.Cluster.WebhookClientCAPath())
	if err != nil {
		return nil, fmt.Errorf("the cluster's webhook client CA: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o644); err != nil {
		return nil, err
	}
	annotations, err := yaml.Marshal(node.NamespaceAnnotations())
	if err != nil {
		return nil, err
	}
	kustomization := fmt.Sprintf(`# config/default on the e2e cluster's real node (framework.InstallFromImage).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
components:
- %s
configMapGenerator:
- name: sidecarset-operator-webhook-client-ca
  namespace: kruise-system
  files: [ca.crt]
  options: {disableNameSuffixHash: true}
patches:
- patch: |-
    apiVersion: v1
    kind: Namespace
    metadata:
      name: kruise-system
      annotations:
%s
- patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: sidecarset-operator
      namespace: kruise-system
    spec:
      template:
        spec:
          containers:
          - name: manager
            env:
            - name: KUBERNETES_SERVICE_HOST
              value: %q
            - name: KUBERNETES_SERVICE_PORT
              value: %q
`, base, clientAuth, indent(string(annotations), "        "), hostIP, server.Port())
	if digest != "" {
		kustomization += fmt.Sprintf("images:\n- name: %s\n  digest: %s\n", strings.Split(ManagerImage, ":")[0], digest)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		return nil, err
	}
	return e.Cluster.RunKubectl(ctx, "kustomize", dir)
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}
