package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Scores are a node's named score components (binpack, node-affinity ...).
// They encode as a JSON object, {"binpack":0.72}, Nomad's map shape, but
// are held as a short slice sorted by name: every alloc keeps the scores of
// its top three nodes for as long as it lives, and a Go map of one entry
// takes ~250 bytes where this takes 24.
type Scores []Score

// Score is one named component of a node's score.
type Score struct {
	Name  string
	Value float64
}

// Get returns the named component.
func (s Scores) Get(name string) (float64, bool) {
	for _, c := range s {
		if c.Name == name {
			return c.Value, true
		}
	}
	return 0, false
}

// MarshalJSON encodes the scores as an object, names in order, numbers as
// encoding/json writes them.
func (s Scores) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 2+len(s)*32)
	b = append(b, '{')
	for i, c := range s {
		if i > 0 {
			b = append(b, ',')
		}
		if plainName(c.Name) {
			b = append(b, '"')
			b = append(b, c.Name...)
			b = append(b, '"')
		} else {
			q, err := json.Marshal(c.Name)
			if err != nil {
				return nil, err
			}
			b = append(b, q...)
		}
		b = append(b, ':')
		var err error
		if b, err = appendFloat(b, c.Value); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// plainName reports whether name needs no escaping in JSON (encoding/json
// also escapes <, > and &).
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendFloat writes f as encoding/json does.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errors.New("api: unsupported score value " + strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// UnmarshalJSON decodes an object of numbers (or null). The names the
// scheduler writes share one string each rather than one per alloc.
func (s *Scores) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, " \t\r\n") // JSON's white space
	if string(b) == "null" {
		*s = nil
		return nil
	}
	if out, ok := parseScores(b); ok {
		*s = out
		return nil
	}
	// Escapes, duplicates, odd spacing: the general decoder.
	var m map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	out := make(Scores, 0, len(m))
	for k, v := range m {
		out = append(out, Score{Name: scoreName([]byte(k)), Value: v})
	}
	out.sort()
	*s = out
	return nil
}

// parseScores decodes the common form, {"name":number,...} with plain
// names in order and no escapes; ok is false for anything else.
func parseScores(b []byte) (Scores, bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	body := b[1 : len(b)-1]
	out := make(Scores, 0, 1+bytes.Count(body, []byte{','}))
	for len(body) > 0 {
		if body[0] != '"' {
			return nil, false
		}
		end := bytes.IndexByte(body[1:], '"')
		if end < 0 {
			return nil, false
		}
		name := body[1 : 1+end]
		if !asciiName(name) || len(body) < 3+end || body[2+end] != ':' {
			return nil, false
		}
		rest := body[3+end:]
		num := rest
		if i := bytes.IndexByte(rest, ','); i >= 0 {
			num, rest = rest[:i], rest[i+1:]
			if len(rest) == 0 {
				return nil, false // trailing comma
			}
		} else {
			rest = nil
		}
		if !jsonNumber(num) {
			return nil, false
		}
		v, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return nil, false
		}
		if n := len(out); n > 0 && out[n-1].Name >= string(name) {
			return nil, false // out of order or a duplicate
		}
		out = append(out, Score{Name: scoreName(name), Value: v})
		body = rest
	}
	return out, true
}

// asciiName reports whether a quoted name is printable ASCII without
// escapes (what needs no decoding).
func asciiName(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// scoreName returns the scheduler's own copy of a known name.
func scoreName(n []byte) string {
	for _, k := range knownScores {
		if k == string(n) {
			return k
		}
	}
	return string(n)
}

// jsonNumber reports whether b is a JSON number:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(b []byte) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	start := i
	if n := digits(); n == 0 || n > 1 && b[start] == '0' {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// knownScores are the names the scheduler writes.
var knownScores = [...]string{"allocation-spread", "binpack", "devices", "job-anti-affinity",
	"node-affinity", "node-reschedule-penalty"}

func (s Scores) sort() {
	slices.SortFunc(s, func(a, b Score) int { return strings.Compare(a.Name, b.Name) })
}
