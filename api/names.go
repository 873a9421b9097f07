package api

import (
	"fmt"
	"strings"
	"unicode"
)

// CheckName reports why name cannot name a task, a group or a job (nil if
// it can). Such names become single path elements: a task's directory is
// <alloc dir>/<task>, a job is served at /v1/job/<id>. So a name must not
// be empty, "." or "..", and must not contain "/", "\", NUL or another
// control character. Anything else is allowed, as in Nomad: dashes, dots
// inside ("web.v2"), unicode.
func CheckName(name string) error {
	switch name {
	case "":
		return fmt.Errorf("must not be empty")
	case ".", "..":
		return fmt.Errorf("%q is not a name (names become path elements)", name)
	}
	if i := strings.IndexAny(name, `/\`); i >= 0 {
		return fmt.Errorf("must not contain %q (names become path elements)", name[i:i+1])
	}
	return checkPrintable(name)
}

// CheckJobID is CheckName for job IDs, which must not contain spaces
// either (as in Nomad).
func CheckJobID(id string) error {
	if err := CheckName(id); err != nil {
		return err
	}
	if strings.ContainsRune(id, ' ') {
		return fmt.Errorf("must not contain spaces")
	}
	return nil
}

// CheckJobName reports why name cannot be a job's display name (nil if
// it can): only NUL and other control characters are refused, as Nomad
// refuses NUL; the name is no path element.
func CheckJobName(name string) error { return checkPrintable(name) }

// checkPrintable refuses NUL and other control characters (C0, DEL, C1),
// which no terminal, log line or path shows faithfully.
func checkPrintable(s string) error {
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("must not contain control character %U", r)
		}
	}
	return nil
}
