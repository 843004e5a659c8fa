// Package authoring holds the SidecarSet authoring policy: the
// ValidatingAdmissionPolicy of sidecarset-authoring.yaml, which refuses a
// SidecarSet that injects privileged settings, Secret references or into
// every namespace unless its author holds an explicit permission for it.
//
// The API server evaluates the policy where it is installed (config/default
// installs it; under OLM the manager installs it). Where it is not, the
// operator's validating webhook evaluates the same file with the API
// server's own CEL admission library (k8s.io/apiserver), so both give the
// same answer and the same message.
package authoring

import (
	"bytes"
	"context"
	_ "embed" // the shipped policy
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	apiadmission "k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/celenv"
)

// manifest is the policy and its binding, as config/default installs them.
//
//go:embed sidecarset-authoring.yaml
var manifest []byte

// Name is the name of the ValidatingAdmissionPolicy and of its binding.
const Name = "sidecarset-operator-authoring"

// The custom verbs on sidecarsets.apps.kruise.io the policy checks.
const (
	// VerbInjectPrivileged allows privileged settings, host ports and
	// hostPath volumes.
	VerbInjectPrivileged = "inject-privileged"
	// VerbInjectSecrets allows Secret references and copies of the pod's own
	// environment and volumes (transferEnv, shareVolumePolicy).
	VerbInjectSecrets = "inject-secrets"
	// VerbInjectAllNamespaces allows a SidecarSet without spec.namespace.
	VerbInjectAllNamespaces = "inject-all-namespaces"
)

// MinKubernetesVersion is the oldest API server the operator supports: the
// policy's expressions must compile with the CEL library of this version,
// or the API server refuses to store the policy.
var MinKubernetesVersion = version.MajorMinor(1, 35)

// Manifests decodes the shipped policy and binding. Each call returns new
// objects.
func Manifests() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	var policy *admissionregistrationv1.ValidatingAdmissionPolicy
	var binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for doc := range bytes.SplitSeq(manifest, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, fmt.Errorf("sidecarset-authoring.yaml: %w", err)
		}
		var err error
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			policy = &admissionregistrationv1.ValidatingAdmissionPolicy{}
			err = yaml.UnmarshalStrict(doc, policy)
		case "ValidatingAdmissionPolicyBinding":
			binding = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			err = yaml.UnmarshalStrict(doc, binding)
		default:
			err = fmt.Errorf("unexpected kind %q", meta.Kind)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("sidecarset-authoring.yaml: %w", err)
		}
	}
	if policy == nil || binding == nil {
		return nil, nil, errors.New("sidecarset-authoring.yaml: want one ValidatingAdmissionPolicy and one binding")
	}
	return policy, binding, nil
}

// Policy is a compiled ValidatingAdmissionPolicy on SidecarSets, immutable
// and safe for concurrent use.
type Policy struct {
	name          string
	failurePolicy admissionregistrationv1.FailurePolicyType
	validations   []admissionregistrationv1.Validation
	conditions    plugincel.ConditionEvaluator
	// messages has one evaluator per validation with a messageExpression.
	messages []plugincel.ConditionEvaluator
	// namespaceFacts reads the variables NamespaceChecks needs (nil if the
	// policy lacks them).
	namespaceFacts plugincel.ConditionEvaluator
	// restored reads the variable RestoredByVerb reports (nil if the policy
	// lacks it).
	restored plugincel.ConditionEvaluator
}

// Load compiles the shipped policy with the CEL library of
// MinKubernetesVersion, as an API server of that version would when the
// policy is created.
func Load() (*Policy, error) {
	vap, _, err := Manifests()
	if err != nil {
		return nil, err
	}
	return Compile(vap, MinKubernetesVersion)
}

// celIdentifier and celReserved: the API server accepts only variable
// names that CEL can read as variables.<name>.
var (
	celIdentifier = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	celReserved   = []string{
		"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
		"if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while",
	}
)

// expression is a CEL expression with the types it may return.
type expression struct {
	source  string
	returns []*cel.Type
}

func (e expression) GetExpression() string    { return e.source }
func (e expression) ReturnTypes() []*cel.Type { return e.returns }

// variable is a named expression, read as variables.<name>.
type variable struct {
	expression
	name string
}

func (v variable) GetName() string { return v.name }

// Compile compiles a policy with the CEL library of the given Kubernetes
// version, as the API server does for a new policy: variables, validations
// and messageExpressions, with the authorizer available to all but the
// messages. Params and matchConditions are not supported (the shipped policy
// has neither); an expression that does not compile is an error.
func Compile(vap *admissionregistrationv1.ValidatingAdmissionPolicy, compatibility *version.Version) (*Policy, error) {
	spec := vap.Spec
	if spec.ParamKind != nil || len(spec.MatchConditions) > 0 || len(spec.AuditAnnotations) > 0 {
		return nil, fmt.Errorf("policy %s: paramKind, matchConditions and auditAnnotations are not supported", vap.Name)
	}
	compiler, err := celenv.Compiler(compatibility)
	if err != nil {
		return nil, err
	}
	withAuthorizer := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	for _, v := range spec.Variables {
		if !celIdentifier.MatchString(v.Name) || slices.Contains(celReserved, v.Name) {
			return nil, fmt.Errorf("policy %s: variable name %q is not a CEL identifier", vap.Name, v.Name)
		}
		r := compiler.CompileAndStoreVariable(variable{
			expression: expression{source: v.Expression, returns: []*cel.Type{cel.AnyType, cel.DynType}},
			name:       v.Name,
		}, withAuthorizer, environment.NewExpressions)
		if r.Error != nil {
			return nil, fmt.Errorf("policy %s: variable %s: %w", vap.Name, v.Name, r.Error)
		}
	}
	p := &Policy{name: vap.Name, failurePolicy: admissionregistrationv1.Fail, validations: spec.Validations}
	defined := make(map[string]bool, len(spec.Variables))
	for _, v := range spec.Variables {
		defined[v.Name] = true
	}
	if p.namespaceFacts, err = compileNamespaceFacts(compiler, defined); err != nil {
		return nil, fmt.Errorf("policy %s: %w", vap.Name, err)
	}
	if defined[strings.TrimPrefix(restoredFact, "variables.")] {
		p.restored = compiler.CompileCondition([]plugincel.ExpressionAccessor{expression{source: restoredFact, returns: []*cel.Type{cel.BoolType}}},
			withAuthorizer, environment.NewExpressions)
		if errs := p.restored.CompilationErrors(); len(errs) > 0 {
			return nil, fmt.Errorf("policy %s: %w", vap.Name, errors.Join(errs...))
		}
	}
	if spec.FailurePolicy != nil {
		p.failurePolicy = *spec.FailurePolicy
	}
	accessors := make([]plugincel.ExpressionAccessor, len(spec.Validations))
	for i, v := range spec.Validations {
		accessors[i] = expression{source: v.Expression, returns: []*cel.Type{cel.BoolType}}
	}
	p.conditions = compiler.CompileCondition(accessors, withAuthorizer, environment.NewExpressions)
	if errs := p.conditions.CompilationErrors(); len(errs) > 0 {
		return nil, fmt.Errorf("policy %s: validations: %w", vap.Name, errors.Join(errs...))
	}
	p.messages = make([]plugincel.ConditionEvaluator, len(spec.Validations))
	for i, v := range spec.Validations {
		if v.MessageExpression == "" {
			continue
		}
		// As in the API server, a message cannot call the authorizer.
		m := compiler.CompileCondition([]plugincel.ExpressionAccessor{expression{source: v.MessageExpression, returns: []*cel.Type{cel.StringType}}},
			plugincel.OptionalVariableDeclarations{}, environment.NewExpressions)
		if errs := m.CompilationErrors(); len(errs) > 0 {
			return nil, fmt.Errorf("policy %s: validations[%d] messageExpression: %w", vap.Name, i, errors.Join(errs...))
		}
		p.messages[i] = m
	}
	return p, nil
}

// Name is the policy's name.
func (p *Policy) Name() string { return p.name }

// Request is the admission request the policy judges: a CREATE, UPDATE or
// DELETE of a SidecarSet, as the API server sends it to the webhooks.
type Request struct {
	// Operation is CREATE, UPDATE or DELETE.
	Operation apiadmission.Operation
	// Object is the SidecarSet after mutation, nil on DELETE; OldObject is
	// the stored one, nil on CREATE.
	Object, OldObject *unstructured.Unstructured
	// User is the requesting user: the authorizer checks its permissions.
	User user.Info
	// DryRun is the request's dry-run flag.
	DryRun bool
}

// Denial is a validation the request failed.
type Denial struct {
	// Message names the field and the missing permission.
	Message string
	// Reason is the validation's reason (Forbidden for the shipped policy).
	Reason metav1.StatusReason
}

// Evaluate judges a request as the API server would, asking authz for the
// user's permissions, and returns the first failed validation (the API
// server reports the first one too), or nil if the request is allowed. An
// evaluation error follows the policy's failurePolicy: an error for Fail,
// nil for Ignore.
func (p *Policy) Evaluate(ctx context.Context, r Request, authz authorizer.UnconditionalAuthorizer) (*Denial, error) {
	if r.Object == nil && r.OldObject == nil {
		return nil, errors.New("no object to judge")
	}
	denial, err := p.evaluate(ctx, r, authz)
	if err != nil && p.failurePolicy == admissionregistrationv1.Ignore {
		return nil, nil
	}
	return denial, err
}

func (p *Policy) evaluate(ctx context.Context, r Request, authz authorizer.UnconditionalAuthorizer) (*Denial, error) {
	versioned, request := p.input(r)
	results, remaining, err := p.conditions.ForInput(ctx, versioned, request,
		plugincel.OptionalVariableBindings{Authorizer: authz}, nil, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", p.name, err)
	}
	for i, result := range results {
		if result.Error != nil {
			return nil, fmt.Errorf("policy %s: validations[%d]: %w", p.name, i, result.Error)
		}
		if result.EvalResult == celtypes.True {
			continue
		}
		v := p.validations[i]
		denial := &Denial{Message: p.message(ctx, i, versioned, request, remaining), Reason: metav1.StatusReasonInvalid}
		if v.Reason != nil {
			denial.Reason = *v.Reason
		}
		return denial, nil
	}
	return nil, nil
}

// Judge is the whole decision on a write where the API server does not
// evaluate the policy: the policy's validations (Evaluate), then the
// rights in each namespace (CheckNamespaces).
func (p *Policy) Judge(ctx context.Context, r Request, authz authorizer.UnconditionalAuthorizer) (*Denial, error) {
	denial, err := p.Evaluate(ctx, r, authz)
	if denial != nil || err != nil {
		return denial, err
	}
	return p.CheckNamespaces(ctx, r, authz)
}

// input is a request as the policy's expressions read it.
func (p *Policy) input(r Request) (*apiadmission.VersionedAttributes, *admissionv1.AdmissionRequest) {
	gvk := appsv1beta1.GroupVersion.WithKind("SidecarSet")
	gvr := appsv1beta1.GroupVersion.WithResource("sidecarsets")
	// A nil pointer in an interface is not a nil interface: pass nil.
	var obj, old runtime.Object
	name := ""
	if r.OldObject != nil {
		old, name = r.OldObject, r.OldObject.GetName()
	}
	if r.Object != nil {
		obj, name = r.Object, r.Object.GetName()
	}
	attrs := apiadmission.NewAttributesRecord(obj, old, gvk, "", name, gvr, "", r.Operation, nil, r.DryRun, r.User)
	versioned := &apiadmission.VersionedAttributes{
		Attributes:         attrs,
		VersionedKind:      gvk,
		VersionedObject:    apiadmission.NewLazyObject(obj),
		VersionedOldObject: apiadmission.NewLazyObject(old),
	}
	return versioned, plugincel.CreateAdmissionRequest(attrs, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
}

// message is the message of a failed validation, chosen as the API server
// chooses it: the messageExpression's result if it is a non-blank string
// within the size limit and on one line, else the static message, else the
// expression itself.
func (p *Policy) message(ctx context.Context, i int, versioned *apiadmission.VersionedAttributes, request *admissionv1.AdmissionRequest, budget int64) string {
	v := p.validations[i]
	if m := p.messages[i]; m != nil {
		results, _, err := m.ForInput(ctx, versioned, request, plugincel.OptionalVariableBindings{}, nil, budget)
		if err == nil && len(results) == 1 && results[0].Error == nil && results[0].EvalResult != nil {
			if s, ok := results[0].EvalResult.Value().(string); ok {
				s = strings.TrimSpace(s)
				if s != "" && len(s) <= celconfig.MaxEvaluatedMessageExpressionSizeBytes && !strings.Contains(s, "\n") {
					return s
				}
			}
		}
	}
	if s := strings.TrimSpace(v.Message); s != "" {
		return s
	}
	return "failed expression: " + strings.TrimSpace(v.Expression)
}
