package validate

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/blang/semver/v4"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
)

// Capabilities are the operator capability levels OperatorHub accepts.
func Capabilities() []string {
	return []string{"Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"}
}

// Categories are the categories OperatorHub accepts without a custom list.
func Categories() []string {
	return []string{
		"AI/Machine Learning", "Application Runtime", "Big Data", "Cloud Provider", "Developer Tools",
		"Database", "Integration & Delivery", "Logging & Tracing", "Monitoring", "Modernization & Migration",
		"Networking", "OpenShift Optional", "Security", "Storage", "Streaming & Messaging", "Observability",
	}
}

// iconMediaTypes are the icon media types OperatorHub shows.
func iconMediaTypes() []string {
	return []string{"image/gif", "image/jpeg", "image/png", "image/svg+xml"}
}

// maxTileDescription is the length of the description OperatorHub shows on
// the operator's tile.
const maxTileDescription = 135

func hubRules() []Rule {
	return []Rule{
		{Name: RuleProvider, Doc: "provider.name is set (a provider URL must be a URL).", Check: checkProvider},
		{Name: RuleMaintainers, Doc: "There is a maintainer; each has a name and a valid email.", Check: checkMaintainers},
		{Name: RuleLinks, Doc: "Each link has a name and an http(s) URL.", Check: checkLinks},
		{Name: RuleIcon, Doc: "There is exactly one icon, base64 data of an allowed media type that the data matches (no icon is a warning).", Check: checkIcon},
		{Name: RuleHubAnnotations, Doc: "capabilities, categories, containerImage, createdAt (yyyy-mm-ddThh:mm:ssZ), support, description and alm-examples annotations are set; repository is a URL.", Check: checkHubAnnotations},
		{Name: RuleHubSpec, Doc: "displayName, description, keywords and maturity are set.", Check: checkHubSpec},
		{Name: RuleCapabilities, Doc: "The capabilities annotation is one of the capability levels.", Check: checkCapabilities},
		{Name: RuleCategories, Doc: "Every category is one of OperatorHub's categories.", Check: checkCategories},
		{Name: RuleDeprecatedAPIs, Doc: "No manifest uses an API removed from Kubernetes (an error when removed at or before minKubeVersion, else a warning).", Check: checkDeprecatedAPIs},
	}
}

func checkProvider(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	p := b.CSV.Spec.Provider
	var out []Finding
	if p.Name == "" {
		out = append(out, errorf("provider.name is not set"))
	}
	if p.URL != "" && !isHTTPURL(p.URL) {
		out = append(out, errorf("provider.url %q is not an http(s) URL", p.URL))
	}
	return out
}

func checkMaintainers(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	if len(b.CSV.Spec.Maintainers) == 0 {
		return []Finding{errorf("there is no maintainer")}
	}
	var out []Finding
	for i, m := range b.CSV.Spec.Maintainers {
		if m.Name == "" {
			out = append(out, errorf("maintainers[%d] has no name", i))
		}
		if a, err := mail.ParseAddress(m.Email); err != nil || a.Address != m.Email {
			out = append(out, errorf("maintainers[%d] email %q is not an email address", i, m.Email))
		}
	}
	return out
}

func checkLinks(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for i, l := range b.CSV.Spec.Links {
		if l.Name == "" {
			out = append(out, errorf("links[%d] has no name", i))
		}
		if !isHTTPURL(l.URL) {
			out = append(out, errorf("links[%d] url %q is not an http(s) URL", i, l.URL))
		}
	}
	return out
}

func isHTTPURL(s string) bool {
	u, err := url.ParseRequestURI(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func checkIcon(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	icons := b.CSV.Spec.Icon
	switch len(icons) {
	case 0:
		return []Finding{warnf("there is no icon")}
	case 1:
	default:
		return []Finding{errorf("there are %d icons; OperatorHub shows exactly one", len(icons))}
	}
	icon := icons[0]
	if !slices.Contains(iconMediaTypes(), icon.MediaType) {
		return []Finding{errorf("icon media type %q is not one of %v", icon.MediaType, iconMediaTypes())}
	}
	data, err := base64.StdEncoding.DecodeString(icon.Data)
	if err != nil || len(data) == 0 {
		return []Finding{errorf("icon base64data is not base64-encoded data")}
	}
	sniffed := http.DetectContentType(data)
	if icon.MediaType == "image/svg+xml" {
		if !bytes.Contains(data, []byte("<svg")) {
			return []Finding{errorf("icon data is not SVG (detected %s)", sniffed)}
		}
	} else if sniffed != icon.MediaType {
		return []Finding{errorf("icon data is %s, not %s", sniffed, icon.MediaType)}
	}
	return nil
}

func checkHubAnnotations(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	a := b.CSV.Metadata.Annotations
	var out []Finding
	for _, k := range []string{csv.AnnotationCapabilities, csv.AnnotationCategories, csv.AnnotationContainerImage,
		csv.AnnotationCreatedAt, csv.AnnotationSupport, csv.AnnotationDescription, csv.AnnotationALMExamples} {
		if a[k] == "" {
			out = append(out, errorf("annotation %s is not set", k))
		}
	}
	if v := a[csv.AnnotationCreatedAt]; v != "" {
		if _, err := time.Parse("2006-01-02T15:04:05Z", v); err != nil {
			out = append(out, errorf("createdAt %q is not yyyy-mm-ddThh:mm:ssZ", v))
		}
	}
	if v := a[csv.AnnotationRepository]; v != "" && !isHTTPURL(v) {
		out = append(out, errorf("repository %q is not an http(s) URL", v))
	}
	if v := a[csv.AnnotationDescription]; len(v) > maxTileDescription {
		out = append(out, warnf("the description annotation is %d characters; the tile shows %d", len(v), maxTileDescription))
	}
	return out
}

func checkHubSpec(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	s := b.CSV.Spec
	var out []Finding
	if s.DisplayName == "" {
		out = append(out, errorf("spec.displayName is not set"))
	}
	if strings.TrimSpace(s.Description) == "" {
		out = append(out, errorf("spec.description is not set"))
	}
	if len(s.Keywords) == 0 {
		out = append(out, errorf("spec.keywords is empty"))
	}
	if s.Maturity == "" {
		out = append(out, warnf("spec.maturity is not set"))
	}
	return out
}

func checkCapabilities(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	v, ok := b.CSV.Metadata.Annotations[csv.AnnotationCapabilities]
	if ok && !slices.Contains(Capabilities(), v) {
		return []Finding{errorf("capabilities %q is not one of %v", v, Capabilities())}
	}
	return nil
}

func checkCategories(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, c := range splitList(b.CSV.Metadata.Annotations[csv.AnnotationCategories]) {
		if !slices.Contains(Categories(), c) {
			out = append(out, errorf("category %q is not one of OperatorHub's categories", c))
		}
	}
	return out
}

// removedAPI is an API version Kubernetes no longer serves.
type removedAPI struct {
	groupVersion string
	kind         string // empty: every kind of the group version
	removedIn    semver.Version
}

// removedAPIs lists the API versions removed from Kubernetes 1.16 to 1.32
// (https://kubernetes.io/docs/reference/using-api/deprecation-guide/).
func removedAPIs() []removedAPI {
	v := func(minor uint64) semver.Version { return semver.Version{Major: 1, Minor: minor} }
	return []removedAPI{
		{"extensions/v1beta1", "", v(22)},
		{"apps/v1beta1", "", v(16)},
		{"apps/v1beta2", "", v(16)},
		{"apiextensions.k8s.io/v1beta1", "", v(22)},
		{"admissionregistration.k8s.io/v1beta1", "", v(22)},
		{"apiregistration.k8s.io/v1beta1", "", v(22)},
		{"authentication.k8s.io/v1beta1", "", v(22)},
		{"authorization.k8s.io/v1beta1", "", v(22)},
		{"certificates.k8s.io/v1beta1", "", v(22)},
		{"coordination.k8s.io/v1beta1", "", v(22)},
		{"networking.k8s.io/v1beta1", "", v(22)},
		{"rbac.authorization.k8s.io/v1beta1", "", v(22)},
		{"scheduling.k8s.io/v1beta1", "", v(22)},
		{"storage.k8s.io/v1beta1", "CSIStorageCapacity", v(27)},
		{"storage.k8s.io/v1beta1", "", v(22)},
		{"batch/v1beta1", "", v(25)},
		{"discovery.k8s.io/v1beta1", "", v(25)},
		{"events.k8s.io/v1beta1", "", v(25)},
		{"autoscaling/v2beta1", "", v(25)},
		{"policy/v1beta1", "", v(25)},
		{"node.k8s.io/v1beta1", "", v(25)},
		{"autoscaling/v2beta2", "", v(26)},
		{"flowcontrol.apiserver.k8s.io/v1beta1", "", v(26)},
		{"flowcontrol.apiserver.k8s.io/v1beta2", "", v(29)},
		{"flowcontrol.apiserver.k8s.io/v1beta3", "", v(32)},
	}
}

func checkDeprecatedAPIs(b *Bundle) []Finding {
	var minKube *semver.Version
	if b.CSV != nil {
		if v, err := semver.Parse(b.CSV.Spec.MinKubeVersion); err == nil {
			minKube = &v
		}
	}
	var out []Finding
	for _, o := range b.Objects {
		for _, r := range removedAPIs() {
			if o.GetAPIVersion() != r.groupVersion || (r.kind != "" && r.kind != o.GetKind()) {
				continue
			}
			if minKube == nil || !minKube.LT(r.removedIn) {
				out = append(out, errorf("%s: %s %s was removed in Kubernetes %d.%d", o.File, o.GetAPIVersion(), o.GetKind(), r.removedIn.Major, r.removedIn.Minor))
			} else {
				out = append(out, warnf("%s: %s %s is removed from Kubernetes %d.%d on", o.File, o.GetAPIVersion(), o.GetKind(), r.removedIn.Major, r.removedIn.Minor))
			}
			break
		}
	}
	return out
}
