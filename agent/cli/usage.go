package cli

import "strings"

// isCobraUsage recognises cobra's errors for unknown commands and bad
// argument counts, which carry no type to branch on.
func isCobraUsage(err error) bool {
	m := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "flag needs an argument", "invalid argument"} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}
