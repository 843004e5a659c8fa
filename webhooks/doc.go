// Package webhooks holds the operator's admission handlers and their
// codecs: pod injection (PodInjector, which answers with the decision of
// webhooks/decide, and its AdmissionReview codec), and SidecarSet
// defaulting and validation (SidecarSetDefaulter, SidecarSetValidator,
// with the authoring policy's check). The handlers are thin: they read
// from memory and the cache and call the pure cores (webhooks/inject,
// webhooks/validation, policy).
//
// The server that registers them is webhooks/server; the names they are
// known by are in webhooks/names; each runnable the server needs
// (certificates, the CRD's conversion, the pod webhooks' scope, the
// whitelist's reload, the authoring policy's install) has its own package
// under webhooks/.
package webhooks
