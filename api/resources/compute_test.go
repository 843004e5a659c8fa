package resources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// res is a container's resources in short form: "" leaves a field unset.
type res struct{ limCPU, limMem, reqCPU, reqMem string }

func container(name string, r res) corev1.Container {
	c := corev1.Container{Name: name, Image: "app:1"}
	set := func(list *corev1.ResourceList, n corev1.ResourceName, v string) {
		if v == "" {
			return
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[n] = resource.MustParse(v)
	}
	set(&c.Resources.Limits, corev1.ResourceCPU, r.limCPU)
	set(&c.Resources.Limits, corev1.ResourceMemory, r.limMem)
	set(&c.Resources.Requests, corev1.ResourceCPU, r.reqCPU)
	set(&c.Resources.Requests, corev1.ResourceMemory, r.reqMem)
	return c
}

func nativeSidecar(name string, r res) corev1.Container {
	c := container(name, r)
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

// exprs is a policy's expressions in short form; nil Limits/Requests stay nil.
type exprs struct {
	limits   *appsv1beta1.ResourceExprLimits
	requests *appsv1beta1.ResourceExprRequests
}

func lim(cpu, mem string) *appsv1beta1.ResourceExprLimits {
	return &appsv1beta1.ResourceExprLimits{CPU: cpu, Memory: mem}
}

func req(cpu, mem string) *appsv1beta1.ResourceExprRequests {
	return &appsv1beta1.ResourceExprRequests{CPU: cpu, Memory: mem}
}

func policy(mode appsv1beta1.TargetContainerModeType, regex string, e exprs) *appsv1beta1.ResourcesPolicy {
	return &appsv1beta1.ResourcesPolicy{
		TargetContainerMode:       mode,
		TargetContainersNameRegex: regex,
		ResourceExpr:              appsv1beta1.ResourceExpr{Limits: e.limits, Requests: e.requests},
	}
}

// renderRequirements flattens requirements to canonical strings, so that the tests check
// both values and formats ("180Mi", not "188743680").
func renderRequirements(r corev1.ResourceRequirements) map[string]string {
	out := map[string]string{}
	for name, q := range r.Limits {
		out["limits."+string(name)] = q.String()
	}
	for name, q := range r.Requests {
		out["requests."+string(name)] = q.String()
	}
	return out
}

type computeCase struct {
	name           string
	policy         *appsv1beta1.ResourcesPolicy
	containers     []corev1.Container
	initContainers []corev1.Container
	exclude        map[string]bool
	want           map[string]string
	wantErr        string
}

func runComputeCases(t *testing.T, tests []computeCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Compile(tc.policy).Compute(tc.containers, tc.initContainers, tc.exclude)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("Compute error mismatch (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, renderRequirements(got)); diff != "" {
				t.Errorf("Compute resources mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

var (
	app1 = res{limCPU: "200m", limMem: "200Mi", reqCPU: "50m", reqMem: "100Mi"}
	app2 = res{limCPU: "400m", limMem: "400Mi", reqCPU: "100m", reqMem: "200Mi"}
)

// TestCompute_WorkedExamples reproduces the target rows of behavior.md 2.8.
func TestCompute_WorkedExamples(t *testing.T) {
	t.Parallel()
	runComputeCases(t, []computeCase{
		{
			name: "sum mode halves the summed cpu and keeps constant memory",
			policy: policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{
				limits: lim("cpu*50%", "200Mi"), requests: req("cpu*50%", "100Mi"),
			}),
			containers: []corev1.Container{container("app1", app1), container("app2", app2)},
			want: map[string]string{
				"limits.cpu": "300m", "limits.memory": "200Mi",
				"requests.cpu": "75m", "requests.memory": "100Mi",
			},
		},
		{
			name: "max mode floors half the largest cpu at 50m",
			policy: policy(appsv1beta1.TargetContainerModeMax, "^large.engine.v.*$", exprs{
				limits: lim("max(cpu*50%, 50m)", "200Mi"), requests: req("max(cpu*50%, 50m)", "100Mi"),
			}),
			containers: []corev1.Container{container("large.engine.v4", app1), container("large.engine.v8", app2)},
			want: map[string]string{
				"limits.cpu": "200m", "limits.memory": "200Mi",
				"requests.cpu": "50m", "requests.memory": "100Mi",
			},
		},
		{
			name: "an anchored regex selects only the 200m container",
			policy: policy(appsv1beta1.TargetContainerModeSum, "^large.engine.v4$", exprs{
				limits: lim("max(cpu*50%, 50m)", "200Mi"), requests: req("max(cpu*50%, 50m)", "100Mi"),
			}),
			containers: []corev1.Container{container("large.engine.v4", app1), container("large.engine.v8", app2)},
			want: map[string]string{
				"limits.cpu": "100m", "limits.memory": "200Mi",
				"requests.cpu": "50m", "requests.memory": "100Mi",
			},
		},
		{
			name: "a target without a cpu limit leaves the cpu limit unset",
			policy: policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{
				limits: lim("cpu*50%", "memory*30%"), requests: req("cpu*30%", "memory*20%"),
			}),
			containers: []corev1.Container{
				container("app1", res{limCPU: "200m", limMem: "200Mi", reqCPU: "100m", reqMem: "100Mi"}),
				container("app2", res{limMem: "400Mi", reqCPU: "50m", reqMem: "200Mi"}),
			},
			want: map[string]string{
				"limits.memory": "180Mi",
				"requests.cpu":  "45m", "requests.memory": "60Mi",
			},
		},
		{
			// Kruise's expression helper returns "0" for an empty request
			// expression, but its caller skips empty expressions, so the
			// Kruise pod gets no request either: same result.
			name: "empty expressions leave their fields unset",
			policy: policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{
				limits: lim("", "memory"), requests: req("", "memory*50%"),
			}),
			containers: []corev1.Container{container("app1", app1), container("app2", app2)},
			want:       map[string]string{"limits.memory": "600Mi", "requests.memory": "150Mi"},
		},
	})
}

// TestCompute_KruiseFixes covers behavior.md 4.1 item 21: each row states
// what Kruise would produce.
func TestCompute_KruiseFixes(t *testing.T) {
	t.Parallel()
	noCPULimit := []corev1.Container{
		container("app1", res{limCPU: "200m", limMem: "200Mi", reqCPU: "100m", reqMem: "100Mi"}),
		container("app2", res{limMem: "400Mi", reqCPU: "50m", reqMem: "200Mi"}),
	}
	runComputeCases(t, []computeCase{
		{
			// Kruise: no cpu limit (the unlimited aggregate suppresses even constants).
			name: "a constant cpu limit applies although a target has no cpu limit",
			policy: policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{
				limits: lim("500m", "memory*30%"), requests: req("cpu*30%", ""),
			}),
			containers: noCPULimit,
			want:       map[string]string{"limits.cpu": "500m", "limits.memory": "180Mi", "requests.cpu": "45m"},
		},
		{
			// Kruise: no memory limit.
			name: "a constant memory limit applies in max mode although a target has no memory limit",
			policy: policy(appsv1beta1.TargetContainerModeMax, ".*", exprs{
				limits: lim("", "max(200Mi, 1/2 * 1Gi)"),
			}),
			containers: []corev1.Container{container("app1", app1), container("app2", res{limCPU: "400m"})},
			want:       map[string]string{"limits.memory": "512Mi"},
		},
		{
			name: "a variable limit expression is still unset when the aggregate is unlimited",
			policy: policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{
				limits: lim("max(cpu*50%, 100m)", ""),
			}),
			containers: noCPULimit,
			want:       map[string]string{},
		},
		{
			// Kruise: limits.cpu 100m with requests.cpu 300m; the API server rejects the pod.
			name: "a computed request above the computed limit is an error naming both",
			policy: policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{
				limits: lim("100m", ""), requests: req("cpu*50%", ""),
			}),
			containers: []corev1.Container{container("app1", res{reqCPU: "200m"}), container("app2", res{reqCPU: "400m"})},
			wantErr: "computed cpu request 300m is greater than computed cpu limit 100m " +
				"(check resourcesExpr.requests.cpu and resourcesExpr.limits.cpu)",
		},
		{
			// Kruise: limits.memory 100Mi with requests.memory 150Mi; the API server rejects the pod.
			name: "a memory request above the memory limit is an error",
			policy: policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{
				limits: lim("", "memory*1/6"), requests: req("", "memory*50%"),
			}),
			containers: []corev1.Container{container("app1", app1), container("app2", app2)},
			wantErr: "computed memory request 150Mi is greater than computed memory limit 100Mi " +
				"(check resourcesExpr.requests.memory and resourcesExpr.limits.memory)",
		},
		{
			name: "a request equal to the limit is accepted",
			policy: policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{
				limits: lim("cpu*50%", ""), requests: req("300m", ""),
			}),
			containers: []corev1.Container{container("app1", app1), container("app2", app2)},
			want:       map[string]string{"limits.cpu": "300m", "requests.cpu": "300m"},
		},
		{
			// Kruise: the word "memory" binds the variable memory to the cpu aggregate: limits.cpu 300m.
			name: "a cpu expression that mentions memory is an error",
			policy: policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{
				limits: lim("memory*50%", ""),
			}),
			containers: []corev1.Container{container("app1", app1), container("app2", app2)},
			wantErr:    `resourcesExpr.limits.cpu "memory*50%": a cpu expression cannot use "memory" at column 1 (the only variable is cpu)`,
		},
		{
			// Kruise: without the word "memory", the variable is cpu, bound to the memory aggregate: 300Mi.
			name: "a memory expression that uses cpu is an error",
			policy: policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{
				requests: req("", "cpu*50%"),
			}),
			containers: []corev1.Container{container("app1", app1), container("app2", app2)},
			wantErr:    `resourcesExpr.requests.memory "cpu*50%": a memory expression cannot use "cpu" at column 1 (the only variable is memory)`,
		},
		{
			name: "a plain number in a memory field means bytes",
			policy: policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{
				limits: lim("", "1073741824"), requests: req("0.5", ""),
			}),
			containers: []corev1.Container{container("app1", app1)},
			want:       map[string]string{"limits.memory": "1073741824", "requests.cpu": "500m"},
		},
	})
}

func TestCompute_Targets(t *testing.T) {
	t.Parallel()
	runComputeCases(t, []computeCase{
		{
			name:   "a nil policy computes nothing",
			policy: nil,
			want:   map[string]string{},
		},
		{
			name:           "native-sidecar init containers are targets and plain init containers are not",
			policy:         policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{limits: lim("cpu", "memory"), requests: req("cpu", "memory")}),
			initContainers: []corev1.Container{container("setup", res{limCPU: "1", limMem: "1Gi", reqCPU: "1", reqMem: "1Gi"}), nativeSidecar("proxy", app1)},
			containers:     []corev1.Container{container("app", app2)},
			want: map[string]string{
				"limits.cpu": "600m", "limits.memory": "600Mi",
				"requests.cpu": "150m", "requests.memory": "300Mi",
			},
		},
		{
			name:           "a plain init container without limits does not make the aggregate unlimited",
			policy:         policy(appsv1beta1.TargetContainerModeMax, ".*", exprs{limits: lim("cpu", "")}),
			initContainers: []corev1.Container{container("setup", res{})},
			containers:     []corev1.Container{container("app", app2)},
			want:           map[string]string{"limits.cpu": "400m"},
		},
		{
			name:       "excluded sidecar names are never targets",
			policy:     policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{limits: lim("cpu", "")}),
			containers: []corev1.Container{container("app", app1), container("envoy", res{limCPU: "2"}), container("log", res{limCPU: "1"})},
			initContainers: []corev1.Container{
				nativeSidecar("init-proxy", res{limCPU: "3"}),
			},
			exclude: map[string]bool{"envoy": true, "init-proxy": true},
			want:    map[string]string{"limits.cpu": "1200m"},
		},
		{
			name:       "the regex is unanchored",
			policy:     policy(appsv1beta1.TargetContainerModeSum, "app", exprs{limits: lim("cpu", "")}),
			containers: []corev1.Container{container("my-app-1", app1), container("worker", res{limCPU: "3"})},
			want:       map[string]string{"limits.cpu": "200m"},
		},
		{
			name:       "an empty regex defaults to every container",
			policy:     policy(appsv1beta1.TargetContainerModeSum, "", exprs{limits: lim("cpu", "")}),
			containers: []corev1.Container{container("app1", app1), container("app2", app2)},
			want:       map[string]string{"limits.cpu": "600m"},
		},
		{
			name:       "max mode takes the largest limit and request separately",
			policy:     policy(appsv1beta1.TargetContainerModeMax, ".*", exprs{limits: lim("cpu", "memory"), requests: req("cpu", "memory")}),
			containers: []corev1.Container{container("a", res{limCPU: "1", limMem: "1Gi", reqCPU: "100m", reqMem: "256Mi"}), container("b", res{limCPU: "2", limMem: "512Mi", reqCPU: "50m", reqMem: "512Mi"})},
			want: map[string]string{
				"limits.cpu": "2", "limits.memory": "1Gi",
				"requests.cpu": "100m", "requests.memory": "512Mi",
			},
		},
		{
			name:       "missing requests count as zero",
			policy:     policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{requests: req("max(cpu*50%, 50m)", "memory*50%")}),
			containers: []corev1.Container{container("app1", res{limCPU: "1"}), container("app2", res{reqMem: "100Mi"})},
			want:       map[string]string{"requests.cpu": "50m", "requests.memory": "50Mi"},
		},
		{
			name:       "sum mode adds mixed-format memory exactly",
			policy:     policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{limits: lim("", "memory")}),
			containers: []corev1.Container{container("a", res{limMem: "1Gi"}), container("b", res{limMem: "1G"})},
			want:       map[string]string{"limits.memory": "2073741824"},
		},
	})
}

func TestCompute_Errors(t *testing.T) {
	t.Parallel()
	all := exprs{limits: lim("cpu*50%", "")}
	runComputeCases(t, []computeCase{
		{
			name:       "no matching container is an error",
			policy:     policy(appsv1beta1.TargetContainerModeSum, "^nonexistent$", all),
			containers: []corev1.Container{container("app1", app1)},
			wantErr:    `no containers match targetContainersNameRegex "^nonexistent$"`,
		},
		{
			name:           "a pod whose only candidates are excluded or plain init containers is an error",
			policy:         policy(appsv1beta1.TargetContainerModeSum, ".*", all),
			initContainers: []corev1.Container{container("setup", app1)},
			containers:     []corev1.Container{container("envoy", app1)},
			exclude:        map[string]bool{"envoy": true},
			wantErr:        `no containers match targetContainersNameRegex ".*"`,
		},
		{
			name:       "an invalid regex is an error",
			policy:     policy(appsv1beta1.TargetContainerModeSum, "app(", all),
			containers: []corev1.Container{container("app1", app1)},
			wantErr:    "invalid targetContainersNameRegex \"app(\": error parsing regexp: missing closing ): `app(`",
		},
		{
			name:       "an unknown mode is an error",
			policy:     policy("avg", ".*", all),
			containers: []corev1.Container{container("app1", app1)},
			wantErr:    `unsupported targetContainersMode "avg" (want "sum" or "max")`,
		},
		{
			name:       "an unparsable expression is an error naming its field",
			policy:     policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{limits: lim("cpu * invalid", "")}),
			containers: []corev1.Container{container("app1", app1)},
			wantErr:    `resourcesExpr.limits.cpu "cpu * invalid": unknown identifier "invalid" at column 7 (the only variable is cpu)`,
		},
		{
			name:       "a negative result is an error naming the field and the bound value",
			policy:     policy(appsv1beta1.TargetContainerModeSum, ".*", exprs{requests: req("cpu - 100m", "")}),
			containers: []corev1.Container{container("app1", app1)},
			wantErr:    `resourcesExpr.requests.cpu "cpu - 100m" with cpu = 50m: result is negative: -50m`,
		},
	})
}
