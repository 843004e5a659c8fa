package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// check is a valid validation to build test policies from.
func check(name, expression string) Validation {
	return Validation{Name: name, Expression: expression, Message: "failed", FieldPath: "spec"}
}

func TestCompile_RejectsBrokenPolicies(t *testing.T) {
	t.Parallel()
	tooCostly := `object.spec.containers.all(a, object.spec.containers.all(b, object.spec.containers.all(c,
		object.spec.volumes.all(v, v.name != a.name + b.name + c.name))))`
	tests := []struct {
		name     string
		policies []Policy
		wantErr  []string // substrings, in order
	}{{
		name:     "a syntax error names the policy, the validation and the expression",
		policies: []Policy{{Name: "p", Validations: []Validation{check("my-check", "object.spec.containers.all(c, ")}}},
		wantErr:  []string{`policies[0]: policy "p" validations[0] "my-check" expression: compile error:`, "object.spec.containers.all(c, "},
	}, {
		name:     "a field the object type does not declare is a compile error",
		policies: []Policy{{Name: "p", Validations: []Validation{check("typo", "size(object.spec.containerz) == 0")}}},
		wantErr:  []string{`validations[0] "typo" expression: compile error:`, "undefined field 'containerz'"},
	}, {
		name:     "a validation must return bool",
		policies: []Policy{{Name: "p", Validations: []Validation{check("v", "object.metadata.name")}}},
		wantErr:  []string{`validations[0] "v" expression: the expression returns string, want bool`},
	}, {
		name: "a messageExpression must return string",
		policies: []Policy{{Name: "p", Validations: []Validation{{
			Name: "v", Expression: "true", Message: "m", FieldPath: "spec", MessageExpression: "size(object.spec.containers)",
		}}}},
		wantErr: []string{`validations[0] "v" messageExpression: the expression returns int, want string`},
	}, {
		name: "a fieldPathExpression must return string",
		policies: []Policy{{Name: "p", Warnings: []Validation{{
			Name: "w", Expression: "true", Message: "m", FieldPath: "spec", FieldPathExpression: "true",
		}}}},
		wantErr: []string{`warnings[0] "w" fieldPathExpression: the expression returns bool, want string`},
	}, {
		name:     "the static message is required",
		policies: []Policy{{Name: "p", Validations: []Validation{{Name: "v", Expression: "true", FieldPath: "spec"}}}},
		wantErr:  []string{`validations[0] "v": message is required, on one line`},
	}, {
		name:     "the static message fits on one line",
		policies: []Policy{{Name: "p", Validations: []Validation{{Name: "v", Expression: "true", Message: "a\nb", FieldPath: "spec"}}}},
		wantErr:  []string{`validations[0] "v": message is required, on one line`},
	}, {
		name:     "the static field path is required",
		policies: []Policy{{Name: "p", Validations: []Validation{{Name: "v", Expression: "true", Message: "m"}}}},
		wantErr:  []string{`validations[0] "v": fieldPath: the path is empty`},
	}, {
		name:     "the static field path must parse",
		policies: []Policy{{Name: "p", Validations: []Validation{{Name: "v", Expression: "true", Message: "m", FieldPath: "spec..containers"}}}},
		wantErr:  []string{`validations[0] "v": fieldPath: "spec..containers": invalid field name ""`},
	}, {
		name:     "an unknown reason is rejected",
		policies: []Policy{{Name: "p", Validations: []Validation{{Name: "v", Expression: "true", Message: "m", FieldPath: "spec", Reason: "Teapot"}}}},
		wantErr:  []string{`validations[0] "v": unknown reason "Teapot"`},
	}, {
		name:     "validation names are unique across validations and warnings",
		policies: []Policy{{Name: "p", Validations: []Validation{check("v", "true")}, Warnings: []Validation{check("v", "true")}}},
		wantErr:  []string{`warnings[0] "v": the name is required and must be unique in the policy`},
	}, {
		name:     "a variable name must be a CEL identifier",
		policies: []Policy{{Name: "p", Variables: []Variable{{Name: "bad-name", Expression: "1"}}}},
		wantErr:  []string{`variables[0] "bad-name": the name must be a CEL identifier, unique in the policy`},
	}, {
		name: "a variable reads only the variables declared before it",
		policies: []Policy{{Name: "p", Variables: []Variable{
			{Name: "first", Expression: "variables.second + 1"}, {Name: "second", Expression: "1"},
		}}},
		wantErr: []string{`variables[0] "first" expression: compile error:`, "undeclared reference to 'variables'"},
	}, {
		name:     "an expression over the static cost limit is rejected with its estimate",
		policies: []Policy{{Name: "p", Validations: []Validation{check("costly", tooCostly)}}},
		wantErr:  []string{`validations[0] "costly" expression: the estimated cost`, "exceeds the limit 1000000; bound what it iterates over"},
	}, {
		name: "a costly variable counts in the estimate of every expression that reads it",
		policies: []Policy{{
			Name:        "p",
			Variables:   []Variable{{Name: "names", Expression: "object.spec.containers.map(c, c.name)"}},
			Validations: []Validation{check("costly", "variables.names.all(a, variables.names.all(b, variables.names.all(c, a + b != c)))")},
		}},
		wantErr: []string{`validations[0] "costly" expression: the estimated cost`, "exceeds the limit"},
	}, {
		name:     "an empty expression is rejected",
		policies: []Policy{{Name: "p", MatchConditions: []MatchCondition{{Name: "m", Expression: " "}}}},
		wantErr:  []string{`matchConditions[0] "m" expression is empty`},
	}, {
		name:     "policy names are unique",
		policies: []Policy{{Name: "p"}, {Name: "p"}},
		wantErr:  []string{`policies[1]: policy name "p" is already used by policies[0]`},
	}, {
		name:     "a policy needs a name",
		policies: []Policy{{}},
		wantErr:  []string{"policies[0]: policy name is required"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(tc.policies...)
			if err == nil {
				t.Fatalf("Compile succeeded, want an error containing %q", tc.wantErr)
			}
			rest := err.Error()
			for _, want := range tc.wantErr {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("error %q\ndoes not contain, in order, %q", err, tc.wantErr)
				}
				rest = rest[i+len(want):]
			}
		})
	}
}

func TestCompileRules_BrokenRuleFileFailsLoudly(t *testing.T) {
	t.Parallel()
	good := "name: good\nvalidations:\n- name: ok\n  expression: 'true'\n  message: m\n  fieldPath: spec\n"
	tests := []struct {
		name    string
		file    string
		wantErr []string
	}{{
		name: "a bad expression names the file, the policy, the rule and the expression",
		file: "name: broken\nvalidations:\n- name: my-rule\n  expression: object.spec.containers.exists(c, c.nmae == 'x')\n  message: m\n  fieldPath: spec.containers\n",
		wantErr: []string{
			`rules/broken.yaml: policy "broken" validations[0] "my-rule" expression: compile error:`,
			"undefined field 'nmae'",
			"object.spec.containers.exists(c, c.nmae == 'x')",
		},
	}, {
		name:    "an unknown key in a rule file is an error",
		file:    "name: broken\nvalidations:\n- name: my-rule\n  expresion: 'true'\n",
		wantErr: []string{"rules/broken.yaml:", `unknown field "expresion"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{
				"rules/a-good.yaml": {Data: []byte(good)},
				"rules/broken.yaml": {Data: []byte(tc.file)},
			}
			_, err := compileFS(fsys, "rules", StaticCostLimit)
			if err == nil {
				t.Fatal("compileFS succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestEvaluate_MessagesAndFieldPaths(t *testing.T) {
	t.Parallel()
	withName := func(name string) *appsv1beta1.SidecarSet {
		return &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	failing := func(v Validation) Validation {
		v.Name, v.Expression, v.FieldPath = "v", "false", "spec.containers"
		if v.Message == "" {
			v.Message = "static message"
		}
		return v
	}
	invalid := func(path, detail string) field.ErrorList {
		return field.ErrorList{{Type: field.ErrorTypeInvalid, Field: path, BadValue: field.OmitValueType{}, Detail: detail, Origin: "p/v"}}
	}
	tests := []struct {
		name       string
		validation Validation
		obj        *appsv1beta1.SidecarSet
		want       field.ErrorList
	}{{
		name:       "without messageExpression the static message is used",
		validation: failing(Validation{}),
		want:       invalid("spec.containers", "static message"),
	}, {
		name:       "a messageExpression result replaces the message, trimmed",
		validation: failing(Validation{MessageExpression: "'  name is ' + object.metadata.name + '  '"}),
		obj:        withName("x"),
		want:       invalid("spec.containers", "name is x"),
	}, {
		name:       "a blank messageExpression result falls back to the message",
		validation: failing(Validation{MessageExpression: "'  '"}),
		want:       invalid("spec.containers", "static message"),
	}, {
		name:       "a multi-line messageExpression result falls back to the message",
		validation: failing(Validation{MessageExpression: "'a\\nb'"}),
		want:       invalid("spec.containers", "static message"),
	}, {
		name:       "a messageExpression result of 5KiB is used",
		validation: failing(Validation{MessageExpression: "object.metadata.name"}),
		obj:        withName(strings.Repeat("n", 5*1024)),
		want:       invalid("spec.containers", strings.Repeat("n", 5*1024)),
	}, {
		name:       "a messageExpression result over 5KiB falls back to the message",
		validation: failing(Validation{MessageExpression: "object.metadata.name"}),
		obj:        withName(strings.Repeat("n", 5*1024+1)),
		want:       invalid("spec.containers", "static message"),
	}, {
		name:       "a messageExpression that fails at runtime falls back to the message",
		validation: failing(Validation{MessageExpression: "object.spec.containers[3].name"}),
		want:       invalid("spec.containers", "static message"),
	}, {
		name:       "a fieldPathExpression result replaces the field path",
		validation: failing(Validation{FieldPathExpression: "'spec.containers[' + string(1 + 1) + '].volumeMounts[0].name'"}),
		want:       invalid("spec.containers[2].volumeMounts[0].name", "static message"),
	}, {
		name:       "a fieldPathExpression result that does not parse falls back to the field path",
		validation: failing(Validation{FieldPathExpression: "'spec.containers[2'"}),
		want:       invalid("spec.containers", "static message"),
	}, {
		name:       "a fieldPathExpression that fails at runtime falls back to the field path",
		validation: failing(Validation{FieldPathExpression: "object.spec.containers[0].name"}),
		want:       invalid("spec.containers", "static message"),
	}, {
		name:       "the reason sets the field error type",
		validation: failing(Validation{Reason: "Forbidden"}),
		want: field.ErrorList{{
			Type: field.ErrorTypeForbidden, Field: "spec.containers", BadValue: field.OmitValueType{}, Detail: "static message", Origin: "p/v",
		}},
	}, {
		name:       "a passing validation reports nothing",
		validation: Validation{Name: "v", Expression: "true", Message: "m", FieldPath: "spec"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rules, err := Compile(Policy{Name: "p", Validations: []Validation{tc.validation}})
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			obj := tc.obj
			if obj == nil {
				obj = withName("x")
			}
			got, err := rules.Evaluate(t.Context(), obj, nil)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if diff := cmp.Diff(tc.want, got.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvaluate_WarningsAndMatchConditions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		policy       Policy
		obj, old     *appsv1beta1.SidecarSet
		wantErrors   int
		wantWarnings []string
	}{{
		name: "a failed warning is reported as <field path>: <message>",
		policy: Policy{Name: "p", Warnings: []Validation{{
			Name: "w", Expression: "false", Message: "careful", FieldPath: "spec.volumes",
		}}},
		wantWarnings: []string{"spec.volumes: careful"},
	}, {
		name: "a false match condition skips the policy",
		policy: Policy{Name: "p",
			MatchConditions: []MatchCondition{{Name: "updates", Expression: "oldObject != null"}},
			Validations:     []Validation{check("v", "false")},
			Warnings:        []Validation{check("w", "false")},
		},
	}, {
		name: "true match conditions run the policy",
		policy: Policy{Name: "p",
			MatchConditions: []MatchCondition{{Name: "updates", Expression: "oldObject != null"}, {Name: "always", Expression: "true"}},
			Validations:     []Validation{check("v", "false")},
		},
		old:        validSidecarSet(),
		wantErrors: 1,
	}, {
		name: "oldObject is null on create",
		policy: Policy{Name: "p", Warnings: []Validation{{
			Name: "w", Expression: "oldObject != null", Message: "create", FieldPath: "metadata",
		}}},
		wantWarnings: []string{"metadata: create"},
	}, {
		name: "oldObject is the previous version on update",
		policy: Policy{Name: "p", Warnings: []Validation{{
			Name: "w", Expression: "oldObject == null || oldObject.metadata.name == 'old'", Message: "update", FieldPath: "metadata",
		}}},
		old:          &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
		wantWarnings: []string{"metadata: update"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rules, err := Compile(tc.policy)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			obj := tc.obj
			if obj == nil {
				obj = validSidecarSet()
			}
			got, err := rules.Evaluate(t.Context(), obj, tc.old)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if len(got.Errors) != tc.wantErrors {
				t.Errorf("errors = %v, want %d", got.Errors, tc.wantErrors)
			}
			if diff := cmp.Diff(tc.wantWarnings, got.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvaluate_VariablesAreLazyAndEvaluatedOnce(t *testing.T) {
	t.Parallel()
	broken := Variable{Name: "broken", Expression: "object.spec.containers[40].name"}
	t.Run("a variable no evaluated expression reads is never evaluated", func(t *testing.T) {
		t.Parallel()
		rules, err := Compile(Policy{Name: "p",
			MatchConditions: []MatchCondition{{Name: "never", Expression: "false"}},
			Variables:       []Variable{broken},
			Validations:     []Validation{check("v", "variables.broken == ''")},
		})
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		if _, err := rules.Evaluate(t.Context(), validSidecarSet(), nil); err != nil {
			t.Errorf("Validate: %v, want no error", err)
		}
	})
	t.Run("a variable that fails makes the expression reading it fail, naming both", func(t *testing.T) {
		t.Parallel()
		rules, err := Compile(Policy{Name: "p", Variables: []Variable{broken}, Validations: []Validation{check("v", "variables.broken == ''")}})
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		_, err = rules.Evaluate(t.Context(), validSidecarSet(), nil)
		for _, want := range []string{`policy "p" validations[0] "v" expression: evaluation failed:`, `variables[0] "broken" expression`} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Validate error = %v, want it to contain %q", err, want)
			}
		}
	})
	t.Run("a variable read by several expressions is evaluated once", func(t *testing.T) {
		t.Parallel()
		costWith := func(readers int) int64 {
			p := Policy{Name: "p", Variables: []Variable{{Name: "names", Expression: "object.spec.containers.map(c, c.name + c.name)"}}}
			for i := range readers {
				p.Validations = append(p.Validations, check(strings.Repeat("v", i+1), "size(variables.names) > 0"))
			}
			rules, err := Compile(p)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			res, err := rules.Evaluate(t.Context(), atTheBounds(), nil)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			return res.Cost
		}
		one, five := costWith(1), costWith(5)
		variable := one - 3 // what one reader costs besides the variable: size, >, the variable lookup
		if extra := five - one; extra >= variable {
			t.Errorf("4 more readers cost %d more, as much as the variable itself (%d): it is evaluated more than once", extra, variable)
		}
	})
}

func TestEvaluate_BudgetAndCancellation(t *testing.T) {
	t.Parallel()
	policy := Policy{Name: "p",
		Variables:   []Variable{{Name: "names", Expression: "object.spec.containers.map(c, c.name)"}},
		Validations: []Validation{check("first", "size(variables.names) >= 0"), check("second", "true")},
	}
	t.Run("running out of the request budget stops the evaluation with ErrOutOfBudget", func(t *testing.T) {
		t.Parallel()
		rules, err := Compile(policy)
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		rules.budget = 50
		res, err := rules.Evaluate(t.Context(), atTheBounds(), nil)
		if !errors.Is(err, ErrOutOfBudget) {
			t.Fatalf("Validate error = %v, want ErrOutOfBudget", err)
		}
		if !strings.Contains(err.Error(), `policy "p" variables[0] "names" expression`) {
			t.Errorf("error %q does not name the expression that ran out", err)
		}
		if res.Cost <= rules.budget || res.Cost > rules.budget+PerCallLimit {
			t.Errorf("cost = %d, want in (%d, %d]", res.Cost, rules.budget, rules.budget+PerCallLimit)
		}
	})
	t.Run("a cancelled context stops the evaluation", func(t *testing.T) {
		t.Parallel()
		rules, err := Compile(policy)
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err = rules.Evaluate(ctx, atTheBounds(), nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Validate error = %v, want context.Canceled", err)
		}
	})
}
