//go:build !supervisor_stdjson

package supervisor

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The supervisor reads its config and writes its reports with this small
// JSON codec instead of encoding/json, for a smaller binary and less
// memory in each task's supervisor (BenchmarkSupervisorJSON; figures in
// the package comment). The driver side uses encoding/json; tests check
// that both agree.

// jsonNumber is a number as written, converted on use.
type jsonNumber string

// errJSON wraps every syntax error.
var errJSON = errors.New("invalid JSON")

// parseJSON parses one JSON value: map[string]any, []any, string,
// jsonNumber, bool or nil.
func parseJSON(b []byte) (any, error) {
	p := &jsonParser{b: b}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.b) {
		return nil, p.fail("data after the value")
	}
	return v, nil
}

// maxDepth bounds nesting (the config nests three levels).
const maxDepth = 32

type jsonParser struct {
	b []byte
	i int
}

func (p *jsonParser) fail(what string) error {
	return fmt.Errorf("%w: %s at offset %d", errJSON, what, p.i)
}

func (p *jsonParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.fail("nested too deep")
	}
	p.space()
	if p.i >= len(p.b) {
		return nil, p.fail("unexpected end")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.string()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		return nil, p.fail(fmt.Sprintf("unexpected %q", c))
	}
}

func (p *jsonParser) literal(s string) error {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return p.fail("bad literal")
	}
	p.i += len(s)
	return nil
}

func (p *jsonParser) object(depth int) (any, error) {
	p.i++ // {
	m := map[string]any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return m, nil
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.fail("want a key")
		}
		k, err := p.string()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.fail("want ':'")
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[k] = v
		p.space()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return m, nil
		default:
			return nil, p.fail("want ',' or '}'")
		}
	}
}

func (p *jsonParser) array(depth int) (any, error) {
	p.i++ // [
	a := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return a, nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return a, nil
		default:
			return nil, p.fail("want ',' or ']'")
		}
	}
}

func (p *jsonParser) number() (any, error) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	intStart := p.i
	if digits() == 0 || p.b[intStart] == '0' && p.i-intStart > 1 {
		return nil, p.fail("bad number")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.fail("bad number")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.fail("bad number")
		}
	}
	return jsonNumber(p.b[start:p.i]), nil
}

// string parses a quoted string; invalid UTF-8 and lone surrogates become
// U+FFFD, as with encoding/json.
func (p *jsonParser) string() (string, error) {
	p.i++ // "
	var out []byte
	for {
		if p.i >= len(p.b) {
			return "", p.fail("unterminated string")
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), nil
		case c < 0x20:
			return "", p.fail("control character in string")
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return "", p.fail("unterminated string")
			}
			e := p.b[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.fail("bad \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
						save := p.i
						p.i += 2
						if lo, ok := p.hex4(); ok {
							if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
								r2 = d
							} else {
								p.i = save
							}
						} else {
							return "", p.fail("bad \\u escape")
						}
					}
					r = r2
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", p.fail("bad escape")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			p.i++
		default:
			r, n := utf8.DecodeRune(p.b[p.i:])
			out = utf8.AppendRune(out, r) // RuneError for invalid bytes
			p.i += n
		}
	}
}

func (p *jsonParser) hex4() (rune, bool) {
	if len(p.b)-p.i < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}

// jsonFields reads typed fields out of a parsed object; the first type
// error sticks and names the key. Absent and null keys leave the target
// as it is; unknown keys are ignored (as with encoding/json).
type jsonFields struct {
	m    map[string]any
	path string
	err  *error
}

func (f jsonFields) get(k string) (any, bool) {
	v, ok := f.m[k]
	return v, ok && v != nil && *f.err == nil
}

func (f jsonFields) bad(k, want string) {
	if *f.err == nil {
		*f.err = fmt.Errorf("%w: %s%s: want %s", errJSON, f.path, k, want)
	}
}

func (f jsonFields) str(k string, dst *string) {
	if v, ok := f.get(k); ok {
		if s, ok := v.(string); ok {
			*dst = s
		} else {
			f.bad(k, "a string")
		}
	}
}

// base64 decodes a []byte as encoding/json writes it (standard base64).
func (f jsonFields) base64(k string, dst *[]byte) {
	var s string
	f.str(k, &s)
	if _, ok := f.get(k); !ok || s == "" {
		return
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		f.bad(k, "base64")
		return
	}
	*dst = b
}

func (f jsonFields) bool(k string, dst *bool) {
	if v, ok := f.get(k); ok {
		if b, ok := v.(bool); ok {
			*dst = b
		} else {
			f.bad(k, "true or false")
		}
	}
}

func (f jsonFields) int64(k string, dst *int64, bits int) {
	if v, ok := f.get(k); ok {
		n, isNum := v.(jsonNumber)
		i, err := strconv.ParseInt(string(n), 10, bits)
		if !isNum || err != nil {
			f.bad(k, fmt.Sprintf("an integer of %d bits", bits))
			return
		}
		*dst = i
	}
}

func (f jsonFields) int(k string, dst *int) {
	var i int64
	f.int64(k, &i, strconv.IntSize)
	if _, ok := f.get(k); ok {
		*dst = int(i)
	}
}

func (f jsonFields) list(k string) ([]any, bool) {
	v, ok := f.get(k)
	if !ok {
		return nil, false
	}
	a, isList := v.([]any)
	if !isList {
		f.bad(k, "a list")
	}
	return a, isList
}

func (f jsonFields) strs(k string, dst *[]string) {
	a, ok := f.list(k)
	if !ok {
		return
	}
	out := make([]string, len(a))
	for i, v := range a {
		s, ok := v.(string)
		if !ok {
			f.bad(k, "a list of strings")
			return
		}
		out[i] = s
	}
	*dst = out
}

func (f jsonFields) uint16s(k string, dst *[]uint16) {
	a, ok := f.list(k)
	if !ok {
		return
	}
	out := make([]uint16, len(a))
	for i, v := range a {
		n, isNum := v.(jsonNumber)
		u, err := strconv.ParseUint(string(n), 10, 16)
		if !isNum || err != nil {
			f.bad(k, "a list of integers of 16 bits")
			return
		}
		out[i] = uint16(u)
	}
	*dst = out
}

// obj returns the fields of object k (ok false when absent or null).
func (f jsonFields) obj(k string) (jsonFields, bool) {
	v, ok := f.get(k)
	if !ok {
		return jsonFields{}, false
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		f.bad(k, "an object")
		return jsonFields{}, false
	}
	return jsonFields{m: m, path: f.path + k + ".", err: f.err}, true
}

// objs calls each for every object in list k; ok false when absent or null.
func (f jsonFields) objs(k string, each func(i int, o jsonFields)) (n int, ok bool) {
	a, ok := f.list(k)
	if !ok {
		return 0, false
	}
	for i, v := range a {
		m, isObj := v.(map[string]any)
		if !isObj {
			f.bad(k, "a list of objects")
			return 0, false
		}
		each(i, jsonFields{m: m, path: fmt.Sprintf("%s%s[%d].", f.path, k, i), err: f.err})
	}
	return len(a), *f.err == nil
}

// jsonObject appends an object's members to a buffer.
type jsonObject struct {
	b []byte
}

func (o *jsonObject) key(k string) {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = appendJSONString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsonObject) str(k, v string) { o.key(k); o.b = appendJSONString(o.b, v) }
func (o *jsonObject) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}
func (o *jsonObject) bool(k string, v bool) { o.key(k); o.b = strconv.AppendBool(o.b, v) }

// bytes ends the object.
func (o *jsonObject) bytes() []byte {
	if len(o.b) == 0 {
		return []byte("{}")
	}
	return append(o.b, '}')
}

// appendJSONString appends s quoted; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
