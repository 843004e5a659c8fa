package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// Limits of a whitelist, so that a ConfigMap cannot make admission slow.
const (
	// MaxWhitelistRules is the largest number of rules.
	MaxWhitelistRules = 64
	// MaxWhitelistPatterns is the largest number of patterns, all rules together.
	MaxWhitelistPatterns = 256
	// MaxPatternLength is the longest pattern, in bytes.
	MaxPatternLength = 1024
	// maxListedPatterns is how many patterns an error message lists.
	maxListedPatterns = 8
)

// Whitelist is the parsed SidecarSet_PatchPodMetadata_WhiteList of the
// kruise-configuration ConfigMap: which pod annotation keys the
// patchPodMetadata of a SidecarSet may write. It is immutable; its patterns
// are compiled once, when it is parsed.
//
// The format is OpenKruise's:
//
//	{"rules": [{"selector": <LabelSelector over SidecarSet labels, optional>,
//	            "allowedAnnotationKeyExprs": ["^oom-score$", ...]}]}
//
// A rule applies to the SidecarSets its selector matches; without a
// selector, to every SidecarSet. A key is allowed when it matches a pattern
// of an applying rule. Patterns are Go (RE2) regular expressions and, as in
// OpenKruise, unanchored: "oom" allows "oom-score" and "my-oom". Write
// ^...$ to match whole keys.
type Whitelist struct {
	rules    []whitelistRule
	warnings []string
}

type whitelistRule struct {
	selector labels.Selector // nil: every SidecarSet
	patterns []*regexp.Regexp
}

// whitelistRuleSource is one rule as written in the ConfigMap.
type whitelistRuleSource struct {
	Selector                  *metav1.LabelSelector `json:"selector,omitempty"`
	AllowedAnnotationKeyExprs []string              `json:"allowedAnnotationKeyExprs"`
}

// Warnings are the surprising but accepted parts of the whitelist, such as
// unanchored patterns, each prefixed with where it is.
func (w *Whitelist) Warnings() []string {
	return slices.Clone(w.warnings)
}

// ParseWhitelist parses and compiles a whitelist. Unknown fields are
// errors, so a misspelled key (such as annotationKeyExprs) is reported
// rather than silently allowing nothing; so are invalid selectors and
// patterns, and whitelists over the limits. Each error names the rule index
// and the pattern.
func ParseWhitelist(data string) (*Whitelist, error) {
	var doc struct {
		Rules []json.RawMessage `json:"rules"`
	}
	if err := decodeStrict([]byte(data), &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", appsv1beta1.PatchPodMetadataWhiteListKey, err)
	}
	if len(doc.Rules) > MaxWhitelistRules {
		return nil, fmt.Errorf("%s: %d rules, the limit is %d", appsv1beta1.PatchPodMetadataWhiteListKey, len(doc.Rules), MaxWhitelistRules)
	}
	w := &Whitelist{}
	if len(doc.Rules) == 0 {
		w.warnings = append(w.warnings, "rules: the whitelist has no rule, so no patchPodMetadata annotation is allowed")
	}
	total := 0
	for i, raw := range doc.Rules {
		where := fmt.Sprintf("rules[%d]", i)
		var src whitelistRuleSource
		if err := decodeStrict(raw, &src); err != nil {
			return nil, fmt.Errorf("%s: %w (a rule has the fields selector and allowedAnnotationKeyExprs)", where, err)
		}
		rule := whitelistRule{}
		if src.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(src.Selector)
			if err != nil {
				return nil, fmt.Errorf("%s.selector: %w", where, err)
			}
			rule.selector = sel
		}
		if len(src.AllowedAnnotationKeyExprs) == 0 {
			w.warnings = append(w.warnings, where+".allowedAnnotationKeyExprs: the rule allows no annotation key")
		}
		total += len(src.AllowedAnnotationKeyExprs)
		if total > MaxWhitelistPatterns {
			return nil, fmt.Errorf("%s.allowedAnnotationKeyExprs: more than %d patterns in the whitelist", where, MaxWhitelistPatterns)
		}
		for j, expr := range src.AllowedAnnotationKeyExprs {
			at := fmt.Sprintf("%s.allowedAnnotationKeyExprs[%d]", where, j)
			if len(expr) > MaxPatternLength {
				return nil, fmt.Errorf("%s: the pattern is %d bytes long, the limit is %d", at, len(expr), MaxPatternLength)
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, fmt.Errorf("%s: invalid pattern %q: %w", at, expr, err)
			}
			if !strings.HasPrefix(expr, "^") || !strings.HasSuffix(expr, "$") {
				w.warnings = append(w.warnings, fmt.Sprintf(
					"%s: pattern %q is not anchored, so it allows every key that contains a match; write ^...$ to match whole keys", at, expr))
			}
			rule.patterns = append(rule.patterns, re)
		}
		w.rules = append(w.rules, rule)
	}
	return w, nil
}

// decodeStrict decodes one JSON value, rejecting unknown fields and
// trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the value is empty, want a JSON object")
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}

// Keys is a whitelist's decision on the patchPodMetadata annotation keys of
// one SidecarSet: every key, no key (for one reason, about the whole
// field), or the keys matching the patterns of the rules that select the
// SidecarSet. The validating webhook checks a SidecarSet's keys with it when
// the SidecarSet is written, and policy/podmeta checks each key again
// when injection or an upgrade writes it: the whitelist may have changed
// since, and a pinned revision may patch keys the live spec does not.
type Keys struct {
	// all allows every key.
	all bool
	// none, when set, is why no key is allowed (the whitelist is missing or
	// invalid).
	none string
	// patterns allow the keys matching one of them; reason says why the
	// others are not allowed.
	patterns []*regexp.Regexp
	reason   string
}

// Check returns nil if the key is allowed, else why not, in OpenKruise's
// words.
func (k Keys) Check(key string) error {
	switch {
	case k.all:
		return nil
	case k.none != "":
		return errors.New(k.none)
	case slices.ContainsFunc(k.patterns, func(re *regexp.Regexp) bool { return re.MatchString(key) }):
		return nil
	}
	return fmt.Errorf("sidecarSet patch metadata annotation(%s) is not allowed: %s", key, k.reason)
}

// fieldErrors are the field errors of a SidecarSet's patchPodMetadata under
// the decision: one for the whole field when no key is allowed, else one per
// key not allowed.
func (k Keys) fieldErrors(patches []appsv1beta1.SidecarSetPatchPodMetadata) field.ErrorList {
	if len(patches) == 0 || k.all {
		return nil
	}
	base := field.NewPath("spec", "patchPodMetadata")
	if k.none != "" {
		return field.ErrorList{field.Forbidden(base, k.none)}
	}
	var errs field.ErrorList
	for i, p := range patches {
		for _, key := range slices.Sorted(maps.Keys(p.Annotations)) {
			if err := k.Check(key); err != nil {
				errs = append(errs, field.Forbidden(base.Index(i).Child("annotations").Key(key), err.Error()))
			}
		}
	}
	return errs
}

// whitelistKeys decides the keys a SidecarSet with the given labels may
// patch. A nil whitelist means the ConfigMap or its key is missing.
// defaultsAllowed is the SidecarSetPatchPodMetadataDefaultsAllowed feature
// gate: it allows everything when the whitelist is missing or none of its
// rules applies to the SidecarSet, as in OpenKruise.
//
// labelsGrant says whether the rules selecting the SidecarSet by its labels
// apply to it: only when its author held inject-privileged. OpenKruise
// applies them to any SidecarSet carrying the labels, which any author may
// put on their own SidecarSet; here such a rule, withheld, still counts as
// one that selects the SidecarSet (the feature gate does not then allow
// every key), and the reason names it.
func whitelistKeys(w *Whitelist, defaultsAllowed bool, setLabels map[string]string, labelsGrant bool) Keys {
	if w == nil {
		if defaultsAllowed {
			return Keys{all: true}
		}
		return Keys{none: fmt.Sprintf(
			"SidecarSet patch metadata whitelist not found: the %s ConfigMap or its %s key is missing; "+
				"add a rule allowing these annotation keys, or turn on the SidecarSetPatchPodMetadataDefaultsAllowed feature gate",
			appsv1beta1.ConfigurationConfigMapName, appsv1beta1.PatchPodMetadataWhiteListKey)}
	}
	var applying, withheld []int
	var patterns []*regexp.Regexp
	for i, r := range w.rules {
		switch {
		case r.selector == nil:
		case !r.selector.Matches(labels.Set(setLabels)):
			continue
		case !labelsGrant:
			withheld = append(withheld, i)
			continue
		}
		applying = append(applying, i)
		patterns = append(patterns, r.patterns...)
	}
	note := ""
	if len(withheld) > 0 {
		note = fmt.Sprintf("; rules %v select its labels but grant nothing to a SidecarSet whose author does not hold the %s verb (its labels are the author's to set)",
			withheld, authority.VerbPrivileged)
	}
	if len(patterns) == 0 {
		if defaultsAllowed && len(withheld) == 0 {
			return Keys{all: true}
		}
		return Keys{reason: fmt.Sprintf("no rule of the whitelist allows a key for this SidecarSet (%d rules, %d selecting its labels %q)%s",
			len(w.rules), len(applying)+len(withheld), labels.Set(setLabels).String(), note)}
	}
	return Keys{patterns: patterns,
		reason: "it matches no pattern of the whitelist rules that select this SidecarSet: " + describeRules(w, applying) + note}
}

// describeRules lists the applying rules and their patterns, up to
// maxListedPatterns patterns.
func describeRules(w *Whitelist, applying []int) string {
	total := 0
	for _, i := range applying {
		total += len(w.rules[i].patterns)
	}
	var b strings.Builder
	listed := 0
	for n, i := range applying {
		if listed == maxListedPatterns {
			break
		}
		if n > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "rules[%d] [", i)
		for j, re := range w.rules[i].patterns {
			if listed == maxListedPatterns {
				break
			}
			if j > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%q", re.String())
			listed++
		}
		b.WriteString("]")
	}
	if total > listed {
		fmt.Fprintf(&b, " and %d more patterns", total-listed)
	}
	return b.String()
}
