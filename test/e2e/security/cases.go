// Package security is the table of attempts the end-to-end security suite
// (test/e2e/security_test.go) plays on the dev cluster: each is something a
// SidecarSet author without the right permission tries, to get a sidecar
// more than the author may have (issue 22), and each is played twice, by an
// actor who lacks the permission (refused, or neutralized) and by one who
// holds it (accepted, and it works).
//
// The table is data: the suite reads it, the README prints its counts
// (Count), and the unit tests check the counts against the README and each
// fragment against the classification the injector applies
// (policy/authority).
package security

import (
	"fmt"
	"strings"

	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// Outcome is what happens to the unauthorized actor's attempt.
type Outcome string

const (
	// Refused means the API server's authoring policy or the operator's webhooks
	// refuse the write, naming the field and the missing permission.
	Refused Outcome = "refused"
	// Neutralized means the write is accepted, but the sidecar does not get the
	// forbidden part in the pod (a mount, a device, the token, an in-place
	// upgrade); the pod records why, its creator gets a warning, and the
	// SidecarSet reports it (a condition, an event).
	Neutralized Outcome = "neutralized"
	// Ignored means the attempt has no effect: the pod is injected as if it had
	// not been made.
	Ignored Outcome = "ignored"
)

// Category is the hole an attempt probes.
type Category string

const (
	// Baseline is a container setting beyond the Pod Security Standards'
	// baseline level.
	Baseline Category = "PSS baseline field"
	// PodData is a reference to what a pod holds for its owner (Secrets,
	// copies of its environment, mounts or devices).
	PodData Category = "pod data"
	// VolumeType is a volume type that needs a verb.
	VolumeType Category = "volume type"
	// Reach is namespaces beyond those where the author may create pods.
	Reach Category = "reach"
	// OtherTeams is another team's SidecarSet, reaching namespaces the author
	// may not create pods in.
	OtherTeams Category = "other teams' SidecarSets"
	// Record is the authority record only the operator writes.
	Record Category = "authority record"
	// Revision is a pinned revision.
	Revision Category = "pinned revision"
	// Whitelist is patchPodMetadata whitelist rules selected by labels.
	Whitelist Category = "whitelist"
	// Shadowing is a mount or device resolving to a volume the pod, or
	// another SidecarSet, defines.
	Shadowing Category = "volume-name shadowing"
	// Token is the pod's ServiceAccount token.
	Token Category = "ServiceAccount token"
	// Upgrade is an in-place upgrade under a narrower authority.
	Upgrade Category = "in-place upgrade"
	// OperatorLabel is the operator's pod label outside its namespace.
	OperatorLabel Category = "operator label"
)

// Actor is who makes an attempt: a user bound to the SidecarSet editor
// role and to the built-in edit role in the team namespace, holding Verbs on
// top; with OtherNamespace, bound to edit in the other namespace too. Admin
// is the cluster administrator instead.
type Actor struct {
	Verbs          authority.Verbs
	OtherNamespace bool
	Admin          bool
}

// Editor holds the editor role alone.
var Editor = Actor{}

// With returns an editor holding the verbs.
func With(v authority.Verbs) Actor { return Actor{Verbs: v} }

// Name is the actor's user name.
func (a Actor) Name() string {
	if a.Admin {
		return "cluster-admin"
	}
	parts := []string{"security-e2e"}
	if a.Verbs == authority.None {
		parts = append(parts, "editor")
	}
	parts = append(parts, a.Verbs.Names()...)
	if a.OtherNamespace {
		parts = append(parts, "other-namespace")
	}
	return strings.Join(parts, "-")
}

// String describes the actor's permissions.
func (a Actor) String() string {
	if a.Admin {
		return "cluster-admin"
	}
	parts := append([]string{"editor"}, a.Verbs.Names()...)
	if a.OtherNamespace {
		parts = append(parts, "pods in the other namespace")
	}
	return strings.Join(parts, " + ")
}

// Play says how the suite plays an attempt.
type Play string

const (
	// PlayContent means a SidecarSet with one sidecar (Sidecar merged onto a
	// plain one) and, with Volume, one volume "data" it mounts at /data,
	// reaching the namespaces Where says. The authorized version works when
	// a pod created there gets the sidecar with InPod (or Sidecar) and the
	// volume.
	PlayContent Play = "content"
	// PlayDelete is deleting the platform's SidecarSet: one the
	// administrator wrote, which reaches every namespace.
	PlayDelete Play = "delete"
	// PlayPauseInjection is pausing its injection.
	PlayPauseInjection Play = "pause-injection"
	// PlayPauseUpdates is pausing its updates.
	PlayPauseUpdates Play = "pause-updates"
	// PlayFailurePolicy is making it best-effort.
	PlayFailurePolicy Play = "failure-policy"
	// PlayPullSecrets is adding image pull secrets to it.
	PlayPullSecrets Play = "pull-secrets"
	// PlayCanary means creating a canary whose base is that SidecarSet.
	PlayCanary Play = "canary"
	// PlayRetarget means moving the administrator's SidecarSet confined to the
	// other namespace to the team namespace.
	PlayRetarget Play = "retarget"
	// PlayPrivilegedContent means changing the image of the administrator's
	// privileged SidecarSet confined to the team namespace.
	PlayPrivilegedContent Play = "privileged-content"
	// PlayRecordOnCreate is creating a SidecarSet with an authority record.
	PlayRecordOnCreate Play = "record-create"
	// PlayRecordOnUpdate is changing the record of one's own SidecarSet.
	PlayRecordOnUpdate Play = "record-update"
	// PlayRecordRemove means removing the record of one's own SidecarSet
	// (a SidecarSet without one keeps the behavior it had before the
	// operator: every verb).
	PlayRecordRemove Play = "record-remove"
	// PlayPinRevision means pinning a recorded revision of one's own SidecarSet.
	PlayPinRevision Play = "pin-revision"
	// PlayPinForeignRevision means pinning another SidecarSet's revision.
	PlayPinForeignRevision Play = "pin-foreign-revision"
	// PlayWhitelist means a SidecarSet labelled to match a whitelist rule.
	PlayWhitelist Play = "whitelist"
	// PlayShadowPodVolume means a sidecar mounting (or attaching) a volume of the
	// pod by name; with Volume, the SidecarSet declares a same-named volume
	// of its own.
	PlayShadowPodVolume Play = "shadow-pod-volume"
	// PlayShadowSidecarSetVolume means a sidecar reaching the hostPath volume
	// of an administrator's SidecarSet by name; with Volume, declaring a
	// same-named volume of its own.
	PlayShadowSidecarSetVolume Play = "shadow-sidecarset-volume"
	// PlayOfflineInject means a SidecarSet like PlayShadowPodVolume's,
	// applied to a pod manifest by the kubectl plugin's offline inject; the
	// pod is then created from the output.
	PlayOfflineInject Play = "offline-inject"
	// PlayToken means a plain sidecar in a pod that mounts its ServiceAccount
	// token.
	PlayToken Play = "token"
	// PlayInPlaceUpgrade means changing the image of an administrator's
	// SidecarSet whose sidecar reads a Secret of the pod by name.
	PlayInPlaceUpgrade Play = "in-place-upgrade"
	// PlayOperatorLabel means a pod in the team namespace carrying the
	// operator's label, selected by a SidecarSet reaching every namespace.
	PlayOperatorLabel Play = "operator-label"
)

// Where is the reach of a PlayContent SidecarSet.
type Where string

const (
	// Team is the team namespace, by name (the default).
	Team Where = ""
	// Other is the other namespace, by name.
	Other Where = "other"
	// TeamAndOther is both, by name (one In requirement).
	TeamAndOther Where = "team-and-other"
	// OtherV1alpha1 is the other namespace, as v1alpha1's spec.namespace.
	OtherV1alpha1 Where = "other-v1alpha1"
	// Every is every namespace (no namespaceSelector).
	Every Where = "every"
	// Labelled is the namespaces a label other than the name picks (the team
	// namespace carries it).
	Labelled Where = "labelled"
)

// Attempt is one attempt, played by an unauthorized and an authorized
// actor.
type Attempt struct {
	// ID names the attempt's objects: SidecarSets sec-<ID>..., containers
	// and pod labels.
	ID string
	// Name says what the unauthorized actor tries.
	Name     string
	Category Category
	Play     Play
	// Unauthorized lacks what the attempt needs; Authorized holds it.
	Unauthorized, Authorized Actor
	Outcome                  Outcome
	// Message is found in the refusal, or for a neutralized attempt in the
	// pod's record and warning (or, for an in-place upgrade, the
	// SidecarSet's Progressing reason). $TEAM and $OTHER stand for the two
	// namespaces' names.
	Message string
	// Works says what the authorized version does.
	Works string

	// Sidecar is YAML merged onto the attempt's sidecar (a
	// SidecarContainer).
	Sidecar string
	// Volume is the YAML source of the SidecarSet's volume VolumeName.
	Volume string
	// VolumeName names that volume; empty: "data", mounted at /data.
	VolumeName string
	// AuthorizedVolume, if set, is the source of the authorized actor's
	// volume VolumeName instead of Volume.
	AuthorizedVolume string
	// Pod is YAML merged onto the pod the suite creates (the API server
	// needs some fields to accept the sidecar).
	Pod string
	// InPod is YAML the injected sidecar must contain; empty: Sidecar.
	InPod string
	// Forbidden, for a neutralized attempt, names the pod's volume the
	// unauthorized actor's sidecar must not mount or attach.
	Forbidden string
	// Where is a PlayContent SidecarSet's reach.
	Where Where
}

// SidecarSet names the unauthorized actor's SidecarSet.
func (a *Attempt) SidecarSet() string { return "sec-" + a.ID }

// AuthorizedSidecarSet names the authorized actor's SidecarSet.
func (a *Attempt) AuthorizedSidecarSet() string { return "sec-" + a.ID + "-ok" }

// AdminSidecarSet names the administrator's SidecarSet the attempt is made
// on or next to.
func (a *Attempt) AdminSidecarSet() string { return "sec-" + a.ID + "-admin" }

// Messages of the authoring policy (policy/authoring) and of the webhooks.
func privileged(path string) string {
	return path + ": injecting privileged settings requires permission to inject-privileged sidecarsets.apps.kruise.io"
}

func secrets(path string) string {
	return path + ": injecting Secrets, or the pod's own environment and volumes, requires permission to inject-secrets sidecarsets.apps.kruise.io"
}

func allNamespaces(path, verb, what string) string {
	return fmt.Sprintf("%s: %s a SidecarSet that injects into %s requires permission to inject-all-namespaces sidecarsets.apps.kruise.io", path, verb, what)
}

func notGiven(what, verb string) string {
	return fmt.Sprintf("was not given %s: it needs %s", what, verb)
}

const (
	container = "spec.containers[0]"
	volume    = "spec.volumes[0]"
)

// Pods whose volumes a sidecar reaches by name: a Secret volume, a block
// claim.
const (
	podSecret = `{spec: {volumes: [{name: creds, secret: {secretName: creds}}], ` +
		`containers: [{name: main, image: "busybox:1.36", volumeMounts: [{name: creds, mountPath: /creds}]}]}}`
	podBlock = `{spec: {volumes: [{name: block, persistentVolumeClaim: {claimName: block}}], ` +
		`containers: [{name: main, image: "busybox:1.36", volumeDevices: [{name: block, devicePath: /dev/block}]}]}}`
	podClaim = `{spec: {volumes: [{name: claim, persistentVolumeClaim: {claimName: claim}}], ` +
		`containers: [{name: main, image: "busybox:1.36", volumeMounts: [{name: claim, mountPath: /claim}]}]}}`
	podHostPath = `{spec: {volumes: [{name: host, hostPath: {path: /var/log}}], ` +
		`containers: [{name: main, image: "busybox:1.36", volumeMounts: [{name: host, mountPath: /host}]}]}}`
	// hostLogs is the hostPath volume of the administrator's SidecarSet.
	hostLogs = `{hostPath: {path: /var/log}}`
)

var (
	privilegedOnly = With(authority.Privileged)
	secretsOnly    = With(authority.Secrets)
	allNamespaces1 = With(authority.AllNamespaces)
	privAndSecrets = With(authority.Privileged | authority.Secrets)
	otherNamespace = Actor{OtherNamespace: true}
)

// baseline is a sidecar setting beyond the baseline level.
func baseline(id, name, sidecar, path string, unauthorized Actor) Attempt {
	return Attempt{ID: id, Name: name, Category: Baseline, Play: PlayContent,
		Unauthorized: unauthorized, Authorized: privilegedOnly, Outcome: Refused,
		Message: privileged(container + path), Works: "the sidecar runs with it", Sidecar: sidecar}
}

// podData is a sidecar setting reaching what the pod holds.
func podData(id, name, sidecar, path string, unauthorized Actor) Attempt {
	return Attempt{ID: id, Name: name, Category: PodData, Play: PlayContent,
		Unauthorized: unauthorized, Authorized: secretsOnly, Outcome: Refused,
		Message: secrets(container + path), Works: "the sidecar gets it", Sidecar: sidecar}
}

// volumeType is a volume of the SidecarSet needing inject-secrets.
func volumeType(kind, source string, unauthorized Actor) Attempt {
	return Attempt{ID: "volume-" + strings.ToLower(kind), Name: "a volume of type " + kind, Category: VolumeType, Play: PlayContent,
		Unauthorized: unauthorized, Authorized: secretsOnly, Outcome: Refused,
		Message: secrets(volume + "." + kind), Works: "the sidecar mounts it", Volume: source}
}

// Attempts is the table.
var Attempts = []Attempt{
	// Every baseline check a sidecar can fail.
	baseline("privileged", "a privileged sidecar", `{securityContext: {privileged: true}}`,
		".securityContext.privileged", Editor),
	baseline("capabilities", "a capability beyond baseline's (NET_ADMIN)", `{securityContext: {capabilities: {add: [NET_ADMIN]}}}`,
		".securityContext.capabilities.add", secretsOnly),
	baseline("host-port", "a host port", `{ports: [{containerPort: 9100, hostPort: 9100}]}`,
		".ports[0].hostPort", allNamespaces1),
	baseline("selinux-type", "an SELinux type outside baseline's (spc_t)", `{securityContext: {seLinuxOptions: {type: spc_t}}}`,
		".securityContext.seLinuxOptions", Editor),
	baseline("selinux-user", "an SELinux user", `{securityContext: {seLinuxOptions: {user: system_u}}}`,
		".securityContext.seLinuxOptions", Editor),
	baseline("seccomp-unconfined", "an Unconfined seccomp profile", `{securityContext: {seccompProfile: {type: Unconfined}}}`,
		".securityContext.seccompProfile.type", Editor),
	baseline("seccomp-localhost", "a Localhost seccomp profile", `{securityContext: {seccompProfile: {type: Localhost, localhostProfile: open.json}}}`,
		".securityContext.seccompProfile.type", secretsOnly),
	baseline("apparmor-unconfined", "an Unconfined AppArmor profile", `{securityContext: {appArmorProfile: {type: Unconfined}}}`,
		".securityContext.appArmorProfile.type", Editor),
	baseline("apparmor-localhost", "a Localhost AppArmor profile", `{securityContext: {appArmorProfile: {type: Localhost, localhostProfile: open}}}`,
		".securityContext.appArmorProfile.type", Editor),
	func() Attempt {
		a := baseline("proc-unmasked", "an unmasked /proc", `{securityContext: {procMount: Unmasked}}`,
			".securityContext.procMount", Editor)
		a.Pod = `{spec: {hostUsers: false}}`
		return a
	}(),
	func() Attempt {
		a := baseline("host-process", "a Windows hostProcess container", `{securityContext: {windowsOptions: {hostProcess: true}}}`,
			".securityContext.windowsOptions.hostProcess", Editor)
		a.Pod = `{spec: {hostNetwork: true, securityContext: {windowsOptions: {hostProcess: true}}}}`
		return a
	}(),
	baseline("liveness-host", "a liveness probe on another host (httpGet.host)", `{livenessProbe: {httpGet: {host: 10.0.0.1, port: 80}}}`,
		".livenessProbe.httpGet.host", Editor),
	baseline("readiness-host", "a readiness probe on another host (tcpSocket.host)", `{readinessProbe: {tcpSocket: {host: metadata.internal, port: 80}}}`,
		".readinessProbe.tcpSocket.host", Editor),
	baseline("startup-host", "a startup probe on another host (httpGet.host)", `{startupProbe: {httpGet: {host: 10.0.0.1, port: 8080}}}`,
		".startupProbe.httpGet.host", Editor),
	baseline("prestop-host", "a preStop hook on another host (httpGet.host)", `{lifecycle: {preStop: {httpGet: {host: 10.0.0.1, port: 80}}}}`,
		".lifecycle.preStop.httpGet.host", Editor),

	// What the pod holds for its owner, reached from the sidecar's own
	// definition.
	podData("env-secret", "an env secretKeyRef", `{env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: api, key: token}}}]}`,
		".env[0].valueFrom.secretKeyRef", privilegedOnly),
	podData("envfrom-secret", "an envFrom secretRef", `{envFrom: [{secretRef: {name: api}}]}`,
		".envFrom[0].secretRef", Editor),
	func() Attempt {
		a := podData("transfer-env", "transferEnv copying the pod's env", `{transferEnv: [{sourceContainerName: main, envName: DB_PASSWORD}]}`,
			".transferEnv", Editor)
		a.Pod = `{spec: {containers: [{name: main, image: "busybox:1.36", env: [{name: DB_PASSWORD, value: s3cr3t}]}]}}`
		a.InPod = `{env: [{name: DB_PASSWORD, value: s3cr3t}]}`
		return a
	}(),
	func() Attempt {
		a := podData("share-volumes", "shareVolumePolicy copying the pod's mounts", `{shareVolumePolicy: {type: enabled}}`,
			".shareVolumePolicy.type", allNamespaces1)
		a.Pod = `{spec: {volumes: [{name: app-data, emptyDir: {}}], containers: [{name: main, image: "busybox:1.36", volumeMounts: [{name: app-data, mountPath: /app-data}]}]}}`
		a.InPod = `{volumeMounts: [{name: app-data, mountPath: /app-data}]}`
		return a
	}(),
	func() Attempt {
		a := podData("share-devices", "shareVolumeDevicePolicy copying the pod's devices", `{shareVolumeDevicePolicy: {type: enabled}}`,
			".shareVolumeDevicePolicy.type", Editor)
		a.Pod = `{spec: {volumes: [{name: app-block, persistentVolumeClaim: {claimName: app-block}}], containers: [{name: main, image: "busybox:1.36", volumeDevices: [{name: app-block, devicePath: /dev/app-block}]}]}}`
		a.InPod = `{volumeDevices: [{name: app-block, devicePath: /dev/app-block}]}`
		return a
	}(),
	podData("gmsa", "a Windows gMSA credential spec", `{securityContext: {windowsOptions: {gmsaCredentialSpecName: webapp}}}`,
		".securityContext.windowsOptions.gmsaCredentialSpec", Editor),

	// Every volume type that needs a verb.
	{ID: "volume-hostpath", Name: "a hostPath volume", Category: VolumeType, Play: PlayContent,
		Unauthorized: secretsOnly, Authorized: privilegedOnly, Outcome: Refused,
		Message: privileged(volume + ".hostPath"), Works: "the sidecar mounts it", Volume: `{hostPath: {path: /var/log}}`},
	volumeType("secret", `{secret: {secretName: tls}}`, privilegedOnly),
	{ID: "volume-projected-secret", Name: "a projected volume with a Secret", Category: VolumeType, Play: PlayContent,
		Unauthorized: Editor, Authorized: secretsOnly, Outcome: Refused,
		Message: secrets(volume + ".projected"), Works: "the sidecar mounts it",
		Volume: `{projected: {sources: [{configMap: {name: ca}}, {secret: {name: tls}}]}}`},
	{ID: "volume-projected-token", Name: "a projected ServiceAccount token for another audience", Category: VolumeType, Play: PlayContent,
		Unauthorized: Editor, Authorized: secretsOnly, Outcome: Refused,
		Message: secrets(volume + ".projected"), Works: "the sidecar mounts it",
		Volume: `{projected: {sources: [{serviceAccountToken: {path: token, audience: vault}}]}}`},
	volumeType("persistentVolumeClaim", `{persistentVolumeClaim: {claimName: data}}`, Editor),
	volumeType("ephemeral", `{ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}`, Editor),
	volumeType("csi", `{csi: {driver: secrets-store.csi.k8s.io}}`, privilegedOnly),
	volumeType("nfs", `{nfs: {server: nfs.example.com, path: /exports}}`, Editor),
	volumeType("iscsi", `{iscsi: {targetPortal: "10.0.0.2:3260", iqn: "iqn.2001-04.com.example:storage", lun: 0}}`, Editor),
	volumeType("rbd", `{rbd: {monitors: ["10.0.0.3:6789"], image: data}}`, Editor),
	volumeType("cephfs", `{cephfs: {monitors: ["10.0.0.3:6789"]}}`, allNamespaces1),
	volumeType("glusterfs", `{glusterfs: {endpoints: gluster, path: data}}`, Editor),
	volumeType("fc", `{fc: {wwids: ["3600508b400105e210000900000490000"]}}`, Editor),
	volumeType("azureFile", `{azureFile: {secretName: azure, shareName: data}}`, Editor),
	volumeType("azureDisk", `{azureDisk: {diskName: data, diskURI: "https://example.blob.core.windows.net/vhds/data.vhd"}}`, Editor),
	volumeType("awsElasticBlockStore", `{awsElasticBlockStore: {volumeID: vol-0123}}`, Editor),
	volumeType("gcePersistentDisk", `{gcePersistentDisk: {pdName: data}}`, Editor),
	volumeType("cinder", `{cinder: {volumeID: "0123"}}`, Editor),
	volumeType("portworxVolume", `{portworxVolume: {volumeID: "0123"}}`, Editor),
	volumeType("scaleIO", `{scaleIO: {gateway: "https://scaleio.example.com", system: sys, secretRef: {name: scaleio}, volumeName: data}}`, Editor),
	volumeType("storageos", `{storageos: {volumeName: data}}`, Editor),
	volumeType("vsphereVolume", `{vsphereVolume: {volumePath: "[datastore] data.vmdk"}}`, Editor),
	volumeType("quobyte", `{quobyte: {registry: "quobyte.example.com:7861", volume: data}}`, Editor),
	volumeType("photonPersistentDisk", `{photonPersistentDisk: {pdID: "0123"}}`, Editor),
	volumeType("flocker", `{flocker: {datasetName: data}}`, Editor),
	{ID: "volume-flexvolume", Name: "a flexVolume volume, with inject-privileged alone", Category: VolumeType, Play: PlayContent,
		Unauthorized: privilegedOnly, Authorized: privAndSecrets, Outcome: Refused,
		Message: secrets(volume + ".flexVolume"), Works: "the sidecar mounts it", Volume: `{flexVolume: {driver: example.com/nfs}}`},
	{ID: "volume-gitrepo", Name: "a gitRepo volume, with inject-secrets alone", Category: VolumeType, Play: PlayContent,
		Unauthorized: secretsOnly, Authorized: privAndSecrets, Outcome: Refused,
		Message: privileged(volume + ".gitRepo"), Works: "the sidecar mounts it", Volume: `{gitRepo: {repository: "https://example.com/repo.git"}}`},

	// Where a SidecarSet injects.
	{ID: "every-namespace", Name: "a SidecarSet without a namespaceSelector", Category: Reach, Play: PlayContent, Where: Every,
		Unauthorized: privilegedOnly, Authorized: allNamespaces1, Outcome: Refused,
		Message: allNamespaces("spec.namespaceSelector", "creating", "every namespace"),
		Works:   "pods of the team and the other namespace get the sidecar"},
	{ID: "other-namespace", Name: "a namespaceSelector naming a namespace where the author may not create pods", Category: Reach,
		Play: PlayContent, Where: Other, Unauthorized: Editor, Authorized: otherNamespace, Outcome: Refused,
		Message: `spec.namespaceSelector: creating a SidecarSet that injects into the pods of namespace "$OTHER" (v1alpha1 spec.namespace) requires permission to create pods in namespace "$OTHER"`,
		Works:   "pods of the other namespace get the sidecar"},
	{ID: "v1alpha1-namespace", Name: "a v1alpha1 spec.namespace naming a namespace where the author may not create pods", Category: Reach,
		Play: PlayContent, Where: OtherV1alpha1, Unauthorized: Editor, Authorized: otherNamespace, Outcome: Refused,
		Message: `spec.namespaceSelector: creating a SidecarSet that injects into the pods of namespace "$OTHER" (v1alpha1 spec.namespace) requires permission to create pods in namespace "$OTHER"`,
		Works:   "pods of the other namespace get the sidecar"},
	{ID: "two-namespaces", Name: "a namespaceSelector naming the team namespace and one where the author may not create pods", Category: Reach,
		Play: PlayContent, Where: TeamAndOther, Unauthorized: Editor, Authorized: otherNamespace, Outcome: Refused,
		Message: `spec.namespaceSelector: creating a SidecarSet that injects into the pods of namespaces "$TEAM", "$OTHER" requires permission to create pods in each of them`,
		Works:   "pods of both namespaces get the sidecar"},
	{ID: "namespace-labels", Name: "a namespaceSelector on a label other than the name", Category: Reach,
		Play: PlayContent, Where: Labelled, Unauthorized: secretsOnly, Authorized: allNamespaces1, Outcome: Refused,
		Message: allNamespaces("spec.namespaceSelector", "creating", "the namespaces a namespaceSelector picks"),
		Works:   "pods of the labelled namespace get the sidecar"},

	// Another team's SidecarSet, which reaches every namespace.
	{ID: "delete", Name: "deleting the platform's SidecarSet", Category: OtherTeams, Play: PlayDelete,
		Unauthorized: Editor, Authorized: allNamespaces1, Outcome: Refused,
		Message: allNamespaces("metadata.name", "deleting", "every namespace"), Works: "it is deleted"},
	{ID: "pause-injection", Name: "pausing the platform SidecarSet's injection", Category: OtherTeams, Play: PlayPauseInjection,
		Unauthorized: secretsOnly, Authorized: allNamespaces1, Outcome: Refused,
		Message: allNamespaces("spec.namespaceSelector", "changing", "every namespace"), Works: "new pods are not injected"},
	{ID: "pause-updates", Name: "pausing the platform SidecarSet's updates", Category: OtherTeams, Play: PlayPauseUpdates,
		Unauthorized: Editor, Authorized: allNamespaces1, Outcome: Refused,
		Message: allNamespaces("spec.namespaceSelector", "changing", "every namespace"), Works: "a new image waits: Progressing is Paused"},
	{ID: "failure-policy", Name: "making the platform's required SidecarSet best-effort (failure-policy Ignore)", Category: OtherTeams,
		Play: PlayFailurePolicy, Unauthorized: privilegedOnly, Authorized: allNamespaces1, Outcome: Refused,
		Message: allNamespaces("spec.namespaceSelector", "changing", "every namespace"), Works: "the failure policy is Ignore"},
	{ID: "pull-secrets", Name: "adding imagePullSecrets to the platform's SidecarSet", Category: OtherTeams, Play: PlayPullSecrets,
		Unauthorized: Editor, Authorized: allNamespaces1, Outcome: Refused,
		Message: allNamespaces("spec.namespaceSelector", "changing", "every namespace"), Works: "new pods get the image pull secret"},
	{ID: "canary", Name: "a canary whose base is the platform's SidecarSet", Category: OtherTeams, Play: PlayCanary,
		Unauthorized: Editor, Authorized: allNamespaces1, Outcome: Refused,
		Message: `a canary of SidecarSet "sec-canary-admin" replaces its sidecars in the pods it selects, which needs the authority over "sec-canary-admin": permission to inject-all-namespaces sidecarsets.apps.kruise.io "sec-canary-admin"`,
		Works:   "new pods get the canary's sidecar instead of the base's"},
	{ID: "retarget", Name: "retargeting the administrator's SidecarSet of the other namespace at the team namespace", Category: OtherTeams,
		Play: PlayRetarget, Unauthorized: Editor, Authorized: otherNamespace, Outcome: Refused,
		Message: `spec.namespaceSelector: changing a SidecarSet that injects into the pods of namespaces "$TEAM", "$OTHER" requires permission to create pods in each of them`,
		Works:   "pods of the team namespace get the sidecar"},
	{ID: "privileged-content", Name: "a new image for the administrator's privileged SidecarSet of the team namespace", Category: OtherTeams,
		Play: PlayPrivilegedContent, Unauthorized: Editor, Authorized: privilegedOnly, Outcome: Refused,
		Message: privileged(container + ".securityContext.privileged"), Works: "new pods get the new image, privileged"},

	// The record of the author's verbs.
	{ID: "record-create", Name: "creating a SidecarSet carrying an authority record", Category: Record, Play: PlayRecordOnCreate,
		Unauthorized: Editor, Authorized: secretsOnly, Outcome: Refused,
		Message: "metadata.annotations[sidecarset-operator.dev/authority]: a new SidecarSet may not carry it",
		Works:   "the operator records the author's verbs (inject-secrets)"},
	{ID: "record-update", Name: "changing the authority record of one's own SidecarSet", Category: Record, Play: PlayRecordOnUpdate,
		Unauthorized: Editor, Authorized: secretsOnly, Outcome: Refused,
		Message: "metadata.annotations[sidecarset-operator.dev/authority]: the request changes it",
		Works:   "a new image by an author with inject-secrets records inject-secrets"},

	{ID: "record-remove", Name: "removing the authority record of one's own SidecarSet", Category: Record, Play: PlayRecordRemove,
		Unauthorized: Editor, Authorized: secretsOnly, Outcome: Ignored,
		Works: "a new image by an author with inject-secrets records inject-secrets"},

	// Pinned revisions.
	{ID: "pin-revision", Name: "pinning a recorded revision, with inject-privileged alone", Category: Revision, Play: PlayPinRevision,
		Unauthorized: privilegedOnly, Authorized: privAndSecrets, Outcome: Refused,
		Message: "spec.injectionStrategy.revision: injecting a recorded revision, whose content this policy cannot check, requires permission to inject-privileged and inject-secrets",
		Works:   "new pods get the pinned revision's image"},
	{ID: "pin-foreign", Name: "pinning another SidecarSet's ControllerRevision by revisionName", Category: Revision, Play: PlayPinForeignRevision,
		Unauthorized: privAndSecrets, Authorized: privAndSecrets, Outcome: Refused,
		Message: `belongs to SidecarSet "sec-pin-foreign-admin", not "sec-pin-foreign"`,
		Works:   "pinning its own revision: new pods get its image"},

	// The whitelist.
	{ID: "whitelist", Name: "labels matching a whitelist rule, to patch its annotation keys", Category: Whitelist, Play: PlayWhitelist,
		Unauthorized: Editor, Authorized: privilegedOnly, Outcome: Refused,
		Message: "select its labels but grant nothing to a SidecarSet whose author does not hold the inject-privileged verb",
		Works:   "new pods get the annotation"},

	// What a sidecar reaches in the pod by name.
	{ID: "shadow-secret", Name: "an emptyDir named as the pod's Secret volume, mounted", Category: Shadowing, Play: PlayShadowPodVolume,
		Unauthorized: Editor, Authorized: secretsOnly, Outcome: Neutralized,
		Message: notGiven(`volume "creds" (secret)`, "inject-secrets"), Works: "the sidecar mounts the pod's Secret",
		Sidecar: `{volumeMounts: [{name: creds, mountPath: /creds}]}`, Volume: `{emptyDir: {}}`, VolumeName: "creds",
		Pod: podSecret, Forbidden: "creds"},
	{ID: "shadow-secret-hot", Name: "a hot-upgrade sidecar mounting an emptyDir named as the pod's Secret volume", Category: Shadowing,
		Play: PlayShadowPodVolume, Unauthorized: Editor, Authorized: secretsOnly, Outcome: Neutralized,
		Message: notGiven(`volume "creds" (secret)`, "inject-secrets"), Works: "both twins mount the pod's Secret",
		Sidecar: `{upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: "busybox:1.35"}, volumeMounts: [{name: creds, mountPath: /creds}]}`,
		InPod:   `{volumeMounts: [{name: creds, mountPath: /creds}]}`, Volume: `{emptyDir: {}}`, VolumeName: "creds", Pod: podSecret, Forbidden: "creds"},
	{ID: "shadow-secret-offline", Name: "an emptyDir named as the pod's Secret volume, injected offline by the kubectl plugin", Category: Shadowing,
		Play: PlayOfflineInject, Unauthorized: Editor, Authorized: secretsOnly, Outcome: Neutralized,
		Message: notGiven(`volume "creds" (secret)`, "inject-secrets"), Works: "the sidecar mounts the pod's Secret",
		Sidecar: `{volumeMounts: [{name: creds, mountPath: /creds}]}`, Volume: `{emptyDir: {}}`, VolumeName: "creds",
		Pod: podSecret, Forbidden: "creds"},
	{ID: "shadow-claim", Name: "an emptyDir named as the pod's claim, mounted", Category: Shadowing, Play: PlayShadowPodVolume,
		Unauthorized: Editor, Authorized: secretsOnly, Outcome: Neutralized,
		Message: notGiven(`volume "claim" (persistentVolumeClaim)`, "inject-secrets"), Works: "the sidecar mounts the pod's claim",
		Sidecar: `{volumeMounts: [{name: claim, mountPath: /claim}]}`, Volume: `{emptyDir: {}}`, VolumeName: "claim",
		Pod: podClaim, Forbidden: "claim"},
	{ID: "shadow-pod-hostpath", Name: "an emptyDir named as the pod's hostPath volume, mounted", Category: Shadowing, Play: PlayShadowPodVolume,
		Unauthorized: secretsOnly, Authorized: privilegedOnly, Outcome: Neutralized,
		Message: notGiven(`volume "host" (hostPath)`, "inject-privileged"), Works: "the sidecar mounts the pod's hostPath",
		Sidecar: `{volumeMounts: [{name: host, mountPath: /host}]}`, Volume: `{emptyDir: {}}`, VolumeName: "host",
		Pod: podHostPath, Forbidden: "host"},
	{ID: "mount-secret", Name: "a mount of the pod's Secret volume by name, without declaring it", Category: Shadowing, Play: PlayShadowPodVolume,
		Unauthorized: privilegedOnly, Authorized: secretsOnly, Outcome: Refused,
		Message: `volumeMount "creds" of container "mount-secret" names no volume of spec.volumes`,
		Works:   "declaring a volume of its name, the sidecar mounts the pod's Secret",
		Sidecar: `{volumeMounts: [{name: creds, mountPath: /creds}]}`, VolumeName: "creds", AuthorizedVolume: `{emptyDir: {}}`, Pod: podSecret},
	{ID: "device-claim", Name: "an emptyDir named as the pod's block claim, attached as a device", Category: Shadowing, Play: PlayShadowPodVolume,
		Unauthorized: Editor, Authorized: secretsOnly, Outcome: Refused,
		Message: `volumeDevice "block" of container "device-claim" names a volume that is neither a persistentVolumeClaim nor an ephemeral volume`,
		Works:   "declaring the claim, the sidecar gets the device",
		Sidecar: `{volumeDevices: [{name: block, devicePath: /dev/sidecar-block}]}`, Volume: `{emptyDir: {}}`, VolumeName: "block",
		AuthorizedVolume: `{persistentVolumeClaim: {claimName: block}}`, Pod: podBlock},
	{ID: "shadow-hostpath", Name: "an emptyDir named as another SidecarSet's hostPath volume", Category: Shadowing, Play: PlayShadowSidecarSetVolume,
		Unauthorized: Editor, Authorized: privilegedOnly, Outcome: Refused,
		Message: `volume "hostlogs" is also declared by SidecarSet "sec-shadow-hostpath-admin", which can select the same pods, with a different definition`,
		Works:   "declaring the same hostPath, the sidecar mounts it",
		Sidecar: `{volumeMounts: [{name: hostlogs, mountPath: /host-logs}]}`, Volume: `{emptyDir: {}}`, VolumeName: "hostlogs",
		AuthorizedVolume: hostLogs},
	{ID: "mount-hostpath", Name: "a mount of another SidecarSet's hostPath volume by name, without declaring it", Category: Shadowing,
		Play: PlayShadowSidecarSetVolume, Unauthorized: secretsOnly, Authorized: privilegedOnly, Outcome: Refused,
		Message: `volumeMount "hostlogs" of container "mount-hostpath" names no volume of spec.volumes`,
		Works:   "declaring the same hostPath, the sidecar mounts it",
		Sidecar: `{volumeMounts: [{name: hostlogs, mountPath: /host-logs}]}`, VolumeName: "hostlogs", AuthorizedVolume: hostLogs},
	{ID: "token", Name: "a plain sidecar in a pod that mounts its ServiceAccount token", Category: Token, Play: PlayToken,
		Unauthorized: Editor, Authorized: secretsOnly, Outcome: Neutralized,
		Message: "was not given the pod's ServiceAccount token", Works: "the sidecar mounts the token"},
	{ID: "token-offline", Name: "a plain sidecar injected offline by the kubectl plugin into a pod that mounts its ServiceAccount token",
		Category: Token, Play: PlayOfflineInject, Unauthorized: Editor, Authorized: secretsOnly, Outcome: Neutralized,
		Message: "was not given the pod's ServiceAccount token", Works: "the sidecar mounts the token"},
	{ID: "inplace-upgrade", Name: "a new image for the administrator's SidecarSet whose sidecar reads the pod's Secret", Category: Upgrade,
		Play: PlayInPlaceUpgrade, Unauthorized: Editor, Authorized: secretsOnly, Outcome: Neutralized,
		Message: "BlockedPods", Works: "the pod is upgraded in place",
		Sidecar: `{volumeMounts: [{name: creds, mountPath: /creds}]}`, Volume: `{emptyDir: {}}`, VolumeName: "creds", Pod: podSecret},
	{ID: "operator-label", Name: "the operator's label on a pod of the team namespace, to escape a required SidecarSet", Category: OperatorLabel,
		Play: PlayOperatorLabel, Unauthorized: Editor, Authorized: Actor{Admin: true}, Outcome: Ignored,
		Works: "in the operator's namespace, the label exempts the pod"},
}

// Counts are the table's counts, as the README prints them.
type Counts struct {
	Attempts, Refused, Neutralized, Ignored, AcceptedWhenAuthorized int
}

// Count counts the attempts by outcome. Every attempt has an authorized
// version, which the suite plays and expects to be accepted.
func Count(attempts []Attempt) Counts {
	var c Counts
	for _, a := range attempts {
		c.Attempts++
		switch a.Outcome {
		case Refused:
			c.Refused++
		case Neutralized:
			c.Neutralized++
		case Ignored:
			c.Ignored++
		}
		if a.Works != "" {
			c.AcceptedWhenAuthorized++
		}
	}
	return c
}

// String is the README's line.
func (c Counts) String() string {
	s := fmt.Sprintf("%d attempts: %d refused, %d neutralized", c.Attempts, c.Refused, c.Neutralized)
	if c.Ignored > 0 {
		s += fmt.Sprintf(", %d ignored", c.Ignored)
	}
	return s + fmt.Sprintf("; %d accepted when authorized", c.AcceptedWhenAuthorized)
}
