package policy

import (
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// Snapshot is the whitelist in force, immutable. Requests read one
// snapshot and use it throughout.
type Snapshot struct {
	// Whitelist is the last whitelist that parsed; nil if the ConfigMap or
	// its key is missing, or if no version of it ever parsed.
	Whitelist *Whitelist
	// Present is whether the ConfigMap has the whitelist key.
	Present bool
	// Version is the resourceVersion of the ConfigMap the snapshot comes
	// from: the one Whitelist was parsed from.
	Version string
	// LoadError is why the latest update was rejected, nil when it was
	// applied. The rest of the snapshot then still describes the last
	// good version.
	LoadError error
}

// Check returns the field errors of a SidecarSet's patchPodMetadata under
// this snapshot (see Keys).
func (s *Snapshot) Check(defaultsAllowed bool, ss *appsv1beta1.SidecarSet) field.ErrorList {
	if len(ss.Spec.PatchPodMetadata) == 0 {
		return nil
	}
	return s.Keys(defaultsAllowed, ss).fieldErrors(ss.Spec.PatchPodMetadata)
}

// Keys decides which patchPodMetadata annotation keys a SidecarSet may
// patch under this snapshot: the rules without a selector apply to it, and
// the rules whose selector matches its labels when its authority holds
// inject-privileged (any author sets labels on their own SidecarSet: a
// label alone grants nothing; see whitelistKeys). A nil snapshot is an empty
// one (no ConfigMap). A whitelist that is present but never parsed allows
// no key, whatever the feature gate: OpenKruise also rejects requests when
// the whitelist is malformed.
func (s *Snapshot) Keys(defaultsAllowed bool, ss *appsv1beta1.SidecarSet) Keys {
	labelsGrant := authority.Of(ss).Has(authority.Privileged)
	if s == nil {
		return whitelistKeys(nil, defaultsAllowed, ss.Labels, labelsGrant)
	}
	if s.Present && s.Whitelist == nil && s.LoadError != nil {
		return Keys{none: fmt.Sprintf("SidecarSet patch metadata whitelist is invalid: %v", s.LoadError)}
	}
	return whitelistKeys(s.Whitelist, defaultsAllowed, ss.Labels, labelsGrant)
}

// Store holds the current Snapshot of the kruise-configuration ConfigMap,
// replaced atomically as the ConfigMap changes. The zero Store holds an
// empty snapshot: no whitelist. It is safe for concurrent use; readers
// never wait.
type Store struct {
	mu      sync.Mutex // serializes Update and Delete
	current atomic.Pointer[Snapshot]
}

// NewStore returns a Store without whitelist, as if the ConfigMap were
// missing (the zero Store is the same).
func NewStore() *Store {
	return &Store{}
}

// Current returns the snapshot in force. A nil Store holds no whitelist.
func (s *Store) Current() *Snapshot {
	if s == nil {
		return &Snapshot{}
	}
	if snap := s.current.Load(); snap != nil {
		return snap
	}
	return &Snapshot{}
}

// Loaded reports whether the ConfigMap was read at least once (Update or
// Delete was called): until then the empty snapshot says nothing about the
// cluster, and a writer of pod metadata should wait rather than deny.
func (s *Store) Loaded() bool {
	return s != nil && s.current.Load() != nil
}

// Update applies a new version of the ConfigMap (nil means deleted). A
// whitelist that does not parse is not applied: the previous whitelist
// stays in force, the snapshot records the error in LoadError, and Update
// returns it for the caller to report.
func (s *Store) Update(cm *corev1.ConfigMap) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cm == nil {
		s.current.Store(&Snapshot{})
		return nil
	}
	data, ok := cm.Data[appsv1beta1.PatchPodMetadataWhiteListKey]
	if !ok {
		s.current.Store(&Snapshot{Version: cm.ResourceVersion})
		return nil
	}
	w, err := ParseWhitelist(data)
	if err != nil {
		err = fmt.Errorf("ConfigMap %s/%s resourceVersion %s: %w", cm.Namespace, cm.Name, cm.ResourceVersion, err)
		next := *s.Current()
		if next.Whitelist == nil {
			next.Present, next.Version = true, cm.ResourceVersion
		}
		next.LoadError = err
		s.current.Store(&next)
		return err
	}
	s.current.Store(&Snapshot{Whitelist: w, Present: true, Version: cm.ResourceVersion})
	return nil
}

// Delete records that the ConfigMap is gone.
func (s *Store) Delete() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current.Store(&Snapshot{})
}
