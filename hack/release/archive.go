package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sidecarset-operator/sidecarset-operator/version"
)

// pluginBinary is the plugin's file name (kubectl finds kubectl-<name>).
const pluginBinary = "kubectl-sidecarset"

// pluginPackage is the plugin's main package.
const pluginPackage = "./cmd/kubectl-sidecarset"

// pluginBuildArgs are the go build arguments of a release plugin: no file
// system paths, no symbol table, no VCS stamp, the version and commit
// stamped into package version.
func pluginBuildArgs(ver, revision, out string) []string {
	ldflags := append([]string{"-s", "-w"}, version.LDFlags(ver, revision)...)
	return []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=" + strings.Join(ldflags, " "), "-o", out, pluginPackage}
}

// buildPlugin compiles the plugin for one platform, statically.
func buildPlugin(ctx context.Context, root, goos, goarch, ver, revision, out string) error {
	cmd := exec.CommandContext(ctx, "go", pluginBuildArgs(ver, revision, out)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0")
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w\n%s", goos, goarch, err, output)
	}
	return nil
}

// archiveFile is a file of an archive.
type archiveFile struct {
	name string
	mode int64
	data []byte
}

// tarGz writes the files as a gzipped tar: owned by root, every time the
// given one, no gzip name or time, so that the same files give the same
// bytes.
func tarGz(files []archiveFile, modTime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: modTime, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// archiveName is a platform's archive file name.
func archiveName(ver, goos, goarch string) string {
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", pluginBinary, ver, goos, goarch)
}

// writeFile writes data into dir and returns its SHA-256, hex.
func writeFile(dir, name string, data []byte) (string, error) {
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// fileSha256 is the SHA-256 of a file, hex.
func fileSha256(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
