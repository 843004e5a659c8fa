package authoring

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiadmission "k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/util/workqueue"
)

// The policy's variables that say which rights a write needs in which
// namespaces (sidecarset-authoring.yaml). The policy computes them; the
// checks themselves, one per namespace, are made here: the API server
// allows a policy about 28 authorization checks per request, and a
// SidecarSet may name a hundred namespaces.
var namespaceFacts = []string{
	"variables.reachNamespaces",
	"variables.newReach",
	"variables.reachField",
	"variables.evictionField",
	"variables.resizeField",
}

// everyNamespace is the policy's name for a reach beyond namespaces named
// one by one.
const everyNamespace = "*"

// NamespaceCheck is a right the author of a write must hold in each of
// some namespaces.
type NamespaceCheck struct {
	// Verb, Resource and Subresource name the right, on the core API group.
	Verb, Resource, Subresource string
	// Namespaces are the namespaces, in the policy's order; "" is every
	// namespace (a cluster-wide right).
	Namespaces []string
	// Field is the field of the write that needs the right.
	Field string
	// Why says what the operator would do there for the author.
	Why string
}

// right is the check's right as written in messages: "create pods",
// "create pods/eviction".
func (c NamespaceCheck) right() string {
	if c.Subresource == "" {
		return c.Verb + " " + c.Resource
	}
	return c.Verb + " " + c.Resource + "/" + c.Subresource
}

// compileNamespaceFacts compiles the expressions NamespaceChecks reads, or
// returns nil if the policy does not define the variables (a policy other
// than the shipped one).
func compileNamespaceFacts(compiler plugincel.ConditionCompiler, variables map[string]bool) (plugincel.ConditionEvaluator, error) {
	for _, f := range namespaceFacts {
		if !variables[strings.TrimPrefix(f, "variables.")] {
			return nil, nil
		}
	}
	accessors := make([]plugincel.ExpressionAccessor, len(namespaceFacts))
	for i, f := range namespaceFacts {
		accessors[i] = expression{source: f, returns: []*cel.Type{cel.AnyType, cel.DynType}}
	}
	facts := compiler.CompileCondition(accessors, plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
	if errs := facts.CompilationErrors(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return facts, nil
}

// NamespaceChecks returns the rights the author of a write must hold in
// the namespaces it reaches: create pods in each namespace of the old and
// the new reach named one by one (none for the operator's own pause),
// create pods/eviction in the new reach when the write has the rollout
// evict pods for its author (recreate-pods), patch pods/resize there when
// it changes a sidecar's resources. authz answers the policy's own checks
// (the pause-rollouts verb).
func (p *Policy) NamespaceChecks(ctx context.Context, r Request, authz authorizer.UnconditionalAuthorizer) ([]NamespaceCheck, error) {
	if p.namespaceFacts == nil {
		return nil, fmt.Errorf("policy %s: it does not define the variables %s", p.name, strings.Join(namespaceFacts, ", "))
	}
	versioned, request := p.input(r)
	results, _, err := p.namespaceFacts.ForInput(ctx, versioned, request,
		plugincel.OptionalVariableBindings{Authorizer: authz}, nil, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", p.name, err)
	}
	values := make([]ref.Val, len(results))
	for i, result := range results {
		if result.Error != nil {
			return nil, fmt.Errorf("policy %s: %s: %w", p.name, namespaceFacts[i], result.Error)
		}
		values[i] = result.EvalResult
	}
	reach, err1 := stringsOf(values[0])
	newReach, err2 := stringsOf(values[1])
	reachField, err3 := stringOf(values[2])
	evictionField, err4 := stringOf(values[3])
	resizeField, err5 := stringOf(values[4])
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, fmt.Errorf("policy %s: %w", p.name, err)
	}
	var checks []NamespaceCheck
	if len(reach) > 0 {
		checks = append(checks, NamespaceCheck{Verb: "create", Resource: "pods", Namespaces: reach, Field: reachField,
			Why: operation(r.Operation) + " a SidecarSet that injects into the pods of " + namespacesPhrase(reach) + spelled(reach)})
	}
	// A reach beyond namespaces named one by one needs the right in every
	// namespace.
	where := make([]string, len(newReach))
	for i, ns := range newReach {
		if ns != everyNamespace {
			where[i] = ns
		}
	}
	if evictionField != "" && len(where) > 0 {
		checks = append(checks, NamespaceCheck{Verb: "create", Resource: "pods", Subresource: "eviction", Namespaces: where, Field: evictionField,
			Why: "the operator evicts, for the SidecarSet's author, the pods it selects and cannot upgrade in place (recreate-pods)"})
	}
	if resizeField != "" && len(where) > 0 {
		checks = append(checks, NamespaceCheck{Verb: "patch", Resource: "pods", Subresource: "resize", Namespaces: where, Field: resizeField,
			Why: "the operator resizes, for the SidecarSet's author, the running pods it selects (pods/resize)"})
	}
	return checks, nil
}

// CheckNamespaces judges the rights of NamespaceChecks: each right is
// asked once for every namespace (a cluster-wide grant answers for all),
// then, if not granted there, in each namespace (concurrently, at most
// Parallelism at a time). It returns the first check the user fails, naming
// the namespaces where the right is missing, or nil.
func (p *Policy) CheckNamespaces(ctx context.Context, r Request, authz authorizer.UnconditionalAuthorizer) (*Denial, error) {
	checks, err := p.NamespaceChecks(ctx, r, authz)
	if err != nil {
		return nil, err
	}
	for _, c := range checks {
		missing, err := Missing(ctx, r, c, authz)
		if err != nil {
			return nil, err
		}
		if len(missing) > 0 {
			return &Denial{Message: c.message(r, missing), Reason: metav1.StatusReasonForbidden}, nil
		}
	}
	return nil, nil
}

// Parallelism is how many authorization checks CheckNamespaces has in
// flight for one request.
const Parallelism = 16

// Missing returns the namespaces of a check, in its order, where the user
// of the request lacks the right ("" if it is a cluster-wide one).
func Missing(ctx context.Context, r Request, c NamespaceCheck, authz authorizer.UnconditionalAuthorizer) ([]string, error) {
	allowed := func(ns string) (bool, error) {
		decision, _, err := authz.Authorize(ctx, authorizer.AttributesRecord{
			User: r.User, Verb: c.Verb, Resource: c.Resource, Subresource: c.Subresource, Namespace: ns, ResourceRequest: true,
		})
		return decision == authorizer.DecisionAllow, err
	}
	everywhere, err := allowed("")
	if err != nil || everywhere {
		return nil, err
	}
	denied := make([]bool, len(c.Namespaces))
	var mu sync.Mutex
	var errs []error
	workqueue.ParallelizeUntil(ctx, Parallelism, len(c.Namespaces), func(i int) {
		if c.Namespaces[i] == "" {
			denied[i] = true
			return
		}
		ok, err := allowed(c.Namespaces[i])
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
		denied[i] = !ok
	})
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return nil, err
	}
	var missing []string
	for i, d := range denied {
		if d {
			missing = append(missing, c.Namespaces[i])
		}
	}
	return missing, nil
}

// maxNamed is how many namespaces a message names before it counts the
// rest.
const maxNamed = 10

// message words a failed check: the field, what the write would do, the
// right, and where the user lacks it.
func (c NamespaceCheck) message(r Request, missing []string) string {
	user := r.User.GetName()
	single := len(c.Namespaces) == 1
	if c.Subresource == "" {
		// The reach, worded as the policy worded it when it checked it: its
		// Why names the namespaces.
		if single {
			return fmt.Sprintf(`%s: %s requires permission to %s in namespace %q, which user %q does not have`,
				c.Field, c.Why, c.right(), c.Namespaces[0], user)
		}
		return fmt.Sprintf(`%s: %s requires permission to %s in each of them, which user %q does not have in %s`,
			c.Field, c.Why, c.right(), user, namespacesPhrase(missing))
	}
	if single {
		return fmt.Sprintf(`%s: %s; that requires permission to %s in %s, which user %q does not have`,
			c.Field, c.Why, c.right(), namespacesPhrase(c.Namespaces), user)
	}
	return fmt.Sprintf(`%s: %s; that requires permission to %s in each of %s, which user %q does not have in %s`,
		c.Field, c.Why, c.right(), namespacesPhrase(c.Namespaces), user, namespacesPhrase(missing))
}

// namespacesPhrase names namespaces: `namespace "a"`, `namespaces "a",
// "b"`, `every namespace`, at most maxNamed of them.
func namespacesPhrase(names []string) string {
	if len(names) == 1 && names[0] == "" {
		return "every namespace"
	}
	quoted := make([]string, 0, min(len(names), maxNamed))
	for _, n := range names[:min(len(names), maxNamed)] {
		if n == "" {
			n = "every namespace"
		}
		quoted = append(quoted, fmt.Sprintf("%q", n))
	}
	phrase := "namespaces " + strings.Join(quoted, ", ")
	if len(names) == 1 {
		phrase = "namespace " + quoted[0]
	}
	if more := len(names) - maxNamed; more > 0 {
		phrase += fmt.Sprintf(" and %d more", more)
	}
	return phrase
}

// spelled says how a single namespace is usually written.
func spelled(names []string) string {
	if len(names) == 1 {
		return " (v1alpha1 spec.namespace)"
	}
	return ""
}

// operation is the gerund of a write, as messages say it.
func operation(op apiadmission.Operation) string {
	switch op {
	case apiadmission.Create:
		return "creating"
	case apiadmission.Delete:
		return "deleting"
	}
	return "changing"
}

func stringOf(v ref.Val) (string, error) {
	s, ok := v.Value().(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %v", v.Type())
	}
	return s, nil
}

func stringsOf(v ref.Val) ([]string, error) {
	native, err := v.ConvertToNative(stringSliceType)
	if err != nil {
		return nil, fmt.Errorf("want a list of strings: %w", err)
	}
	return native.([]string), nil
}

var stringSliceType = reflect.TypeFor[[]string]()
