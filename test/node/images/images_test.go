package images

import (
	"archive/tar"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/sidecarset-operator/sidecarset-operator/test/node/counter"
)

func testBuilder(t *testing.T) *Builder {
	t.Helper()
	b, err := NewBuilder(Inputs{
		Busybox: []byte("busybox"), Applets: []string{"busybox", "sh", "sleep", "wget"}, Nodebox: []byte("nodebox"),
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Created: time.Unix(0, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// files lists an image's entries: regular files by content, links by
// target.
func files(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeSymlink:
			out[h.Name] = "-> " + h.Linkname
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = string(data)
		}
	}
}

// Every reference of the catalogue is an image of its own (its digest), the
// file naming it says which, and what runs in it is what its kind says.
func TestBuild_EachImageIsItsOwnAndRunsWhatItsKindSays(t *testing.T) {
	t.Parallel()
	b := testBuilder(t)
	digests := map[v1.Hash]string{}
	for _, img := range Catalogue {
		built, err := b.Build(img)
		if err != nil {
			t.Fatalf("%s: %v", img.Ref, err)
		}
		d, err := built.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := digests[d]; ok {
			t.Errorf("%s and %s are the same image", img.Ref, other)
		}
		digests[d] = img.Ref
		fs := files(t, built)
		if got := strings.TrimSpace(fs[counter.ImageFile]); got != img.Ref {
			t.Errorf("%s names itself %q", img.Ref, got)
		}
		cfg, err := built.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cmd := strings.Join(append(cfg.Config.Entrypoint, cfg.Config.Cmd...), " ")
		want := map[Kind]string{Shell: "sh", CrashLoop: "sh", Server: "server", HotUpgrade: "server", HotUpgradeEmpty: "sleep 999d", Pause: "/pause"}[img.Kind]
		if img.Kind == Server && img.Port == NginxPort {
			want = "nginx -g daemon off;"
		}
		if cmd != want {
			t.Errorf("%s runs %q, want %q", img.Ref, cmd, want)
		}
		switch img.Kind {
		case Shell, Server, HotUpgrade, HotUpgradeEmpty:
			if fs["bin/sh"] != "-> busybox" || fs["bin/sleep"] != "-> busybox" || fs["usr/sbin/server"] != "-> nodebox" {
				t.Errorf("%s lacks busybox's commands or the server: sh %q, sleep %q, server %q", img.Ref, fs["bin/sh"], fs["bin/sleep"], fs["usr/sbin/server"])
			}
		case CrashLoop:
			if fs["bin/sh"] != "-> crash" || fs["bin/sleep"] != "-> crash" || fs["bin/busybox"] != "-> crash" {
				t.Errorf("%s has commands that do not crash: sh %q, sleep %q", img.Ref, fs["bin/sh"], fs["bin/sleep"])
			}
		case Pause:
			if fs["pause"] != "nodebox" {
				t.Errorf("%s has no pause program", img.Ref)
			}
		}
		if (img.Kind == HotUpgrade || img.Kind == HotUpgradeEmpty) != (fs["migrate.sh"] != "") {
			t.Errorf("%s: migrate.sh present %v", img.Ref, fs["migrate.sh"] != "")
		}
	}
}
