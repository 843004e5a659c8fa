// Command registry is the real node's image registry: an OCI registry
// (go-containerregistry's) on a loopback address, holding the node's images
// under their full names (docker.io/library/nginx, registry.k8s.io/pause).
// containerd reaches it for every registry host, as a mirror: it names the
// host the image belongs to in the "ns" query parameter, which the registry
// puts in front of the repository, so that docker.io's nginx and another
// host's nginx stay apart. Blobs are kept on disk, manifests in memory (the
// node pushes its catalogue at every start).
//
//	registry --addr 127.0.0.1:5123 --dir bin/dev/node/registry
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/sidecarset-operator/sidecarset-operator/test/node/mirror"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5123", "The address to serve on.")
	dir := flag.String("dir", "", "The directory of the blobs (required).")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "registry: --dir is required")
		os.Exit(2)
	}
	if err := run(*addr, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func run(addr, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	logger := log.New(os.Stderr, "", log.LstdFlags)
	handler := registry.New(registry.WithBlobHandler(registry.NewDiskBlobHandler(dir)), registry.Logger(logger))
	srv := &http.Server{Handler: mirror.Namespaced(handler), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(l) }()
	logger.Printf("serving on %s, blobs in %s", addr, dir)
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
