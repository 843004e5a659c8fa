package v1beta1

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// safeEncodeAlphabet is the Kubernetes "safe encode" alphabet (no vowels, no
// look-alike characters), the one OpenKruise maps its hashes through.
const safeEncodeAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// Hashes are the two SidecarSet hashes OpenKruise records in the
// kruise.io/sidecarset-hash and kruise.io/sidecarset-hash-without-image
// annotations.
type Hashes struct {
	// Hash covers the containers (and native-sidecar init containers).
	Hash string
	// WithoutImage is the same with every image blanked: two specs that
	// differ only in images have equal WithoutImage hashes, which is what
	// makes an in-place upgrade possible.
	WithoutImage string
}

// ComputeHashes computes both hashes of a SidecarSet spec, bit for bit as
// OpenKruise does: the SHA-256 of the JSON object {"containers": [...]},
// plus "initContainers" when any init container is a native sidecar
// (restartPolicy Always), hex-encoded and mapped through the safe-encode
// alphabet. The spec should be defaulted first (SetDefaults), as the
// defaults are part of the hashed JSON.
func ComputeHashes(spec *SidecarSetSpec) (Hashes, error) {
	h, err := hashContainers(spec.Containers, spec.InitContainers, false)
	if err != nil {
		return Hashes{}, err
	}
	w, err := hashContainers(spec.Containers, spec.InitContainers, true)
	if err != nil {
		return Hashes{}, err
	}
	return Hashes{Hash: h, WithoutImage: w}, nil
}

// HasNativeSidecar reports whether any init container is a native sidecar.
func HasNativeSidecar(initContainers []SidecarContainer) bool {
	for i := range initContainers {
		if IsNativeSidecar(&initContainers[i].Container) {
			return true
		}
	}
	return false
}

// IsNativeSidecar reports whether an init container has restartPolicy Always.
func IsNativeSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func hashContainers(containers, initContainers []SidecarContainer, withoutImage bool) (string, error) {
	if withoutImage {
		containers = withoutImages(containers)
		initContainers = withoutImages(initContainers)
	}
	// A map marshals with sorted keys: "containers" before "initContainers".
	doc := map[string][]SidecarContainer{"containers": containers}
	if HasNativeSidecar(initContainers) {
		doc["initContainers"] = initContainers
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encoding sidecar containers for hashing: %w", err)
	}
	return safeEncode(sha256.Sum256(data)), nil
}

func withoutImages(in []SidecarContainer) []SidecarContainer {
	if in == nil {
		return nil
	}
	out := make([]SidecarContainer, len(in))
	for i := range in {
		out[i] = in[i]
		out[i].Image = ""
	}
	return out
}

// safeEncode hex-encodes the digest and maps each hex character (by its byte
// value) through the safe-encode alphabet.
func safeEncode(sum [sha256.Size]byte) string {
	hexed := []byte(hex.EncodeToString(sum[:]))
	for i, b := range hexed {
		hexed[i] = safeEncodeAlphabet[int(b)%len(safeEncodeAlphabet)]
	}
	return string(hexed)
}

// HashedFieldChanges says what the hashes cover, field by field: the JSON
// names of the fields of a sidecar whose encoding in the hashed JSON differs
// between two versions of it (defaulted, of the same name), in the order the
// new version encodes them, then those only the old one has. A sidecar's
// change reaches the hashes exactly when this is not empty (and the sidecar
// is hashed: a container or a native sidecar, or a plain init container
// beside one); without "image", it reaches the without-image hash.
func HashedFieldChanges(now, before *SidecarContainer) ([]string, error) {
	a, err := hashedMembers(now)
	if err != nil {
		return nil, err
	}
	b, err := hashedMembers(before)
	if err != nil {
		return nil, err
	}
	var changed []string
	seen := map[string]bool{}
	for _, m := range a {
		seen[m.name] = true
		if old, ok := b.get(m.name); !ok || !bytes.Equal(m.value, old) {
			changed = append(changed, m.name)
		}
	}
	for _, m := range b {
		if !seen[m.name] {
			changed = append(changed, m.name)
		}
	}
	return changed, nil
}

// member is one field of a sidecar's hashed JSON.
type member struct {
	name  string
	value json.RawMessage
}

type members []member

func (ms members) get(name string) (json.RawMessage, bool) {
	for _, m := range ms {
		if m.name == name {
			return m.value, true
		}
	}
	return nil, false
}

// hashedMembers encodes a sidecar as hashContainers does and returns the
// fields of the encoding in order (json.Marshal writes a struct's fields in
// declaration order, leaving out the empty omitempty ones).
func hashedMembers(c *SidecarContainer) (members, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding sidecar %q for hashing: %w", c.Name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, err
	}
	var out members
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		m := member{}
		m.name, _ = tok.(string)
		if err := dec.Decode(&m.value); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
