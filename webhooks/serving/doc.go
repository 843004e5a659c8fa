// Package serving holds what every path of the webhook server shares: the
// bound on what a request may make the server read, the client
// authentication of the API server on the admission paths, and the
// streaming conversion webhook.
package serving
