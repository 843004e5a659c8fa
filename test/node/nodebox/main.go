// Command nodebox is the real node's own program in its images, beside
// busybox. What it does depends on the name it is run as (argv[0]'s base
// name), as busybox's applets do:
//
//   - pause: the pod sandbox's process. It sleeps as PID 1, reaps the
//     children it inherits, and exits on SIGTERM or SIGINT.
//   - nginx, server: an HTTP server on $PORT (80 by default) that answers
//     every request with its own counter, as JSON: the image it runs from,
//     when it started and how many requests it served. A restarted container
//     starts again at one request; a container that kept running counts on.
//     The listener sets SO_REUSEPORT, so two containers of one pod (the hot
//     upgrade's twins) can serve the same port while one takes over from the
//     other. SIGTERM stops it gracefully.
//   - crash: prints why and exits 1 at once, whatever its arguments and
//     whatever name it is run as: every command of the crash-looping images
//     is a link to it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sidecarset-operator/sidecarset-operator/test/node/counter"
)

func main() {
	name := filepath.Base(os.Args[0])
	// In the crash-looping images every command is a link to crash: what
	// it is run as is the command's name (sleep, sh), what it is, crash.
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "crash" {
		name = "crash"
	}
	switch name {
	case "pause":
		pause()
	case "nginx", "server":
		if err := serve(); err != nil {
			fmt.Fprintln(os.Stderr, name+":", err)
			os.Exit(1)
		}
	case "crash":
		fmt.Fprintf(os.Stderr, "crash: %s crashes on purpose (%s)\n", image(), strings.Join(os.Args, " "))
		os.Exit(1)
	default:
		fmt.Fprintf(os.Stderr, "nodebox: unknown name %q: run it as pause, nginx, server or crash\n", name)
		os.Exit(2)
	}
}

func image() string {
	data, err := os.ReadFile("/" + counter.ImageFile)
	if err != nil {
		return "an unknown image"
	}
	return strings.TrimSpace(string(data))
}

func pause() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			return
		case <-children:
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}

func serve() error {
	port := os.Getenv("PORT")
	if port == "" {
		port = "80"
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	l, err := lc.Listen(ctx, "tcp", ":"+port)
	if err != nil {
		return err
	}
	started := time.Now().UTC()
	img := image()
	var requests atomic.Int64
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(counter.Counter{Image: img, Started: started, Requests: requests.Add(1)})
		}),
	}
	fmt.Printf("serving %s on :%s\n", img, port)
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(l) }()
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
