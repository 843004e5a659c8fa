package mirror

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// An image pushed under its full name is what containerd gets when it asks
// the mirror for that host's repository; another host's is not found.
func TestNamespaced_ServesEachHostsRepositoryUnderItsName(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Namespaced(registry.New()))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(addr+"/docker.io/library/nginx:1.25", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodHead, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}
	if resp := get("/v2/library/nginx/manifests/1.25?ns=docker.io"); resp.StatusCode != http.StatusOK || resp.Header.Get("Docker-Content-Digest") != digest.String() {
		t.Errorf("docker.io's library/nginx:1.25 through the mirror: %s, digest %q; want 200 and %s",
			resp.Status, resp.Header.Get("Docker-Content-Digest"), digest)
	}
	if resp := get("/v2/library/nginx/manifests/1.25?ns=ghcr.io"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("ghcr.io's library/nginx:1.25 through the mirror: %s; want 404", resp.Status)
	}
	if resp := get("/v2/"); resp.StatusCode != http.StatusOK {
		t.Errorf("the API's root: %s; want 200", resp.Status)
	}
}
