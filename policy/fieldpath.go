package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// parseFieldPath parses a field path as field.Path prints it:
// dot-separated field names, each followed by any number of subscripts,
// [<index>] or [<key>]. A key may also be quoted, ['<key>'], when it is
// all digits or contains brackets. Examples:
//
//	spec.containers[2].volumeMounts[0].name
//	metadata.annotations[apps.kruise.io/sidecarset-base]
//	spec.patchPodMetadata[0].annotations['12']
func parseFieldPath(s string) (*field.Path, error) {
	if s == "" {
		return nil, errors.New("the path is empty")
	}
	var p *field.Path
	rest := s
	for {
		end := strings.IndexAny(rest, ".[")
		if end < 0 {
			end = len(rest)
		}
		name := rest[:end]
		if !isFieldName(name) {
			return nil, fmt.Errorf("%q: invalid field name %q", s, name)
		}
		if p == nil {
			p = field.NewPath(name)
		} else {
			p = p.Child(name)
		}
		rest = rest[end:]
		for strings.HasPrefix(rest, "[") {
			var sub string
			var err error
			if sub, rest, err = subscript(rest); err != nil {
				return nil, fmt.Errorf("%q: %w", s, err)
			}
			if quoted, ok := strings.CutPrefix(sub, "'"); ok {
				p = p.Key(strings.TrimSuffix(quoted, "'"))
			} else if i, err := strconv.Atoi(sub); err == nil && i >= 0 && strconv.Itoa(i) == sub {
				p = p.Index(i)
			} else {
				p = p.Key(sub)
			}
		}
		if rest == "" {
			return p, nil
		}
		if rest[0] != '.' {
			return nil, fmt.Errorf("%q: unexpected %q", s, rest)
		}
		rest = rest[1:]
	}
}

// subscript splits "[x]rest" into x and rest. A quoted x ('...') may hold
// brackets.
func subscript(s string) (string, string, error) {
	body := s[1:]
	if strings.HasPrefix(body, "'") {
		end := strings.Index(body[1:], "']")
		if end < 0 {
			return "", "", errors.New("unterminated quoted subscript")
		}
		return body[:end+2], body[end+3:], nil
	}
	end := strings.IndexByte(body, ']')
	if end <= 0 || strings.Contains(body[:end], "[") {
		return "", "", errors.New("empty or unterminated subscript")
	}
	return body[:end], body[end+1:], nil
}

func isFieldName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r == '_', r == '-', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}
