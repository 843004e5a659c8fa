// Package counter is what the real node's servers (test/node/nodebox)
// answer, and the file that names the image a container runs from.
package counter

import "time"

// ImageFile holds, in every image of the real node, the reference the image
// was built for (relative to the root).
const ImageFile = "etc/sidecarset-node-image"

// Counter is a server's answer: a container that restarted starts again at
// one request and a new start; one that kept running counts on.
type Counter struct {
	// Image is the image the container runs from.
	Image string `json:"image"`
	// Started is when the server started.
	Started time.Time `json:"started"`
	// Requests is the number of requests served, this one included.
	Requests int64 `json:"requests"`
}
