// Package mirror lets one registry serve as containerd's mirror of every
// registry host: containerd names the host an image belongs to in the "ns"
// query parameter of each request it sends a mirror
// (/v2/library/nginx/manifests/1.25?ns=docker.io), and Namespaced puts that
// host in front of the repository (/v2/docker.io/library/nginx/manifests/1.25).
package mirror

import (
	"net/http"
	"strings"
)

// Namespaced serves next with the repository of every request that names a
// host in "ns" prefixed by that host. Requests without one (pushes of the
// node's own images, by their full names) pass unchanged.
func Namespaced(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		ns := q.Get("ns")
		rest, isRepo := strings.CutPrefix(r.URL.Path, "/v2/")
		if ns == "" || !isRepo || rest == "" || strings.Contains(ns, "/") {
			next.ServeHTTP(w, r)
			return
		}
		q.Del("ns")
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/v2/" + ns + "/" + rest
		r2.URL.RawPath = ""
		r2.URL.RawQuery = q.Encode()
		r2.RequestURI = r2.URL.RequestURI()
		next.ServeHTTP(w, r2)
	})
}
