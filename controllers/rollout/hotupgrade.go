package rollout

import (
	"maps"
	"time"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Hot upgrade.
//
// A hot-upgrade sidecar X runs as twins: one works, the other
// idles on the empty image. An upgrade puts the new image on a twin and
// makes it the working one at once (the working annotation flips when the
// image is patched). Once it runs, is consistent and the pod is ready, a
// reset puts the empty image back on the old twin.
//
// X is a container (twins in spec.containers) or a native sidecar (twins in
// spec.initContainers, both with restartPolicy Always). The state machine
// is the same: the kubelet restarts either twin on an image change and
// reports its image and imageID in the status, and the pod is Ready only
// when both twins are.
//
//	S0 X-1=v1 (working), X-2=empty
//	S1 upgrade: X-2=v2, working X-2    (pod not ready: the idle X-1 is not empty)
//	S2 X-2 consistent and ready        → reset
//	S3 reset: X-1=empty                (ready again once X-1 restarted)
//	next upgrade goes to X-1, symmetric.
//
// Version annotations tell the twins which is newer: on an upgrade the
// chosen twin's version is the SidecarSet's resourceVersion and its alt the
// other twin's version; the other twin's alt is the resourceVersion. A reset
// sets the idle twin's version and the working twin's alt to "0".

// upgradeHot adds the hot-upgrade sidecars' image changes to c.
func (s *setView) upgradeHot(c *change) {
	if len(s.hot) == 0 {
		return
	}
	v := c.v
	working := maps.Clone(v.state.WorkingHotUpgrade)
	if working == nil {
		working = map[string]string{}
	}
	flipped := false
	for _, h := range s.hot {
		if !s.injectedInto(v, h.name) {
			continue
		}
		chosen, other, ok := s.chooseTwin(v, h)
		if !ok {
			continue
		}
		cc, oc := specContainer(v.pod, chosen), specContainer(v.pod, other)
		if oc.Image == h.image || cc.Image == h.image {
			continue // a twin already has the image
		}
		c.setImage(chosen, h.image)
		working[h.name] = chosen
		flipped = true
		rv := s.obj.ResourceVersion
		c.anns[podstate.VersionAltKey(chosen)] = c.annotation(podstate.VersionKey(other))
		c.anns[podstate.VersionKey(chosen)] = rv
		c.anns[podstate.VersionAltKey(other)] = rv
	}
	if flipped {
		c.anns[appsv1beta1.WorkingHotUpgradeContainerAnnotation] = podstate.EncodeStringMap(working)
	}
}

// chooseTwin picks the twin of h to upgrade, and the other one:
//
//  1. the twin on the empty image, X-1 first;
//  2. else, if exactly one twin is ready and consistent, the other one (an
//     earlier upgrade of it is stuck, e.g. on an image that cannot be
//     pulled: the fix replaces it);
//  3. else the idle twin per the working annotation.
//
// ok is false when the pod lacks a twin.
func (s *setView) chooseTwin(v *podView, h hotSidecar) (chosen, other string, ok bool) {
	c1, c2 := specContainer(v.pod, h.twin1), specContainer(v.pod, h.twin2)
	if c1 == nil || c2 == nil {
		return "", "", false
	}
	switch {
	case c1.Image == h.emptyImage:
		return h.twin1, h.twin2, true
	case c2.Image == h.emptyImage:
		return h.twin2, h.twin1, true
	}
	state := v.inPlace(s.name)
	healthy := func(twin string) bool {
		return containerStatusReady(v.pod, twin) && containerComplete(v.pod, twin, state)
	}
	h1, h2 := healthy(h.twin1), healthy(h.twin2)
	switch {
	case h1 && !h2:
		return h.twin2, h.twin1, true
	case h2 && !h1:
		return h.twin1, h.twin2, true
	}
	working, idle := s.twins(v.state, h)
	return idle, working, true
}

// buildReset builds the reset of a pod whose hot-upgrade sidecars have
// finished an upgrade: each idle twin not on the empty image gets it back.
// The reset applies when
//
//  1. some hot-upgrade sidecar's idle twin is not on the empty image;
//  2. every container of the SidecarSet except the idle twins is consistent;
//  3. the pod is running and ready, or every container and native sidecar
//     except the idle twins reports ready.
//
// It does not touch the hash annotations: PodUpdate.Hash is the pod's
// recorded hash. ok is false when the pod needs no reset.
func (s *setView) buildReset(v *podView, now time.Time) (PodUpdate, bool) {
	if len(s.hot) == 0 || v.err != nil || v.inFlight {
		return PodUpdate{}, false
	}
	idle := map[string]bool{}
	var stale []hotSidecar
	for _, h := range s.hot {
		_, i := s.twins(v.state, h)
		idle[i] = true
		if c := specContainer(v.pod, i); c != nil && c.Image != h.emptyImage {
			stale = append(stale, h)
		}
	}
	if len(stale) == 0 {
		return PodUpdate{}, false
	}
	state := v.inPlace(s.name)
	for _, name := range s.names {
		if !idle[name] && !containerComplete(v.pod, name, state) {
			return PodUpdate{}, false
		}
	}
	if !podRunningAndReady(v.pod) {
		for _, name := range longRunningNames(v.pod) {
			if !idle[name] && !containerStatusReady(v.pod, name) {
				return PodUpdate{}, false
			}
		}
	}
	c := newChange(v)
	for _, h := range stale {
		working, i := s.twins(v.state, h)
		c.setImage(i, h.emptyImage)
		c.anns[podstate.VersionKey(i)] = "0"
		c.anns[podstate.VersionAltKey(working)] = "0"
	}
	recorded := v.state.Hashes[s.name].Hash
	revision := recorded
	if revision == "" {
		revision = s.hashes.Hash
	}
	c.recordImageIDs(s.name, revision, now)
	return c.podUpdate(recorded), true
}
