package validate

import (
	"fmt"
	"maps"
	"slices"

	"github.com/blang/semver/v4"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemacel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

func crdCELRules() []Rule {
	return []Rule{
		{Name: RuleCRDCELMinKube, Doc: "Every CEL rule of the CRDs compiles in the CEL environment a kube-apiserver of minKubeVersion offers new expressions (its previous minor's features), so the CRD installs there too.", Check: checkCRDCELAtMinKube},
	}
}

// celCompatibility is the CEL compatibility version a kube-apiserver of
// that version validates new expressions with: its previous minor, so that
// a rollback to it keeps every stored expression valid.
func celCompatibility(kube semver.Version) *version.Version {
	minor := kube.Minor
	if minor > 0 {
		minor--
	}
	return version.MajorMinor(uint(kube.Major), uint(minor))
}

func checkCRDCELAtMinKube(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	minKube, err := semver.Parse(b.CSV.Spec.MinKubeVersion)
	if err != nil {
		return nil // reported by csv/min-kube-version
	}
	envSet := environment.MustBaseEnvSet(celCompatibility(minKube))
	var out []Finding
	for _, o := range b.CRDs() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
			continue // reported by crd/valid
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				continue
			}
			s, err := schema.NewStructural(internal)
			if err != nil {
				continue // reported by crd/valid
			}
			for _, msg := range compileRules(s, true, envSet, "") {
				out = append(out, errorf("%s: version %s: %s does not compile on Kubernetes %d.%d: %s",
					o.File, v.Name, msg.path, minKube.Major, minKube.Minor, msg.detail))
			}
		}
	}
	return out
}

type celProblem struct{ path, detail string }

// compileRules compiles the x-kubernetes-validations of a schema node and
// of every node below it.
func compileRules(s *schema.Structural, root bool, envSet *environment.EnvSet, path string) []celProblem {
	var out []celProblem
	if len(s.XValidations) > 0 {
		results, err := schemacel.Compile(s, model.SchemaDeclType(s, root), celconfig.PerCallLimit, envSet, schemacel.NewExpressionsEnvLoader())
		if err != nil {
			out = append(out, celProblem{pathOrRoot(path), err.Error()})
		}
		for i, r := range results {
			where := fmt.Sprintf("%s rule %q", pathOrRoot(path), s.XValidations[i].Rule)
			if r.Error != nil {
				out = append(out, celProblem{where, r.Error.Detail})
			}
			if r.MessageExpressionError != nil {
				out = append(out, celProblem{where, r.MessageExpressionError.Detail})
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		out = append(out, compileRules(&p, false, envSet, path+"."+name)...)
	}
	if s.Items != nil {
		out = append(out, compileRules(s.Items, false, envSet, path+"[*]")...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		out = append(out, compileRules(s.AdditionalProperties.Structural, false, envSet, path+"[*]")...)
	}
	return out
}

func pathOrRoot(path string) string {
	if path == "" {
		return "the root schema"
	}
	return path
}
