package cli

import (
	"regexp"
	"strings"
)

// subjectOnly matches an error-chain segment that only names its subject
// (`job "web"`, `deregister job "web"`, `no node with prefix "ab"`).
var subjectOnly = regexp.MustCompile(`^(\w+ ){0,4}"[^"]*"$`)

// tidyMessage drops the repetitions an error chain collects on its way
// from the server through the HTTP layer to the CLI: a segment (between
// ": ") that only names a subject already named by an earlier segment goes,
// so `job "x": job "x": job not found` reads `job "x": job not found`, and
// so does one the next segment starts with (`acl bootstrap: ACL bootstrap
// already done` reads `ACL bootstrap already done`).
func tidyMessage(msg string) string {
	segs := splitChain(msg)
	if len(segs) < 2 {
		return msg
	}
	seen := map[string]bool{}
	out := segs[:0:0]
	for i, s := range segs {
		if i < len(segs)-1 && startsWithWords(segs[i+1], s) {
			continue // the next segment says it again
		}
		quoted := quotedNames(s)
		drop := i > 0 && i < len(segs)-1 && subjectOnly.MatchString(s) && len(quoted) == 1 && seen[quoted[0]]
		for _, q := range quoted {
			seen[q] = true
		}
		if !drop {
			out = append(out, s)
		}
	}
	return strings.Join(out, ": ")
}

// startsWithWords reports whether s is prefix or begins with it and a
// space (case aside), prefix having two words or more: "acl bootstrap"
// is said again by "ACL bootstrap already done", "acl" is not by "acl
// bootstrapped".
func startsWithWords(s, prefix string) bool {
	if prefix == "" || len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return false
	}
	return len(s) == len(prefix) || (s[len(prefix)] == ' ' && strings.Contains(prefix, " "))
}

// splitChain splits at ": " outside double quotes.
func splitChain(msg string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(msg); i++ {
		switch {
		case msg[i] == '\\' && inQuote:
			i++
		case msg[i] == '"':
			inQuote = !inQuote
		case !inQuote && msg[i] == ':' && i+1 < len(msg) && msg[i+1] == ' ':
			out = append(out, msg[start:i])
			start = i + 2
			i++
		}
	}
	return append(out, msg[start:])
}

var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

func quotedNames(s string) []string { return quotedRE.FindAllString(s, -1) }
