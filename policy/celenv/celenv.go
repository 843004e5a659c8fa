// Package celenv is where the operator's CEL environments come from: the
// Kubernetes base environment (k8s.io/apiserver/pkg/cel/environment) at a
// pinned compatibility version, so that a library upgrade cannot change what
// an expression may use without a change here. Each evaluator takes its
// environment from this package:
//
//   - the SidecarSet rules and the metadata policies (policy.Engine): Base at
//     Policies, extended with the typed object and oldObject;
//   - the authoring ValidatingAdmissionPolicy (policy/authoring): the API
//     server's admission compiler (Compiler) at the oldest supported
//     Kubernetes version, which is what that API server would compile;
//   - the pod webhooks' matchConditions, as kubectl sidecarset explain
//     evaluates them (cmd/kubectl-sidecarset/explain): the API server's own matcher
//     (Matcher) at the library's default version, as an API server built
//     from it compiles a stored webhook configuration.
package celenv

import (
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Policies pins the Kubernetes CEL library set the operator's own policies
// (policy.Engine) may use.
var Policies = version.MajorMinor(1, 37)

// Base is the Kubernetes base environment at the compatibility version.
func Base(compatibility *version.Version) *environment.EnvSet {
	return environment.MustBaseEnvSet(compatibility)
}

// Compiler is the API server's admission compiler (variables, conditions,
// the authorizer) at the compatibility version.
func Compiler(compatibility *version.Version) (*plugincel.CompositedCompiler, error) {
	return plugincel.NewCompositedCompiler(Base(compatibility))
}

// conditions compiles webhook matchConditions as the API server does.
var conditions = sync.OnceValue(func() plugincel.ConditionCompiler {
	return plugincel.NewConditionCompiler(Base(environment.DefaultCompatibilityVersion()))
})

// Matcher is the API server's matcher of a webhook's matchConditions:
// compiled as the API server compiles a stored configuration (the
// authorizer declared), evaluated with its cost budget. An error of any
// condition is returned as the match's error (failure policy Fail), so
// that the caller can tell "false" from "could not be evaluated".
func Matcher(webhookName string, conds []admissionregistrationv1.MatchCondition) matchconditions.Matcher {
	exprs := make([]plugincel.ExpressionAccessor, len(conds))
	for i, c := range conds {
		exprs[i] = &matchconditions.MatchCondition{Name: c.Name, Expression: c.Expression}
	}
	fail := admissionregistrationv1.Fail
	evaluator := conditions().CompileCondition(exprs, plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.StoredExpressions)
	return matchconditions.NewMatcher(evaluator, &fail, "webhook", "admit", webhookName)
}
