// Package images is the real node's image catalogue: every image the user
// manual, the docs and the e2e suites name, under the same references, built
// small by this project and served to the node's containerd by its registry
// (test/node/registry). A reference missing from the catalogue does not
// exist, as on any node without a registry that has it: a tag ending in
// "invalid" fails to pull.
//
// The images are Debian's busybox-static (sh, sleep and the usual commands)
// and nodebox, this project's small program (test/node/nodebox): the
// sandbox's pause, an HTTP server that counts the requests it served, and a
// command that crashes.
package images

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/sidecarset-operator/sidecarset-operator/hack/image/release"
	"github.com/sidecarset-operator/sidecarset-operator/test/node/counter"
)

// Kind is what an image runs.
type Kind string

// The kinds of images.
const (
	// Shell images (busybox, centos) hold busybox and run sh when no command
	// is given, which exits at once, as the real images do.
	Shell Kind = "shell"
	// Server images (nginx and the docs' other applications) serve the
	// nodebox counter on their Port.
	Server Kind = "server"
	// HotUpgrade is the hot-upgrade sample's sidecar: a server on
	// HotUpgradePort that its twin can serve beside it, and the /migrate.sh
	// its postStart hook runs, which returns once this container serves.
	HotUpgrade Kind = "hotupgrade"
	// HotUpgradeEmpty is the sample's empty image: it sleeps, and its
	// /migrate.sh returns at once.
	HotUpgradeEmpty Kind = "hotupgrade-empty"
	// CrashLoop images crash at once whatever the command: every command
	// they hold prints why and exits 1.
	CrashLoop Kind = "crashloop"
	// Pause is the pod sandbox's image.
	Pause Kind = "pause"
)

// Image is one image of the catalogue.
type Image struct {
	// Ref is the reference as manifests write it ("nginx:1.25").
	Ref  string
	Kind Kind
	// Port is where a Server image serves.
	Port int
}

// The references the node's configuration and the specs depend on.
const (
	// SandboxImage is containerd's pinned pod sandbox image.
	SandboxImage = "registry.k8s.io/pause:3.10.1"
	// CrashLoopImage crash-loops in any pod, whatever its command.
	CrashLoopImage = "busybox:crashloop"
	// HotUpgradePort is where the hot-upgrade sample's sidecar serves.
	HotUpgradePort = 8080
	// NginxPort is where the nginx images serve.
	NginxPort = 80
)

func server(port int, repo string, tags ...string) []Image {
	out := make([]Image, 0, len(tags))
	for _, t := range tags {
		out = append(out, Image{Ref: repo + ":" + t, Kind: Server, Port: port})
	}
	return out
}

func of(kind Kind, repo string, tags ...string) []Image {
	out := make([]Image, 0, len(tags))
	for _, t := range tags {
		out = append(out, Image{Ref: repo + ":" + t, Kind: kind})
	}
	return out
}

// Catalogue is every image the node has. The servers listen where the real
// images do, so that an application and a sidecar of different images do
// not take the same port.
var Catalogue = slices.Concat(
	server(NginxPort, "nginx", "1.15.1", "1.25", "1.26", "1.27", "1.27-alpine", "alpine", "latest"),
	of(Shell, "centos", "6.7", "6.8", "6.9", "7", "latest"),
	of(Shell, "busybox", "1.0", "1.35", "1.36", "1.37", "1.38", "2.0", "latest"),
	of(HotUpgrade, "openkruise/hotupgrade-sample", "sidecarv1", "sidecarv2", "sidecarv3", "sidecarv4"),
	of(HotUpgradeEmpty, "openkruise/hotupgrade-sample", "empty"),
	server(2020, "fluent/fluent-bit", "3.0", "3.1", "3.2"),
	server(9102, "prom/statsd-exporter", "v0.26.0"),
	server(10000, "envoyproxy/envoy", "v1.30.1", "v1.31.0"),
	server(8404, "haproxy", "2.9"),
	server(5432, "postgres", "16"),
	server(9000, "registry.example.com/platform/agent", "1.4"),
	of(CrashLoop, "busybox", "crashloop"),
	[]Image{{Ref: SandboxImage, Kind: Pause}},
)

// Inputs are the programs the images are made of.
type Inputs struct {
	// Busybox is Debian's busybox-static binary and Applets the commands it
	// provides (busybox --list).
	Busybox []byte
	Applets []string
	// Nodebox is test/node/nodebox, built static.
	Nodebox []byte
	// Platform is the images' platform (the host's).
	Platform v1.Platform
	// Created is every image's creation time and its files' time.
	Created time.Time
}

// defaultPath is the PATH of every image.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Builder builds the catalogue's images. Their first layer is one of three,
// shared (busybox and nodebox, the crashing commands, the pause program):
// it is built once.
type Builder struct {
	in                  Inputs
	shell, crash, pause v1.Layer
}

// NewBuilder builds the shared layers.
func NewBuilder(in Inputs) (*Builder, error) {
	b := &Builder{in: in}
	for _, l := range []struct {
		layer *v1.Layer
		tree  release.Tree
	}{
		{&b.shell, shellTree(in)},
		{&b.crash, crashTree(in)},
		{&b.pause, release.Tree{"pause": {Mode: 0o755, Data: in.Nodebox}}},
	} {
		layer, err := release.Layer(l.tree, in.Created)
		if err != nil {
			return nil, err
		}
		*l.layer = layer
	}
	return b, nil
}

// Build builds one image of the catalogue: its shared layer, then its own
// (the file naming it, and what its kind adds).
func (b *Builder) Build(img Image) (v1.Image, error) {
	own := release.Tree{counter.ImageFile: {Mode: 0o644, Data: []byte(img.Ref + "\n")}}
	cfg := v1.Config{Env: []string{defaultPath}, WorkingDir: "/", Cmd: []string{"sh"}}
	base := b.shell
	switch img.Kind {
	case Shell:
	case Server:
		cfg.Env = append(cfg.Env, "PORT="+strconv.Itoa(img.Port))
		cfg.ExposedPorts = map[string]struct{}{fmt.Sprintf("%d/tcp", img.Port): {}}
		cfg.Cmd = []string{"server"}
		if img.Port == NginxPort {
			cfg.Cmd = []string{"nginx", "-g", "daemon off;"}
		}
	case HotUpgrade:
		cfg.Env = append(cfg.Env, "PORT="+strconv.Itoa(HotUpgradePort))
		cfg.ExposedPorts = map[string]struct{}{fmt.Sprintf("%d/tcp", HotUpgradePort): {}}
		cfg.Cmd = []string{"server"}
		own["migrate.sh"] = release.File{Mode: 0o755, Data: []byte(migrateScript)}
	case HotUpgradeEmpty:
		cfg.Cmd = []string{"sleep", "999d"}
		own["migrate.sh"] = release.File{Mode: 0o755, Data: []byte("#!/bin/sh\n# The empty twin has no state to migrate.\nexit 0\n")}
	case CrashLoop:
		base = b.crash
	case Pause:
		base = b.pause
		cfg = v1.Config{Entrypoint: []string{"/pause"}, WorkingDir: "/"}
	default:
		return nil, fmt.Errorf("%s: unknown kind %q", img.Ref, img.Kind)
	}
	ownLayer, err := release.Layer(own, b.in.Created)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", img.Ref, err)
	}
	cfg.Labels = map[string]string{"org.opencontainers.image.ref.name": img.Ref}
	created := v1.Time{Time: b.in.Created.UTC()}
	out, err := mutate.ConfigFile(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON),
		&v1.ConfigFile{
			Architecture: b.in.Platform.Architecture, OS: b.in.Platform.OS, Variant: b.in.Platform.Variant,
			Created: created, Config: cfg, RootFS: v1.RootFS{Type: "layers"},
		})
	if err != nil {
		return nil, err
	}
	history := v1.History{Created: created, CreatedBy: "test/node/images " + string(img.Kind)}
	return mutate.Append(out,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: history},
		mutate.Addendum{Layer: ownLayer, MediaType: types.OCILayer, History: history})
}

// migrateScript is the hot-upgrade sample's state migration: it returns once
// this container's own server answers (its twin serves the same port, so an
// answer from the twin does not count). Debian's busybox wget crashes with
// its own -T timeout: timeout bounds it instead.
const migrateScript = `#!/bin/sh
# The hot-upgrade sample's migration (lifecycle.postStart): done once this
# container serves on its port beside its twin.
me=$(cat /` + counter.ImageFile + `)
i=0
while [ $i -lt 300 ]; do
  if timeout 1 wget -q -O - "http://127.0.0.1:${PORT}/" 2>/dev/null | grep -q "\"image\":\"$me\""; then
    echo "migrate: $me serves on :${PORT}"
    exit 0
  fi
  i=$((i+1))
  sleep 0.1
done
echo "migrate: $me does not serve on :${PORT}" >&2
exit 1
`

// system are the files every image with a shell has besides its commands.
var system = release.Tree{
	"etc/passwd":    {Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
	"etc/group":     {Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
	"root/.keep":    {Mode: 0o644},
	"tmp/.keep":     {Mode: 0o644},
	"var/log/.keep": {Mode: 0o644},
}

// shellTree is busybox with its commands in /bin, and nodebox as the servers
// (nginx, server).
func shellTree(in Inputs) release.Tree {
	t := maps.Clone(system)
	t["bin/busybox"] = release.File{Mode: 0o755, Data: in.Busybox}
	for _, a := range in.Applets {
		if a != "busybox" {
			t[path.Join("bin", a)] = release.File{Link: "busybox"}
		}
	}
	t["usr/sbin/nodebox"] = release.File{Mode: 0o755, Data: in.Nodebox}
	t["usr/sbin/nginx"] = release.File{Link: "nodebox"}
	t["usr/sbin/server"] = release.File{Link: "nodebox"}
	return t
}

// crashTree has every command busybox would have, each one crashing.
func crashTree(in Inputs) release.Tree {
	t := maps.Clone(system)
	t["bin/crash"] = release.File{Mode: 0o755, Data: in.Nodebox}
	for _, a := range in.Applets {
		t[path.Join("bin", a)] = release.File{Link: "crash"}
	}
	return t
}
