package authoring

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// grants is a fake authorizer: it allows the checks it lists, written
// "<verb> <group>/<resource> <namespace>/<name>", and records every check.
type grants struct {
	allowed []string
	all     bool
	mu      sync.Mutex
	asked   []string
}

func (g *grants) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	resource := a.GetResource()
	if sub := a.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	key := fmt.Sprintf("%s %s/%s %s/%s", a.GetVerb(), a.GetAPIGroup(), resource, a.GetNamespace(), a.GetName())
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, key)
	if g.all || slices.Contains(g.allowed, key) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// The grants the cases use.
const (
	allNamespaces = "inject-all-namespaces apps.kruise.io/sidecarsets /agent"
	privileged    = "inject-privileged apps.kruise.io/sidecarsets /agent"
	secrets       = "inject-secrets apps.kruise.io/sidecarsets /agent"
	podsInTeamA   = "create /pods team-a/"
	pauseRollouts = "pause-rollouts apps.kruise.io/sidecarsets /agent"
	rollback      = "rollback apps.kruise.io/sidecarsets /agent"
)

// sidecarSet builds a SidecarSet named agent from the YAML of its v1alpha1
// spec, as the policy sees it: converted to v1beta1, as the API server does.
func sidecarSet(t *testing.T, spec string) *unstructured.Unstructured {
	t.Helper()
	written := &appsv1alpha1.SidecarSet{}
	if err := yaml.UnmarshalStrict([]byte("spec:\n"+indent(spec)), written); err != nil {
		t.Fatalf("spec: %v", err)
	}
	written.Name = "agent"
	hub := &appsv1beta1.SidecarSet{}
	if err := written.ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	hub.APIVersion, hub.Kind = appsv1beta1.GroupVersion.String(), "SidecarSet"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(hub)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// indent indents each line of a YAML block by two spaces.
func indent(block string) string {
	lines := strings.Split(strings.Trim(block, "\n"), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

const plain = `
selector: {matchLabels: {app: web}}
containers:
- name: agent
  image: agent:1
`

func load(t *testing.T) *Policy {
	t.Helper()
	p, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

func TestLoad_CompilesWithEveryLibraryFromTheMinimumVersion(t *testing.T) {
	t.Parallel()
	vap, _, err := Manifests()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{MinKubernetesVersion.String(), environment.DefaultCompatibilityVersion().String()} {
		if _, err := Compile(vap, mustVersion(t, v)); err != nil {
			t.Errorf("the policy does not compile with the CEL library of Kubernetes %s: %v", v, err)
		}
	}
}

func TestManifests_MatchSidecarSetWritesAndNotTheStatus(t *testing.T) {
	t.Parallel()
	vap, binding, err := Manifests()
	if err != nil {
		t.Fatal(err)
	}
	if vap.Name != Name || binding.Name != Name || binding.Spec.PolicyName != Name {
		t.Errorf("names: policy %q, binding %q for policy %q; want %q", vap.Name, binding.Name, binding.Spec.PolicyName, Name)
	}
	wantRules := []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"apps.kruise.io"}, APIVersions: []string{"v1beta1"}, Resources: []string{"sidecarsets"},
		},
	}}}
	if diff := cmp.Diff(wantRules, vap.Spec.MatchConstraints.ResourceRules); diff != "" {
		t.Errorf("the policy must match SidecarSet creates, updates and deletes, never sidecarsets/status (-want +got):\n%s", diff)
	}
	if got := binding.Spec.ValidationActions; !slices.Equal(got, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("validationActions = %v, want [Deny]", got)
	}
	if vap.Spec.FailurePolicy == nil || *vap.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy = %v, want Fail", vap.Spec.FailurePolicy)
	}
}

func TestEvaluate_Create(t *testing.T) {
	t.Parallel()
	p := load(t)
	const bob = `, which user "bob" does not have`
	tests := []struct {
		name    string
		spec    string
		allowed []string
		want    string // the denial message; empty: allowed
	}{{
		name:    "plain sidecars for every namespace are allowed with inject-all-namespaces",
		spec:    plain,
		allowed: []string{allNamespaces},
	}, {
		name: "plain sidecars for every namespace are denied without inject-all-namespaces",
		spec: plain,
		want: `spec.namespaceSelector: creating a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob +
			`; confine it to namespaces where you may create pods instead (v1alpha1 spec.namespace, or a namespaceSelector on kubernetes.io/metadata.name)`,
	}, {
		name: "a namespaceSelector counts as every namespace",
		spec: plain + "namespaceSelector: {matchLabels: {team: a}}\n",
		want: `spec.namespaceSelector: creating a SidecarSet that injects into the namespaces a namespaceSelector picks requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob +
			`; confine it to namespaces where you may create pods instead (v1alpha1 spec.namespace, or a namespaceSelector on kubernetes.io/metadata.name)`,
	}, {
		name:    "one namespace is allowed to who may create pods there",
		spec:    plain + "namespace: team-a\n",
		allowed: []string{podsInTeamA},
	}, {
		name:    "one namespace is denied to who may not create pods there, whatever else they hold",
		spec:    plain + "namespace: team-a\n",
		allowed: []string{allNamespaces, privileged, secrets},
		want:    `spec.namespaceSelector: creating a SidecarSet that injects into the pods of namespace "team-a" (v1alpha1 spec.namespace) requires permission to create pods in namespace "team-a"` + bob,
	}, {
		name: "a privileged container needs inject-privileged",
		spec: plain + `
initContainers:
- name: init
  image: init:1
  securityContext: {privileged: true}
`,
		allowed: []string{allNamespaces, secrets},
		want:    `spec.initContainers[0].securityContext.privileged: injecting privileged settings requires permission to inject-privileged sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name: "added capabilities need inject-privileged, reported at the container's index",
		spec: `
selector: {matchLabels: {app: web}}
namespace: team-a
containers:
- {name: first, image: a:1}
- name: second
  image: b:1
  securityContext: {capabilities: {add: [NET_ADMIN]}, allowPrivilegeEscalation: false}
`,
		allowed: []string{podsInTeamA},
		want:    `spec.containers[1].securityContext.capabilities.add: injecting privileged settings requires permission to inject-privileged sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name: "dropping capabilities is not privileged",
		spec: plain + `  securityContext: {capabilities: {drop: [ALL]}, runAsNonRoot: true}
namespace: team-a
`,
		allowed: []string{podsInTeamA},
	}, {
		name: "a host port needs inject-privileged, reported at the port's index",
		spec: `
selector: {matchLabels: {app: web}}
namespace: team-a
containers:
- name: agent
  image: a:1
  ports: [{containerPort: 80}, {containerPort: 9100, hostPort: 9100}]
`,
		allowed: []string{podsInTeamA},
		want:    `spec.containers[0].ports[1].hostPort: injecting privileged settings requires permission to inject-privileged sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name:    "an unconfined seccomp profile needs inject-privileged",
		spec:    plain + "  securityContext: {seccompProfile: {type: Unconfined}}\nnamespace: team-a\n",
		allowed: []string{podsInTeamA},
		want:    `spec.containers[0].securityContext.seccompProfile.type: injecting privileged settings requires permission to inject-privileged sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name: "a hostPath volume needs inject-privileged",
		spec: plain + `namespace: team-a
volumes:
- {name: cache, emptyDir: {}}
- {name: root, hostPath: {path: /}}
`,
		allowed: []string{podsInTeamA},
		want:    `spec.volumes[1].hostPath: injecting privileged settings requires permission to inject-privileged sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name: "privileged settings are allowed with inject-privileged",
		spec: plain + `  securityContext: {privileged: true}
volumes:
- {name: root, hostPath: {path: /}}
`,
		allowed: []string{allNamespaces, privileged},
	}, {
		name: "an env secretKeyRef needs inject-secrets, reported at the variable's index",
		spec: plain + `  env:
  - {name: LEVEL, value: info}
  - name: TOKEN
    valueFrom: {secretKeyRef: {name: api, key: token}}
`,
		allowed: []string{allNamespaces, privileged},
		want:    `spec.containers[0].env[1].valueFrom.secretKeyRef: injecting Secrets, or the pod's own environment and volumes, requires permission to inject-secrets sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name: "a ConfigMap reference is not a Secret reference",
		spec: plain + `  env:
  - name: LEVEL
    valueFrom: {configMapKeyRef: {name: settings, key: level}}
  envFrom:
  - configMapRef: {name: settings}
`,
		allowed: []string{allNamespaces},
	}, {
		name:    "an envFrom secretRef needs inject-secrets",
		spec:    plain + "  envFrom: [{configMapRef: {name: settings}}, {secretRef: {name: api}}]\n",
		allowed: []string{allNamespaces},
		want:    `spec.containers[0].envFrom[1].secretRef: injecting Secrets, or the pod's own environment and volumes, requires permission to inject-secrets sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name:    "transferEnv needs inject-secrets: the pod's variables may come from Secrets",
		spec:    plain + "  transferEnv: [{sourceContainerName: app, envName: DB_PASSWORD}]\n",
		allowed: []string{allNamespaces},
		want:    `spec.containers[0].transferEnv: injecting Secrets, or the pod's own environment and volumes, requires permission to inject-secrets sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name:    "sharing the pod's volumes needs inject-secrets",
		spec:    plain + "  shareVolumePolicy: {type: enabled}\n",
		allowed: []string{allNamespaces},
		want:    `spec.containers[0].shareVolumePolicy.type: injecting Secrets, or the pod's own environment and volumes, requires permission to inject-secrets sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name:    "not sharing the pod's volumes is fine",
		spec:    plain + "  shareVolumePolicy: {type: disabled}\n",
		allowed: []string{allNamespaces},
	}, {
		name:    "a secret volume needs inject-secrets",
		spec:    plain + "volumes: [{name: tls, secret: {secretName: tls}}]\n",
		allowed: []string{allNamespaces},
		want:    `spec.volumes[0].secret: injecting Secrets, or the pod's own environment and volumes, requires permission to inject-secrets sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name: "a projected volume with a secret source needs inject-secrets",
		spec: plain + `volumes:
- name: bundle
  projected: {sources: [{configMap: {name: ca}}, {secret: {name: tls}}]}
`,
		allowed: []string{allNamespaces},
		want:    `spec.volumes[0].projected: injecting Secrets, or the pod's own environment and volumes, requires permission to inject-secrets sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name: "Secret references are allowed with inject-secrets",
		spec: plain + `  envFrom: [{secretRef: {name: api}}]
  transferEnv: [{sourceContainerName: app, envName: DB_PASSWORD}]
volumes: [{name: tls, secret: {secretName: tls}}]
`,
		allowed: []string{allNamespaces, secrets},
	}, {
		name:    "pinning a recorded revision needs inject-privileged and inject-secrets: the policy cannot see its content",
		spec:    plain + "injectionStrategy: {revision: {customVersion: v1}}\n",
		allowed: []string{allNamespaces, privileged},
		want: `spec.injectionStrategy.revision: injecting a recorded revision, whose content this policy cannot check, ` +
			`requires permission to inject-privileged and inject-secrets sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name:    "pinning a recorded revision is allowed with both verbs",
		spec:    plain + "injectionStrategy: {revision: {customVersion: v1}}\n",
		allowed: []string{allNamespaces, privileged, secrets},
	}, {
		name:    "pausing injection pins nothing",
		spec:    plain + "injectionStrategy: {paused: true}\n",
		allowed: []string{allNamespaces},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			authz := &grants{allowed: tc.allowed}
			got, err := p.Judge(t.Context(), Request{
				Operation: apiadmission.Create,
				Object:    sidecarSet(t, tc.spec),
				User:      &user.DefaultInfo{Name: "bob", Groups: []string{"system:authenticated"}},
			}, authz)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			checkDenial(t, tc.want, got)
		})
	}
}

func checkDenial(t *testing.T, want string, got *Denial) {
	t.Helper()
	switch {
	case want == "" && got != nil:
		t.Errorf("denied: %s", got.Message)
	case want != "" && got == nil:
		t.Errorf("allowed, want denied with %q", want)
	case want != "":
		if diff := cmp.Diff(&Denial{Message: want, Reason: metav1.StatusReasonForbidden}, got); diff != "" {
			t.Errorf("denial (-want +got):\n%s", diff)
		}
	}
}

// Every write is judged (issue 22): an update, whatever it changes, needs
// the permissions for the old and the new reach; one that changes what is
// injected or where needs the content's verbs too; a delete needs the old
// reach's.
func TestEvaluate_EveryWriteIsJudged(t *testing.T) {
	t.Parallel()
	p := load(t)
	const bob = `, which user "bob" does not have`
	const confine = "; confine it to namespaces where you may create pods instead (v1alpha1 spec.namespace, or a namespaceSelector on kubernetes.io/metadata.name)"
	privilegedSpec := plain + "  securityContext: {privileged: true}\n  envFrom: [{secretRef: {name: api}}]\n"
	tests := []struct {
		name      string
		operation apiadmission.Operation
		old, spec string
		// oldAnnotations and annotations are the objects' annotations.
		oldAnnotations, annotations map[string]string
		// customVersion is the new object's spec.customVersion.
		customVersion string
		allowed       []string
		want          string
	}{{
		name: "pausing the rollout of a privileged, cluster-wide SidecarSet needs its reach, inject-all-namespaces, not the content's verbs",
		old:  privilegedSpec, spec: privilegedSpec + "updateStrategy: {paused: true}\n",
		allowed: []string{allNamespaces},
	}, {
		name: "pausing the rollout of any SidecarSet is allowed to a holder of pause-rollouts (the operator's failure budget)",
		old:  privilegedSpec + "namespace: team-b\n", spec: privilegedSpec + "namespace: team-b\nupdateStrategy: {paused: true}\n",
		allowed: []string{pauseRollouts},
	}, {
		name: "pausing a cluster-wide SidecarSet by pause-rollouts too",
		old:  privilegedSpec, spec: privilegedSpec + "updateStrategy: {paused: true}\n",
		allowed: []string{pauseRollouts},
	}, {
		name: "pause-rollouts allows nothing else with the pause: a partition",
		old:  privilegedSpec + "namespace: team-b\n", spec: privilegedSpec + "namespace: team-b\nupdateStrategy: {paused: true, partition: 3}\n",
		allowed: []string{pauseRollouts},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into the pods of namespace "team-b" (v1alpha1 spec.namespace) requires permission to create pods in namespace "team-b"` + bob,
	}, {
		name: "pause-rollouts allows nothing else with the pause: an annotation",
		old:  privilegedSpec, spec: privilegedSpec + "updateStrategy: {paused: true}\n",
		annotations: map[string]string{"sidecarset-operator.dev/failure-policy": "Ignore"},
		allowed:     []string{pauseRollouts},
		want:        `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "pause-rollouts does not resume",
		old:  privilegedSpec + "updateStrategy: {paused: true}\n", spec: privilegedSpec,
		allowed: []string{pauseRollouts},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "pause-rollouts pauses injection of a privileged, cluster-wide SidecarSet (the on-call role)",
		old:  privilegedSpec, spec: privilegedSpec + "injectionStrategy: {paused: true}\n",
		allowed: []string{pauseRollouts},
	}, {
		name: "pause-rollouts pauses the rollout and injection at once",
		old:  privilegedSpec + "namespace: team-b\n", spec: privilegedSpec + "namespace: team-b\nupdateStrategy: {paused: true}\ninjectionStrategy: {paused: true}\n",
		allowed: []string{pauseRollouts},
	}, {
		name: "pause-rollouts does not resume injection",
		old:  privilegedSpec + "injectionStrategy: {paused: true}\n", spec: privilegedSpec,
		allowed: []string{pauseRollouts},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "pause-rollouts allows nothing else with a pause of injection: the image",
		old:  privilegedSpec, spec: strings.Replace(privilegedSpec, "agent:1", "agent:2", 1) + "injectionStrategy: {paused: true}\n",
		allowed: []string{pauseRollouts},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "rollback resumes the rollout of a privileged, cluster-wide SidecarSet",
		old:  privilegedSpec + "updateStrategy: {paused: true}\n", spec: privilegedSpec,
		allowed: []string{rollback},
	}, {
		name: "rollback resumes injection",
		old:  privilegedSpec + "injectionStrategy: {paused: true}\n", spec: privilegedSpec,
		allowed: []string{rollback},
	}, {
		name: "rollback resumes the rollout of another team's SidecarSet without its namespace's rights",
		old:  privilegedSpec + "namespace: team-b\nupdateStrategy: {paused: true}\n", spec: privilegedSpec + "namespace: team-b\n",
		allowed: []string{rollback},
	}, {
		name:           "rollback puts back earlier content, resumes and clears the partition, as rollout undo writes it (the webhook checks the revision)",
		old:            strings.Replace(privilegedSpec, "agent:1", "agent:2", 1) + "updateStrategy: {paused: true, partition: 3}\n",
		spec:           privilegedSpec,
		oldAnnotations: map[string]string{"kruise.io/sidecarset-hash": "new", "sidecarset-operator.dev/authority": "inject-privileged,inject-secrets,inject-all-namespaces"},
		annotations:    map[string]string{"kruise.io/sidecarset-hash": "old", "sidecarset-operator.dev/authority": "inject-privileged,inject-secrets,inject-all-namespaces"},
		allowed:        []string{rollback},
	}, {
		name:    "rollback sets a partition to 0 with earlier content",
		old:     strings.Replace(privilegedSpec, "agent:1", "agent:2", 1) + "updateStrategy: {partition: 50%}\n",
		spec:    privilegedSpec + "updateStrategy: {partition: 0%}\n",
		allowed: []string{rollback},
	}, {
		name: "rollback does not pause",
		old:  privilegedSpec, spec: privilegedSpec + "updateStrategy: {paused: true}\n",
		allowed: []string{rollback},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "rollback allows no new selector with a resume",
		old:  privilegedSpec + "updateStrategy: {paused: true}\n", spec: strings.Replace(privilegedSpec, "app: web", "tier: front", 1),
		allowed: []string{rollback},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name:    "rollback allows no partition but 0: a partition of 3 with earlier content",
		old:     strings.Replace(privilegedSpec, "agent:1", "agent:2", 1),
		spec:    privilegedSpec + "updateStrategy: {partition: 3}\n",
		allowed: []string{rollback},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "rollback does not clear a partition without earlier content: the current one would reach every pod",
		old:  privilegedSpec + "updateStrategy: {paused: true, partition: 3}\n", spec: privilegedSpec,
		allowed: []string{rollback},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "rollback does not change the pace of the rollout",
		old:  privilegedSpec + "updateStrategy: {paused: true}\n", spec: privilegedSpec + "updateStrategy: {maxUnavailable: 100%}\n",
		allowed: []string{rollback},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "rollback does not pin a revision",
		old:  privilegedSpec + "namespace: team-b\n", spec: privilegedSpec + "namespace: team-b\ninjectionStrategy: {revision: {customVersion: v1}}\n",
		allowed: []string{rollback},
		want:    `spec.containers[0].securityContext.privileged: injecting privileged settings requires permission to inject-privileged sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name: "rollback does not change the custom version alone",
		old:  privilegedSpec + "updateStrategy: {paused: true}\n", spec: privilegedSpec, customVersion: "v9",
		allowed: []string{rollback},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name:           "rollback does not raise the authority record",
		old:            strings.Replace(privilegedSpec, "agent:1", "agent:2", 1),
		spec:           privilegedSpec,
		oldAnnotations: map[string]string{"sidecarset-operator.dev/authority": "inject-all-namespaces"},
		annotations:    map[string]string{"sidecarset-operator.dev/authority": "inject-privileged,inject-secrets,inject-all-namespaces"},
		allowed:        []string{rollback},
		want:           `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "rollback changes no label or other annotation",
		old:  privilegedSpec + "updateStrategy: {paused: true}\n", spec: privilegedSpec,
		annotations: map[string]string{"sidecarset-operator.dev/failure-policy": "Ignore"},
		allowed:     []string{rollback},
		want:        `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "a resume without rollback is judged as any write: the reach",
		old:  privilegedSpec + "updateStrategy: {paused: true}\n", spec: privilegedSpec,
		allowed: []string{pauseRollouts},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "earlier content without rollback is judged as any write: its verbs",
		old:  strings.Replace(privilegedSpec, "agent:1", "agent:2", 1), spec: privilegedSpec,
		allowed: []string{allNamespaces, secrets},
		want:    `spec.containers[0].securityContext.privileged: injecting privileged settings requires permission to inject-privileged sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name: "pausing the rollout of another team's cluster-wide SidecarSet is refused without inject-all-namespaces",
		old:  privilegedSpec, spec: privilegedSpec + "updateStrategy: {paused: true}\n",
		allowed: []string{podsInTeamA},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name: "pausing injection of a SidecarSet of one's own namespace needs pod creation there",
		old:  plain + "namespace: team-a\n", spec: plain + "namespace: team-a\ninjectionStrategy: {paused: true}\n",
		allowed: []string{podsInTeamA},
	}, {
		name: "switching another team's SidecarSet to best-effort is refused",
		old:  plain, spec: plain,
		annotations: map[string]string{"sidecarset-operator.dev/failure-policy": "Ignore"},
		allowed:     []string{podsInTeamA, privileged, secrets},
		want:        `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name:    "changing the image of a privileged sidecar needs inject-privileged",
		old:     privilegedSpec,
		spec:    strings.Replace(privilegedSpec, "agent:1", "agent:2", 1),
		allowed: []string{allNamespaces, secrets},
		want:    `spec.containers[0].securityContext.privileged: injecting privileged settings requires permission to inject-privileged sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name: "widening the selector of a cluster-wide SidecarSet needs inject-all-namespaces",
		old:  plain,
		spec: strings.Replace(plain, "app: web", "tier: front", 1),
		want: `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name:    "moving to another namespace needs to create pods in both",
		old:     plain + "namespace: team-a\n",
		spec:    plain + "namespace: team-b\n",
		allowed: []string{podsInTeamA},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into the pods of namespaces "team-b", "team-a" requires permission to create pods in each of them, which user "bob" does not have in namespace "team-b"`,
	}, {
		name:    "retargeting a cluster-wide privileged SidecarSet at one's own namespace needs its old reach",
		old:     privilegedSpec,
		spec:    privilegedSpec + "namespace: team-a\n",
		allowed: []string{podsInTeamA, privileged, secrets},
		want:    `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name:    "retargeting privileged sidecars needs inject-privileged",
		old:     privilegedSpec + "namespace: team-a\n",
		spec:    strings.Replace(privilegedSpec, "app: web", "app: api", 1) + "namespace: team-a\n",
		allowed: []string{podsInTeamA, secrets},
		want:    `spec.containers[0].securityContext.privileged: injecting privileged settings requires permission to inject-privileged sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name: "adding a patchPodMetadata entry changes what is injected where",
		old:  plain,
		spec: plain + "patchPodMetadata: [{annotations: {a: b}}]\n",
		want: `spec.namespaceSelector: changing a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name:        "making a privileged SidecarSet a canary changes where it injects",
		old:         privilegedSpec + "namespace: team-a\n",
		spec:        privilegedSpec + "namespace: team-a\n",
		annotations: map[string]string{"apps.kruise.io/sidecarset-canary": "true", "apps.kruise.io/sidecarset-base": "mtls"},
		allowed:     []string{podsInTeamA, secrets},
		want:        `spec.containers[0].securityContext.privileged: injecting privileged settings requires permission to inject-privileged sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name:    "pinning another revision needs inject-privileged and inject-secrets",
		old:     plain + "injectionStrategy: {revision: {customVersion: v1}}\n",
		spec:    plain + "injectionStrategy: {revision: {customVersion: v2}}\n",
		allowed: []string{allNamespaces},
		want: `spec.injectionStrategy.revision: injecting a recorded revision, whose content this policy cannot check, ` +
			`requires permission to inject-privileged and inject-secrets sidecarsets.apps.kruise.io "agent"` + bob,
	}, {
		name:    "keeping the pinned revision while pausing the rollout needs only the reach",
		old:     privilegedSpec + "injectionStrategy: {revision: {customVersion: v1}}\n",
		spec:    privilegedSpec + "injectionStrategy: {revision: {customVersion: v1}}\nupdateStrategy: {paused: true}\n",
		allowed: []string{allNamespaces},
	}, {
		name:    "changing a plain sidecar of a namespaced SidecarSet needs only pod creation there",
		old:     plain + "namespace: team-a\n",
		spec:    strings.Replace(plain, "agent:1", "agent:2", 1) + "namespace: team-a\n",
		allowed: []string{podsInTeamA},
	}, {
		name:      "deleting a cluster-wide SidecarSet needs inject-all-namespaces",
		operation: apiadmission.Delete,
		old:       plain,
		allowed:   []string{podsInTeamA, privileged, secrets},
		want:      `metadata.name: deleting a SidecarSet that injects into every namespace requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent"` + bob + confine,
	}, {
		name:      "deleting a SidecarSet of another namespace is refused",
		operation: apiadmission.Delete,
		old:       plain + "namespace: team-b\n",
		allowed:   []string{podsInTeamA, allNamespaces},
		want:      `metadata.name: deleting a SidecarSet that injects into the pods of namespace "team-b" (v1alpha1 spec.namespace) requires permission to create pods in namespace "team-b"` + bob,
	}, {
		name:      "deleting a privileged SidecarSet of one's own namespace needs no verb",
		operation: apiadmission.Delete,
		old:       privilegedSpec + "namespace: team-a\n",
		allowed:   []string{podsInTeamA},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := Request{Operation: apiadmission.Update, User: &user.DefaultInfo{Name: "bob"}}
			if tc.operation != "" {
				r.Operation = tc.operation
			}
			if tc.old != "" {
				r.OldObject = sidecarSet(t, tc.old)
				r.OldObject.SetAnnotations(tc.oldAnnotations)
			}
			if r.Operation != apiadmission.Delete {
				r.Object = sidecarSet(t, tc.spec)
				r.Object.SetAnnotations(tc.annotations)
				if tc.customVersion != "" {
					if err := unstructured.SetNestedField(r.Object.Object, tc.customVersion, "spec", "customVersion"); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, err := p.Judge(t.Context(), r, &grants{allowed: tc.allowed})
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			checkDenial(t, tc.want, got)
		})
	}
}

func TestEvaluate_ChecksOnlyWhatIsNeeded(t *testing.T) {
	t.Parallel()
	p := load(t)
	authz := &grants{allowed: []string{podsInTeamA}}
	_, err := p.Judge(t.Context(), Request{
		Operation: apiadmission.Create,
		Object:    sidecarSet(t, plain+"namespace: team-a\n"),
		User:      &user.DefaultInfo{Name: "bob"},
	}, authz)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"create /pods /", podsInTeamA}, authz.asked); diff != "" {
		t.Errorf("a plain namespaced SidecarSet asks for pods everywhere, then in its namespace, and nothing else (-want +got):\n%s", diff)
	}
}

// The user manual's examples, as a cluster administrator applies them.
func TestEvaluate_SeedsAreAcceptedForAnAdministrator(t *testing.T) {
	t.Parallel()
	p := load(t)
	files, err := filepath.Glob("../../test/integration/crd/testdata/seeds/newest/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no seeds: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if obj.GetKind() != "SidecarSet" {
			continue
		}
		denial, err := p.Evaluate(t.Context(), Request{
			Operation: apiadmission.Create,
			Object:    obj,
			User:      &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}},
		}, &grants{all: true})
		if err != nil || denial != nil {
			t.Errorf("%s: denied %v, error %v", filepath.Base(f), denial, err)
		}
	}
}

func mustVersion(t *testing.T, v string) *version.Version {
	t.Helper()
	parsed, err := version.ParseMajorMinor(v)
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}
