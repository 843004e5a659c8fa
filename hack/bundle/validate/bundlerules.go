package validate

import (
	"github.com/distribution/reference"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func bundleRules() []Rule {
	return []Rule{
		{Name: RuleOneCSV, Doc: "The bundle has exactly one ClusterServiceVersion.", Check: checkOneCSV},
		{Name: RuleOwnedCRDs, Doc: "Every owned CRD of the CSV is in the bundle, serving the version and kind the CSV names, and every CRD of the bundle is owned; no CRD twice.", Check: checkOwnedCRDs},
		{Name: RuleServiceAccounts, Doc: "No ServiceAccount manifest has the name of a deployment's service account (OLM creates those).", Check: checkServiceAccounts},
		{Name: RuleRelatedImages, Doc: "Every related image is a valid image reference.", Check: checkRelatedImages},
	}
}

func checkOneCSV(b *Bundle) []Finding {
	switch len(b.CSVFiles) {
	case 1:
		return nil
	case 0:
		return []Finding{errorf("the bundle has no ClusterServiceVersion")}
	default:
		return []Finding{errorf("the bundle has %d ClusterServiceVersions (%v); it must have one", len(b.CSVFiles), b.CSVFiles)}
	}
}

// crdsByName decodes the bundle's CRDs; those that do not decode are
// reported by the crd/valid rule.
func crdsByName(b *Bundle) (map[string]*apiextensionsv1.CustomResourceDefinition, []Finding) {
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	var dups []Finding
	for _, o := range b.CRDs() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
			continue
		}
		if _, dup := out[crd.Name]; dup {
			dups = append(dups, errorf("CRD %s is in the bundle twice", crd.Name))
		}
		out[crd.Name] = crd
	}
	return out, dups
}

func checkOwnedCRDs(b *Bundle) []Finding {
	crds, out := crdsByName(b)
	if b.CSV == nil {
		return out
	}
	owned := map[string]bool{}
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		owned[d.Name] = true
		crd, ok := crds[d.Name]
		if !ok {
			out = append(out, errorf("owned CRD %s is not in the bundle", d.Name))
			continue
		}
		if crd.Spec.Names.Kind != d.Kind {
			out = append(out, errorf("owned CRD %s names kind %s but the CRD's kind is %s", d.Name, d.Kind, crd.Spec.Names.Kind))
		}
		if !serves(crd, d.Version) {
			out = append(out, errorf("owned CRD %s names version %s, which the CRD does not serve", d.Name, d.Version))
		}
	}
	for _, name := range sortedKeys(crds) {
		if !owned[name] {
			out = append(out, errorf("CRD %s is in the bundle but not defined in the CSV's owned customresourcedefinitions", name))
		}
	}
	return out
}

func serves(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			return true
		}
	}
	return false
}

func checkServiceAccounts(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	accounts := map[string]bool{}
	for _, d := range b.CSV.Spec.Install.Spec.Deployments {
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		accounts[sa] = true
	}
	var out []Finding
	for _, o := range b.Objects {
		if o.GetKind() == "ServiceAccount" && accounts[o.GetName()] {
			out = append(out, errorf("%s: ServiceAccount %s is a deployment's service account, which OLM creates itself", o.File, o.GetName()))
		}
	}
	return out
}

func checkRelatedImages(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, ri := range b.CSV.Spec.RelatedImages {
		if ri.Image == "" {
			out = append(out, errorf("related image %q has no image", ri.Name))
			continue
		}
		if _, err := reference.ParseNormalizedNamed(ri.Image); err != nil {
			out = append(out, errorf("related image %q: %q is not an image reference: %v", ri.Name, ri.Image, err))
		}
	}
	return out
}
