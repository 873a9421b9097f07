package jobspec

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// Limits on job sources (job files, var files, -var values), checked
// before any byte reaches the HCL parser. hashicorp/hcl parses and
// evaluates by recursive descent with no limit of its own: what a list
// nested 100,000 deep costs with and without this scan is
// BenchmarkHostileNesting's (figures in the package comment). No real
// job file comes near these.
const (
	// MaxSourceBytes bounds one job source.
	MaxSourceBytes = 1 << 20
	// MaxNestingDepth bounds open brackets, braces (blocks and objects),
	// parentheses, template sequences (${ and %{) and template if/for
	// directives at any point of a source.
	MaxNestingDepth = 64
	// MaxOperators bounds the operators of one expression (unary, binary,
	// conditional, attribute and index steps), summed over the enclosing
	// brackets: each one is a level of recursion in the parser and in
	// evaluation. A comma or = starts a new expression.
	MaxOperators = 500
	// MaxTokens bounds the tokens of one source; each costs the parser a
	// few hundred bytes.
	MaxTokens = 100_000
)

// Limits on what evaluating a job builds (budget.go, funcbudget.go), for
// one parse: its variables, locals and job together. A source within the
// limits above can still ask for much more: formatlist("%01000000d",
// range(1000)) asks for 1 GB (it took 60 s and 2.6 GB before these), a
// %{for} over a list can repeat a long string, nested for expressions
// multiply. Functions charge the bytes of strings and the values
// (collection elements and scalars) they build; so do function arguments,
// for-expression iterations, template parts, tuple and object elements,
// splat items and the operands of ==, != and conditionals, each time they
// are evaluated (values shared within a value count each time). Functions
// that can build much more than their arguments (format, formatlist,
// join, replace, regex_replace, regexall, indent, setproduct, csvdecode)
// are refused before they run when a lower bound of their result does not
// fit. The first excess fails the parse, at the call or expression that
// made it, even under try() or can(). No real job file comes near these
// (the examples build a few hundred bytes); the HTTP API takes job bodies
// of at most 8 MiB.
const (
	// MaxValueBytes bounds the bytes of strings built.
	MaxValueBytes = 16 << 20
	// MaxValues bounds the values built and, through them, the iterations
	// of for expressions and the calls of try and can.
	MaxValues = 1 << 18
)

// Functions whose time is not in proportion to what they build: Go's
// regular expression matcher (regex, regexall, regex_replace) takes time
// proportional to the string times the compiled program, which a short
// pattern can make millions of instructions long; distinct compares every
// element with every other. A parse may take at most maxSteps of such
// steps (instruction-bytes, comparisons) in all, and compile programs of
// at most maxRegexProgram instructions; real jobs are far below both.
const (
	maxSteps        = 1 << 26
	maxRegexProgram = 1 << 16
)

// limits are the bounds scan applies; tests use others.
type limits struct{ bytes, depth, ops, tokens int }

var defaultLimits = limits{bytes: MaxSourceBytes, depth: MaxNestingDepth, ops: MaxOperators, tokens: MaxTokens}

// checkSource reports the first limit src exceeds, as a diagnostic at the
// offending position, or nil.
func checkSource(filename string, src []byte) *hcl.Diagnostic {
	s := scanner{src: src, lim: defaultLimits}
	return s.run(filename)
}

// readSource reads a job source file, refusing one over MaxSourceBytes
// without reading further.
func readSource(path string) ([]byte, *hcl.Diagnostic, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxSourceBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(src) > MaxSourceBytes {
		return nil, tooLarge(path, MaxSourceBytes), nil
	}
	return src, nil, nil
}

func tooLarge(filename string, limit int) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError, Summary: "Job source too large",
		Detail:  fmt.Sprintf("more than %d bytes.", limit),
		Subject: &hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos},
	}
}

// Frame kinds. Brackets use their opening byte.
const (
	kRoot    = 'r'
	kInterp  = 'i' // ${ ... }
	kControl = 'c' // %{ ... }
	kQuoted  = 'q' // "..."
	kHeredoc = 'h' // <<EOT ... EOT
)

type frame struct {
	kind   byte
	ops    int    // operators of the current expression at this level
	dir    int    // kControl: +1 opens an if/for body, -1 closes one
	dirs   int    // kQuoted, kHeredoc: open if/for bodies
	marker []byte // kHeredoc: closing marker
	sol    bool   // kHeredoc: at the start of a line
}

// scanner mirrors the token rules of hclsyntax's scanner (scan_tokens.rl)
// closely enough to know, without allocating per token, what is code,
// string, heredoc, comment and template sequence, and so what nests. Its
// stacks never grow past the depth limit: it stops at the first excess.
type scanner struct {
	src       []byte
	lim       limits
	i         int
	at        int // where the token being scanned starts
	frames    []frame
	depth     int // frames other than root and templates, plus open if/for bodies
	maxDepth  int
	ops       int // sum of frames[*].ops
	tokens    int
	braces    int   // as hclsyntax: { minus } in code
	retBraces []int // brace level at which each open template sequence closes
	operand   bool  // last code token ends an operand (a [ after it indexes)
	trace     []byte
	tracing   bool
	diag      *hcl.Diagnostic
}

func (s *scanner) run(filename string) *hcl.Diagnostic {
	if len(s.src) > s.lim.bytes {
		return tooLarge(filename, s.lim.bytes)
	}
	if !utf8.Valid(s.src) {
		// hclsyntax refuses invalid UTF-8 anyway, and what it makes of
		// the bytes around it is not worth mirroring.
		for s.at < len(s.src) {
			r, n := utf8.DecodeRune(s.src[s.at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			s.at += n
		}
		s.fail("Invalid character encoding", "job sources must be UTF-8.")
		r := s.pos(filename)
		s.diag.Subject = &r
		return s.diag
	}
	s.frames = append(s.frames[:0], frame{kind: kRoot})
	for s.i < len(s.src) && s.diag == nil {
		s.at = s.i
		switch s.top().kind {
		case kQuoted:
			s.quoted()
		case kHeredoc:
			s.heredoc()
		default:
			s.code()
		}
	}
	if s.diag != nil {
		r := s.pos(filename)
		s.diag.Subject = &r
	}
	return s.diag
}

func (s *scanner) top() *frame { return &s.frames[len(s.frames)-1] }

func (s *scanner) event(e byte) {
	if s.tracing {
		s.trace = append(s.trace, e)
	}
}

func (s *scanner) fail(summary, detail string) {
	if s.diag == nil {
		s.diag = &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail}
	}
}

func (s *scanner) token() {
	s.tokens++
	if s.tokens > s.lim.tokens {
		s.fail("Job source too long", fmt.Sprintf("more than %d tokens.", s.lim.tokens))
	}
}

func (s *scanner) deeper() {
	s.depth++
	s.maxDepth = max(s.maxDepth, s.depth)
	if s.depth > s.lim.depth {
		s.fail("Nesting too deep", fmt.Sprintf("more than %d nested brackets, braces, blocks, parentheses or template sequences.", s.lim.depth))
	}
}

func (s *scanner) push(f frame) {
	s.frames = append(s.frames, f)
	if f.kind != kQuoted && f.kind != kHeredoc {
		s.deeper()
	}
}

// pop removes the top frame and what it counted.
func (s *scanner) pop() frame {
	f := s.frames[len(s.frames)-1]
	s.frames = s.frames[:len(s.frames)-1]
	s.ops -= f.ops
	switch f.kind {
	case kQuoted, kHeredoc:
		s.depth -= f.dirs
	default:
		s.depth--
	}
	return f
}

func (s *scanner) op(n int) {
	s.i += n
	s.token()
	s.operand = false
	s.top().ops++
	s.ops++
	if s.ops > s.lim.ops {
		s.fail("Expression too complex", fmt.Sprintf("more than %d operators in one expression.", s.lim.ops))
	}
}

// newExpr: a comma, = or => ends the expression at this level.
func (s *scanner) newExpr(n int) {
	s.i += n
	s.token()
	s.operand = false
	t := s.top()
	s.ops -= t.ops
	t.ops = 0
}

// code scans one token in expression/body context.
func (s *scanner) code() {
	src, i := s.src, s.i
	c := src[i]
	next := byte(0)
	if i+1 < len(src) {
		next = src[i+1]
	}
	switch {
	case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		s.i++
	case c == '#' || c == '/' && next == '/':
		s.skipLine()
	case c == '/' && next == '*':
		if end := bytes.Index(src[i+2:], []byte("*/")); end >= 0 {
			s.i = i + 2 + end + 2
		} else {
			s.op(1) // hclsyntax lexes an unterminated comment as / and *
		}
	case c == '"':
		s.i++
		s.token()
		s.event('q')
		s.push(frame{kind: kQuoted})
	case c == '<' && next == '<' && s.heredocStart():
	case c == '{':
		s.i++
		s.token()
		s.braces++
		s.event('{')
		s.push(frame{kind: '{'})
	case c == '}':
		s.closeBrace(1, '}')
	case c == '~' && next == '}':
		s.closeBrace(2, 'E')
	case c == '(' || c == '[':
		if c == '[' && s.operand {
			s.op(0)
		}
		s.i++
		s.token()
		s.event(c)
		s.push(frame{kind: c})
	case c == ')' || c == ']':
		s.i++
		s.token()
		s.event(c)
		if k := s.top().kind; k == '(' && c == ')' || k == '[' && c == ']' {
			s.pop()
		}
		s.operand = true
	case c == ',':
		s.newExpr(1)
	case c == '=':
		switch next {
		case '=':
			s.op(2)
		case '>':
			s.newExpr(2)
		default:
			s.newExpr(1)
		}
	case c == '.' && next == '.' && i+2 < len(src) && src[i+2] == '.':
		s.op(3)
	case c == '!' || c == '<' || c == '>':
		if next == '=' {
			s.op(2)
		} else {
			s.op(1)
		}
	case c == '&' && next == '&', c == '|' && next == '|':
		s.op(2)
	case c == '+' || c == '-' || c == '*' || c == '/' || c == '%' || c == '?' || c == '.':
		s.op(1)
	case isIdentStart(c) || c >= utf8.RuneSelf:
		for s.i++; s.i < len(src) && (isIdentStart(src[s.i]) || isDigit(src[s.i]) || src[s.i] == '-' || src[s.i] >= utf8.RuneSelf); s.i++ {
		}
		s.token()
		s.operand = true
	case isDigit(c):
		for s.i++; s.i < len(src) && (isDigit(src[s.i]) || src[s.i] == '.' && s.i+1 < len(src) && isDigit(src[s.i+1])); s.i++ {
		}
		s.token()
		s.operand = true
	default:
		s.i++
		s.token()
		s.operand = false
	}
}

func (s *scanner) skipLine() {
	if nl := bytes.IndexByte(s.src[s.i:], '\n'); nl >= 0 {
		s.i += nl + 1
	} else {
		s.i = len(s.src)
	}
}

// closeBrace handles } and ~} in code: the end of a template sequence when
// the brace level is the one the sequence opened at (as hclsyntax), else
// the end of a block or object.
func (s *scanner) closeBrace(n int, ev byte) {
	s.i += n
	s.token()
	s.operand = true
	if k := len(s.retBraces); k > 0 && s.retBraces[k-1] == s.braces {
		s.braces--
		s.retBraces = s.retBraces[:k-1]
		s.event('E')
		// Brackets left open in the sequence (a syntax error) stay
		// counted: hclsyntax's tokens still hold them.
		open := 0
		for {
			f := s.pop()
			if f.kind == kInterp || f.kind == kControl {
				s.depth += open
				s.endDirective(f.dir)
				return
			}
			open++
		}
	}
	s.braces--
	s.event(ev)
	if s.top().kind == '{' {
		s.pop()
	}
}

// endDirective applies a closed %{ if/for/endif/endfor } to its template.
func (s *scanner) endDirective(dir int) {
	t := s.top()
	if t.kind != kQuoted && t.kind != kHeredoc {
		return
	}
	switch {
	case dir > 0:
		t.dirs++
		s.deeper()
	case dir < 0 && t.dirs > 0:
		t.dirs--
		s.depth--
	}
}

// heredocStart recognises <<EOT or <<-EOT and a newline and enters the
// heredoc; it reports false (consuming nothing) for anything else. A
// marker with non-ASCII letters is refused: recognising exactly the
// Unicode identifiers hclsyntax accepts is not worth the risk of reading
// code as text.
func (s *scanner) heredocStart() bool {
	src := s.src
	j := s.i + 2
	if j < len(src) && src[j] == '-' {
		j++
	}
	start := j
	if j >= len(src) || !(isIdentStart(src[j]) || src[j] >= utf8.RuneSelf) {
		return false
	}
	for j < len(src) && (isIdentStart(src[j]) || isDigit(src[j]) || src[j] == '-' || src[j] >= utf8.RuneSelf) {
		j++
	}
	marker := src[start:j]
	if j < len(src) && src[j] == '\r' {
		j++
	}
	if j >= len(src) || src[j] != '\n' {
		return false
	}
	if !isASCII(marker) {
		s.fail("Unsupported heredoc marker", fmt.Sprintf("heredoc markers are limited to ASCII letters, digits, _ and -; got %q.", marker))
		return true
	}
	s.i = j + 1
	s.token()
	s.event('h')
	s.push(frame{kind: kHeredoc, marker: marker, sol: true})
	return true
}

// quoted scans one piece of a "..." template.
func (s *scanner) quoted() {
	src, i := s.src, s.i
	switch src[i] {
	case '"':
		s.i++
		s.event('Q')
		s.pop()
		s.operand = true
	case '\\':
		if i+1 < len(src) && src[i+1] != '\n' && src[i+1] != '\r' {
			s.i += 2
		} else {
			s.i++
		}
	case '$', '%':
		s.templateSeq()
	default:
		s.i++
	}
}

// heredoc scans one piece of a heredoc template: a whole line that may be
// the closing marker, or one byte.
func (s *scanner) heredoc() {
	src, i := s.src, s.i
	t := s.top()
	if t.sol {
		end := i
		for end < len(src) && src[end] != '\n' && src[end] != '$' && src[end] != '%' {
			end++
		}
		if end < len(src) && src[end] == '\n' {
			s.token()
			if bytes.Equal(bytes.TrimSpace(src[i:end]), t.marker) {
				s.i = end // the newline ends the attribute in code
				s.event('H')
				s.pop()
				s.operand = true
				return
			}
			s.i = end + 1
			return
		}
		s.i = end
		t.sol = false
		return
	}
	switch src[i] {
	case '\n':
		s.i++
		t.sol = true
	case '$', '%':
		s.templateSeq()
	default:
		s.i++
	}
}

// templateSeq handles $ or % in a template: ${ and %{ open a sequence,
// $${ and %%{ are literal, anything else is a literal byte.
func (s *scanner) templateSeq() {
	src, i := s.src, s.i
	c := src[i]
	switch {
	case i+1 < len(src) && src[i+1] == '{':
		s.i += 2
		if s.i < len(src) && src[s.i] == '~' {
			s.i++
		}
		s.token()
		s.braces++
		s.retBraces = append(s.retBraces, s.braces)
		f := frame{kind: kInterp}
		if c == '%' {
			f.kind = kControl
			f.dir = s.directive()
			s.event('C')
		} else {
			s.event('I')
		}
		s.push(f)
		s.operand = false
	case i+2 < len(src) && src[i+1] == c && src[i+2] == '{':
		s.i += 3
		s.token()
	default:
		s.i++
		s.token()
	}
}

// directive peeks at the keyword of a %{ sequence: +1 for if and for, -1
// for endif and endfor, 0 otherwise.
func (s *scanner) directive() int {
	j := s.i
	for j < len(s.src) && (s.src[j] == ' ' || s.src[j] == '\t' || s.src[j] == '\r' || s.src[j] == '\n') {
		j++
	}
	k := j
	for k < len(s.src) && (isIdentStart(s.src[k]) || isDigit(s.src[k]) || s.src[k] == '-') {
		k++
	}
	switch string(s.src[j:k]) {
	case "if", "for":
		return 1
	case "endif", "endfor":
		return -1
	}
	return 0
}

// pos is the diagnostic range at the scanner's position.
func (s *scanner) pos(filename string) hcl.Range {
	off := min(s.at, len(s.src))
	line, ls := 1, 0
	for j := 0; j < off; j++ {
		if s.src[j] == '\n' {
			line, ls = line+1, j+1
		}
	}
	p := hcl.Pos{Line: line, Column: utf8.RuneCount(s.src[ls:off]) + 1, Byte: off}
	return hcl.Range{Filename: filename, Start: p, End: p}
}

func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool      { return '0' <= c && c <= '9' }

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
