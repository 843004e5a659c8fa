package resources

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// DefaultTargetContainersNameRegex selects every candidate container; it is
// the CRD default of targetContainersNameRegex.
const DefaultTargetContainersNameRegex = ".*"

// aggregate is the aggregated resources of the target containers. A limit
// is absent (unlimited) when any target lacks it; a missing request counts
// as 0, so requests are always present.
type aggregate struct {
	limits   corev1.ResourceList
	requests corev1.ResourceList
}

// field is one computed resource field of the sidecar.
type field struct {
	path     string // for errors, e.g. "resourcesExpr.limits.cpu"
	name     corev1.ResourceName
	variable string
	expr     string
	limit    bool
	// compiled is the parsed expression; err is why it does not parse.
	compiled *Expr
	err      error
}

// Policy is a resourcesPolicy compiled once, when its SidecarSet enters the
// pod webhook's registry (or a pinned revision is restored): its name
// regex and its expressions, so that admitting a pod parses nothing. A part
// that does not compile is kept as an error, returned by Compute in the
// order an uncompiled policy would meet it.
type Policy struct {
	mode      appsv1beta1.TargetContainerModeType
	nameRegex string
	re        *regexp.Regexp
	reErr     error
	fields    []field
}

// Compile compiles a resourcesPolicy; nil compiles to nil, which computes
// no resources.
func Compile(policy *appsv1beta1.ResourcesPolicy) *Policy {
	if policy == nil {
		return nil
	}
	p := &Policy{mode: policy.TargetContainerMode, nameRegex: policy.TargetContainersNameRegex}
	if p.nameRegex == "" {
		p.nameRegex = DefaultTargetContainersNameRegex
	}
	p.re, p.reErr = regexp.Compile(p.nameRegex)
	if p.reErr != nil {
		p.reErr = fmt.Errorf("invalid targetContainersNameRegex %q: %w", p.nameRegex, p.reErr)
	}
	for _, f := range fieldsOf(policy.ResourceExpr) {
		if f.expr == "" {
			continue
		}
		if f.compiled, f.err = Parse(f.expr, f.variable); f.err != nil {
			f.err = fmt.Errorf("%s %q: %w", f.path, f.expr, f.err)
		}
		p.fields = append(p.fields, f)
	}
	return p
}

// Compute returns the sidecar's resources, given the pod's containers and
// init containers as admitted and the names to exclude (every sidecar name
// of the SidecarSets being injected). A nil policy computes none.
//
// Targets are the pod's native-sidecar init containers (restartPolicy
// Always) and containers, in that order, that are not excluded and whose
// name matches targetContainersNameRegex (an unanchored Go regexp). No
// target is an error. Each non-empty expression is evaluated with its
// field's variable (cpu for cpu fields, memory for memory fields) bound to
// the aggregate of that field.
//
// Differences from Kruise (behavior.md 4.1 item 21): a constant limit
// expression applies even when the aggregate limit is unlimited; computed
// requests above computed limits are an error rather than a pod the API
// server rejects; the variable is chosen by the field, not by a word match
// on the expression.
func (p *Policy) Compute(podContainers, podInitContainers []corev1.Container, exclude map[string]bool) (corev1.ResourceRequirements, error) {
	var out corev1.ResourceRequirements
	if p == nil {
		return out, nil
	}
	if p.reErr != nil {
		return out, p.reErr
	}
	targets, err := selectTargets(p.re, p.nameRegex, podContainers, podInitContainers, exclude)
	if err != nil {
		return out, err
	}
	agg, err := aggregateResources(p.mode, targets)
	if err != nil {
		return out, err
	}

	for _, f := range p.fields {
		if f.err != nil {
			return corev1.ResourceRequirements{}, f.err
		}
		q, set, err := computeField(f, agg)
		if err != nil {
			return corev1.ResourceRequirements{}, err
		}
		if !set {
			continue
		}
		list := &out.Requests
		if f.limit {
			list = &out.Limits
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[f.name] = q
	}

	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := out.Requests[name]
		lim, hasLim := out.Limits[name]
		if hasReq && hasLim && req.Cmp(lim) > 0 {
			return corev1.ResourceRequirements{}, fmt.Errorf(
				"computed %s request %s is greater than computed %s limit %s (check resourcesExpr.requests.%s and resourcesExpr.limits.%s)",
				name, req.String(), name, lim.String(), name, name)
		}
	}
	return out, nil
}

// fieldsOf lists the four expression fields of a policy.
func fieldsOf(expr appsv1beta1.ResourceExpr) []field {
	var fields []field
	if l := expr.Limits; l != nil {
		fields = append(fields,
			field{path: "resourcesExpr.limits.cpu", name: corev1.ResourceCPU, variable: VariableCPU, expr: l.CPU, limit: true},
			field{path: "resourcesExpr.limits.memory", name: corev1.ResourceMemory, variable: VariableMemory, expr: l.Memory, limit: true},
		)
	}
	if r := expr.Requests; r != nil {
		fields = append(fields,
			field{path: "resourcesExpr.requests.cpu", name: corev1.ResourceCPU, variable: VariableCPU, expr: r.CPU},
			field{path: "resourcesExpr.requests.memory", name: corev1.ResourceMemory, variable: VariableMemory, expr: r.Memory},
		)
	}
	return fields
}

// computeField evaluates one compiled field. It reports false when the
// field stays unset: a limit expression that uses its variable while the
// aggregate limit is unlimited.
func computeField(f field, agg aggregate) (resource.Quantity, bool, error) {
	e := f.compiled
	var bound resource.Quantity
	if f.limit {
		lim, ok := agg.limits[f.name]
		if !ok && !e.Constant() {
			return resource.Quantity{}, false, nil
		}
		bound = lim
	} else {
		bound = agg.requests[f.name]
	}
	q, err := e.Eval(bound)
	if err != nil {
		return resource.Quantity{}, false, fmt.Errorf("%s %q with %s = %s: %w", f.path, f.expr, f.variable, bound.String(), err)
	}
	return q, true, nil
}

// selectTargets returns the target containers: native-sidecar init
// containers, then containers, not excluded and matching the regex.
func selectTargets(re *regexp.Regexp, nameRegex string, containers, initContainers []corev1.Container, exclude map[string]bool) ([]corev1.Container, error) {
	var targets []corev1.Container
	for i := range initContainers {
		c := &initContainers[i]
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		if !exclude[c.Name] && re.MatchString(c.Name) {
			targets = append(targets, *c)
		}
	}
	for i := range containers {
		c := &containers[i]
		if !exclude[c.Name] && re.MatchString(c.Name) {
			targets = append(targets, *c)
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("no containers match targetContainersNameRegex %q", nameRegex)
	}
	return targets, nil
}

// aggregateResources sums or maximises cpu and memory over the targets.
func aggregateResources(mode appsv1beta1.TargetContainerModeType, targets []corev1.Container) (aggregate, error) {
	var combine func(acc *resource.Quantity, q resource.Quantity)
	switch mode {
	case appsv1beta1.TargetContainerModeSum:
		combine = func(acc *resource.Quantity, q resource.Quantity) { acc.Add(q) }
	case appsv1beta1.TargetContainerModeMax:
		combine = func(acc *resource.Quantity, q resource.Quantity) {
			if q.Cmp(*acc) > 0 {
				*acc = q.DeepCopy()
			}
		}
	default:
		return aggregate{}, fmt.Errorf("unsupported targetContainersMode %q (want %q or %q)",
			mode, appsv1beta1.TargetContainerModeSum, appsv1beta1.TargetContainerModeMax)
	}

	agg := aggregate{limits: corev1.ResourceList{}, requests: corev1.ResourceList{}}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		var limit, request *resource.Quantity
		unlimited := false
		for i := range targets {
			res := targets[i].Resources
			if q, ok := res.Limits[name]; !ok {
				unlimited = true
			} else if limit == nil {
				limit = new(q.DeepCopy())
			} else {
				combine(limit, q)
			}
			if q, ok := res.Requests[name]; ok {
				if request == nil {
					request = new(q.DeepCopy())
				} else {
					combine(request, q)
				}
			}
		}
		if !unlimited && limit != nil {
			agg.limits[name] = *limit
		}
		if request != nil {
			agg.requests[name] = *request
		}
	}
	return agg, nil
}
