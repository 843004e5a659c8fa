package policy

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"sigs.k8s.io/yaml"
)

// The shipped policies, compiled by CompileRules.
//
//go:embed rules/*.yaml
var embeddedRules embed.FS

// Policy is the source of one policy file under policy/rules. Its shape
// follows a ValidatingAdmissionPolicy:
//
//	name: sidecarset                  # unique among the files
//	description: ...                  # free text
//	matchConditions:                  # optional; all must be true, or the policy is skipped
//	- name: ...
//	  expression: <bool>
//	variables:                        # optional; read as variables.<name>, evaluated
//	- name: <CEL identifier>          # lazily and at most once per request; a variable
//	  expression: <any type>          # may read the variables declared before it
//	validations:                      # each false result is a field error
//	- name: ...                       # unique within the policy
//	  expression: <bool>
//	  message: <fixed text>
//	  messageExpression: <string>     # optional, replaces message when usable
//	  reason: Invalid                 # field error type: Invalid (default), Forbidden,
//	                                  # Required, Duplicate or NotFound
//	  fieldPath: spec.containers      # required; the static field path of the error
//	  fieldPathExpression: <string>   # optional, a more precise path, such as
//	                                  # "spec.containers[2].volumeMounts[0].name"
//	warnings:                         # same shape as validations; each false result is
//	- ...                             # an admission warning "<fieldPath>: <message>"
//
// Expressions see object (the SidecarSet, typed as objectType declares) and
// oldObject (the previous SidecarSet on update, null on create). Absent list
// and map fields read as empty; absent scalars and objects need has(). The
// Kubernetes CEL libraries of version 1.37 and cel.bind are available.
//
// Each expression's cost is estimated when it compiles, with the variables
// it reads inlined, and must stay under StaticCostLimit. A variable read
// inside a comprehension is estimated once per iteration, although it runs
// once per request: bind it outside first, as in
// cel.bind(names, variables.volumeNames, object.spec.containers.all(c, c.name in names)).
type Policy struct {
	Name            string           `json:"name"`
	Description     string           `json:"description,omitempty"`
	MatchConditions []MatchCondition `json:"matchConditions,omitempty"`
	Variables       []Variable       `json:"variables,omitempty"`
	Validations     []Validation     `json:"validations,omitempty"`
	Warnings        []Validation     `json:"warnings,omitempty"`
}

// MatchCondition is a precondition of a policy.
type MatchCondition struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// Variable is a named expression shared by the expressions of a policy.
type Variable struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// Validation is one check of a policy: a bool expression and what to report
// when it is false.
type Validation struct {
	Name                string `json:"name"`
	Expression          string `json:"expression"`
	Message             string `json:"message,omitempty"`
	MessageExpression   string `json:"messageExpression,omitempty"`
	Reason              string `json:"reason,omitempty"`
	FieldPath           string `json:"fieldPath"`
	FieldPathExpression string `json:"fieldPathExpression,omitempty"`
}

// CompileRules compiles the policies shipped under policy/rules. An error
// names the file, the policy, the validation and the failing expression. It
// is meant to run once, at process start.
func CompileRules() (*Rules, error) {
	return compileFS(embeddedRules, "rules", StaticCostLimit)
}

// compileFS compiles every *.yaml policy file in dir of fsys, in file name
// order.
func compileFS(fsys fs.FS, dir string, staticLimit uint64) (*Rules, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	sources := make([]source, 0, len(files))
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		var p Policy
		if err := yaml.UnmarshalStrict(data, &p); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		sources = append(sources, source{origin: f, policy: p})
	}
	return compileSources(sources, staticLimit)
}

// Compile compiles policies given as values (the shipped ones come from
// CompileRules).
func Compile(policies ...Policy) (*Rules, error) {
	sources := make([]source, len(policies))
	for i, p := range policies {
		sources[i] = source{origin: fmt.Sprintf("policies[%d]", i), policy: p}
	}
	return compileSources(sources, StaticCostLimit)
}

// source is a policy and where it comes from, for error messages.
type source struct {
	origin string
	policy Policy
}
