package policy

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/ext"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/sidecarset-operator/sidecarset-operator/policy/celenv"
)

// Cost limits, in CEL cost units (the Kubernetes values).
const (
	// PerCallLimit bounds the actual cost of one evaluation of one expression.
	PerCallLimit = celconfig.PerCallLimit
	// RuntimeCostBudget bounds the actual cost of all the evaluations of one
	// Validate call (one admission request), variables and messages included.
	RuntimeCostBudget = celconfig.RuntimeCELCostBudget
	// StaticCostLimit bounds the estimated cost of each expression, with the
	// variables it reads inlined, for objects within the bounds objectType
	// declares. An expression over it is rejected when the policy loads, so
	// such objects never hit PerCallLimit.
	StaticCostLimit = celconfig.PerCallLimit
	// maxMessageLength is the longest messageExpression result used.
	maxMessageLength = celconfig.MaxEvaluatedMessageExpressionSizeBytes
)

// ErrOutOfBudget is wrapped by the evaluation errors caused by a cost limit:
// PerCallLimit for one expression, or RuntimeCostBudget for the request.
var ErrOutOfBudget = errors.New("CEL cost budget exhausted")

// celEnvironment is the one CEL environment of the process: the Kubernetes
// base environment, cel.bind, and the typed object and oldObject variables.
type celEnvironment struct {
	env       *cel.Env
	root      *apiservercel.DeclType
	estimator *sizeEstimator
}

// sharedEnvironment builds the environment once; it is immutable afterwards.
var sharedEnvironment = sync.OnceValues(func() (*celEnvironment, error) {
	root := objectType()
	envSet, err := celenv.Base(celenv.Policies).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			ext.Bindings(),
			cel.Variable("object", root.CelType()),
			cel.Variable("oldObject", root.CelType()),
		},
		DeclTypes: []*apiservercel.DeclType{root},
	})
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	env, err := envSet.Env(environment.NewExpressions)
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	return &celEnvironment{env: env, root: root, estimator: newSizeEstimator(root, "object", "oldObject")}, nil
})

// Rules are compiled policies, immutable and safe for concurrent use.
type Rules struct {
	root     *apiservercel.DeclType
	policies []*compiledPolicy
	budget   int64 // RuntimeCostBudget, but for tests
}

type compiledPolicy struct {
	matchConditions []*compiledExpr
	variables       []compiledVariable
	validations     []*compiledValidation
	warnings        []*compiledValidation
}

type compiledVariable struct {
	name string
	expr *compiledExpr
}

type compiledValidation struct {
	name          string // <policy>/<validation>
	expr          *compiledExpr
	message       string
	messageExpr   *compiledExpr
	errorType     field.ErrorType
	fieldPath     *field.Path
	fieldPathExpr *compiledExpr
}

type compiledExpr struct {
	where    string // e.g. policy "sidecarset" validations[2] "x" expression
	program  cel.Program
	estimate checker.CostEstimate // with the variables it reads inlined
}

// reasons maps a validation's reason to the field error type it produces.
var reasons = map[string]field.ErrorType{
	"":          field.ErrorTypeInvalid,
	"Invalid":   field.ErrorTypeInvalid,
	"Forbidden": field.ErrorTypeForbidden,
	"Required":  field.ErrorTypeRequired,
	"Duplicate": field.ErrorTypeDuplicate,
	"NotFound":  field.ErrorTypeNotFound,
}

var identifier = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

func compileSources(sources []source, staticLimit uint64) (*Rules, error) {
	ce, err := sharedEnvironment()
	if err != nil {
		return nil, err
	}
	rules := &Rules{root: ce.root, budget: RuntimeCostBudget}
	seen := map[string]string{}
	for _, s := range sources {
		if prev, dup := seen[s.policy.Name]; dup {
			return nil, fmt.Errorf("%s: policy name %q is already used by %s", s.origin, s.policy.Name, prev)
		}
		seen[s.policy.Name] = s.origin
		p, err := compilePolicy(ce, s.policy, staticLimit)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.origin, err)
		}
		rules.policies = append(rules.policies, p)
	}
	return rules, nil
}

// compiler compiles the expressions of one policy: the environment grows
// with each variable, and inline holds the variables' definitions (with the
// variables they read already inlined) for the cost estimate.
type compiler struct {
	ce     *celEnvironment
	limit  uint64 // StaticCostLimit, but for tests
	policy string
	env    *cel.Env
	inline []*cel.InlineVariable
}

func compilePolicy(ce *celEnvironment, p Policy, staticLimit uint64) (*compiledPolicy, error) {
	if p.Name == "" {
		return nil, errors.New("policy name is required")
	}
	c := &compiler{ce: ce, env: ce.env, limit: staticLimit, policy: p.Name}
	cp := &compiledPolicy{}
	where := func(list string, i int, name string) string {
		return fmt.Sprintf("policy %q %s[%d] %q", p.Name, list, i, name)
	}
	for i, m := range p.MatchConditions {
		e, err := c.compile(where("matchConditions", i, m.Name)+" expression", m.Expression, cel.BoolType)
		if err != nil {
			return nil, err
		}
		cp.matchConditions = append(cp.matchConditions, e)
	}
	varNames := map[string]bool{}
	for i, v := range p.Variables {
		w := where("variables", i, v.Name)
		if !identifier.MatchString(v.Name) || varNames[v.Name] {
			return nil, fmt.Errorf("%s: the name must be a CEL identifier, unique in the policy", w)
		}
		varNames[v.Name] = true
		e, err := c.addVariable(w+" expression", v)
		if err != nil {
			return nil, err
		}
		cp.variables = append(cp.variables, compiledVariable{name: v.Name, expr: e})
	}
	names := map[string]bool{}
	for _, list := range []struct {
		name string
		in   []Validation
		out  *[]*compiledValidation
	}{{"validations", p.Validations, &cp.validations}, {"warnings", p.Warnings, &cp.warnings}} {
		for i, v := range list.in {
			w := where(list.name, i, v.Name)
			if v.Name == "" || names[v.Name] {
				return nil, fmt.Errorf("%s: the name is required and must be unique in the policy", w)
			}
			names[v.Name] = true
			cv, err := c.compileValidation(w, v)
			if err != nil {
				return nil, err
			}
			*list.out = append(*list.out, cv)
		}
	}
	return cp, nil
}

func (c *compiler) compileValidation(where string, v Validation) (*compiledValidation, error) {
	cv := &compiledValidation{name: c.policy + "/" + v.Name, message: strings.TrimSpace(v.Message)}
	var ok bool
	if cv.errorType, ok = reasons[v.Reason]; !ok {
		return nil, fmt.Errorf("%s: unknown reason %q (want Invalid, Forbidden, Required, Duplicate or NotFound)", where, v.Reason)
	}
	if cv.message == "" || strings.ContainsAny(cv.message, "\r\n") {
		return nil, fmt.Errorf("%s: message is required, on one line (it is the fallback of messageExpression)", where)
	}
	path, err := parseFieldPath(v.FieldPath)
	if err != nil {
		return nil, fmt.Errorf("%s: fieldPath: %w", where, err)
	}
	cv.fieldPath = path
	if cv.expr, err = c.compile(where+" expression", v.Expression, cel.BoolType); err != nil {
		return nil, err
	}
	if v.MessageExpression != "" {
		if cv.messageExpr, err = c.compile(where+" messageExpression", v.MessageExpression, cel.StringType); err != nil {
			return nil, err
		}
	}
	if v.FieldPathExpression != "" {
		if cv.fieldPathExpr, err = c.compile(where+" fieldPathExpression", v.FieldPathExpression, cel.StringType); err != nil {
			return nil, err
		}
	}
	return cv, nil
}

// addVariable compiles a variable and declares it, as variables.<name>, to
// the expressions compiled after it.
func (c *compiler) addVariable(where string, v Variable) (*compiledExpr, error) {
	r, err := c.compileAST(where, v.Expression, nil)
	if err != nil {
		return nil, err
	}
	qualified := "variables." + v.Name
	env, err := c.env.Extend(cel.Variable(qualified, r.checked.OutputType()))
	if err != nil {
		return nil, fmt.Errorf("%s: declaring the variable: %w", where, err)
	}
	c.env = env
	c.inline = append(c.inline, cel.NewInlineVariableWithAlias(qualified, "@variables_"+v.Name, r.inlined))
	return r.expr, nil
}

func (c *compiler) compile(where, source string, want *cel.Type) (*compiledExpr, error) {
	r, err := c.compileAST(where, source, want)
	return r.expr, err
}

// compiled is an expression compiled, with its checked and inlined ASTs.
type compiled struct {
	expr    *compiledExpr
	checked *cel.Ast
	inlined *cel.Ast // the variables it reads replaced by their definitions
}

// compileAST type-checks an expression, checks its output type (when want
// is set), estimates its cost with the variables it reads inlined, and
// builds its program.
func (c *compiler) compileAST(where, source string, want *cel.Type) (compiled, error) {
	if strings.TrimSpace(source) == "" {
		return compiled{}, fmt.Errorf("%s is empty", where)
	}
	ast, iss := c.env.Compile(source)
	if iss.Err() != nil {
		return compiled{}, fmt.Errorf("%s: compile error: %w", where, iss.Err())
	}
	if want != nil && !ast.OutputType().IsExactType(want) {
		return compiled{}, fmt.Errorf("%s: the expression returns %s, want %s: %s", where, ast.OutputType(), want, source)
	}
	inlined := ast
	if len(c.inline) > 0 {
		opt, err := cel.NewStaticOptimizer(cel.NewInliningOptimizer(c.inline...))
		if err != nil {
			return compiled{}, fmt.Errorf("%s: %w", where, err)
		}
		if inlined, iss = opt.Optimize(c.env, ast); iss.Err() != nil {
			return compiled{}, fmt.Errorf("%s: inlining the variables for the cost estimate: %w", where, iss.Err())
		}
	}
	estimate, err := c.env.EstimateCost(inlined, c.ce.estimator)
	if err != nil {
		return compiled{}, fmt.Errorf("%s: estimating the cost: %w", where, err)
	}
	if estimate.Max > c.limit {
		return compiled{}, fmt.Errorf("%s: the estimated cost %s exceeds the limit %d; bound what it iterates over: %s",
			where, maxCost(estimate), c.limit, source)
	}
	program, err := c.env.Program(ast,
		cel.CostLimit(PerCallLimit),
		cel.InterruptCheckFrequency(celconfig.CheckFrequency))
	if err != nil {
		return compiled{}, fmt.Errorf("%s: %w", where, err)
	}
	return compiled{expr: &compiledExpr{where: where, program: program, estimate: estimate}, checked: ast, inlined: inlined}, nil
}

func maxCost(e checker.CostEstimate) string {
	if e.Max == math.MaxUint64 {
		return "(unbounded)"
	}
	return fmt.Sprint(e.Max)
}
