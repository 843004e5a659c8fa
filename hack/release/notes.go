package main

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
)

// unreleased is the heading of CHANGELOG.md's section of changes not yet
// released.
const unreleased = "Unreleased"

// sectionHeading matches a second-level heading of a Keep a Changelog file:
// "## [0.1.0] - 2027-01-31", "## [Unreleased]".
var sectionHeading = regexp.MustCompile(`^## \[([^\]]+)\](?:\s+-\s+\S+)?\s*$`)

// releaseNotes returns the body of the changelog's section for version
// (without its v), without the heading, trimmed.
func releaseNotes(changelog, version string) (string, error) {
	var body strings.Builder
	in, found := false, false
	sc := bufio.NewScanner(strings.NewReader(changelog))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			m := sectionHeading.FindStringSubmatch(line)
			in = m != nil && strings.TrimPrefix(m[1], "v") == version
			found = found || in
			continue
		}
		if in {
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("CHANGELOG.md has no section \"## [%s]\": move the Unreleased changes under \"## [%s] - <date>\" first", version, version)
	}
	notes := strings.TrimSpace(body.String())
	if notes == "" {
		return "", fmt.Errorf("CHANGELOG.md's section [%s] is empty", version)
	}
	return notes, nil
}
