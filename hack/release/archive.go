package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// pluginBinary is the plugin's file name (kubectl finds kubectl-<name>).
const pluginBinary = "kubectl-sidecarset"

// pluginPackage is the plugin's main package.
const pluginPackage = "./cmd/kubectl-sidecarset"

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
