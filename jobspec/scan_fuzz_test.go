package jobspec

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// lexerEvents is the structure hclsyntax's own scanner sees in src: the
// opening and closing tokens the limits scanner traces.
func lexerEvents(src []byte) []byte {
	toks, _ := hclsyntax.LexConfig(src, "f.hcl", hcl.InitialPos)
	var out []byte
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenCBrace, hclsyntax.TokenOBrack, hclsyntax.TokenCBrack,
			hclsyntax.TokenOParen, hclsyntax.TokenCParen:
			out = append(out, byte(t.Type))
		case hclsyntax.TokenTemplateInterp:
			out = append(out, 'I')
		case hclsyntax.TokenTemplateControl:
			out = append(out, 'C')
		case hclsyntax.TokenTemplateSeqEnd:
			out = append(out, 'E')
		case hclsyntax.TokenOQuote:
			out = append(out, 'q')
		case hclsyntax.TokenCQuote:
			out = append(out, 'Q')
		case hclsyntax.TokenOHeredoc:
			out = append(out, 'h')
		case hclsyntax.TokenCHeredoc:
			out = append(out, 'H')
		}
	}
	return out
}

var scanSeeds = []string{
	`a = [1, (2), {b = 3}]`,
	`a = "x${y}z%{if c}d%{else}e%{endif}"`,
	`a = "$${not} %%{not} $$${yes} \"${q}\" \\${esc}"`,
	"a = <<EOT\n[${b}\n  EOT\nEOT\n",
	"a = <<-EOT\r\n  x\r\n  EOT\r\nb = 1",
	"a = <<EOT\nEOT$x\nEOT%\n$EOT\nEOT\n",
	"a = <<EOT\n${\"in\n}\"}\nEOT\n",
	"a = 1 << 2\n b = <<X y\n",
	"# [ \n// { \n/* ( */ x = /* unterminated [ ",
	`a = "${ { b = "}" } }"`,
	`a = "${ ( }" ] ) }`,
	`a = "${ x ~}" "%{~ for x in y ~}${x}%{~ endfor ~}"`,
	"a = \"line\nbreak ${x}\"",
	`a = "\`,
	"a = <<EOT",
	"a = <<EOT\n",
	"}}}]])) x = \"",
	`a = "${"${"${1}"}"}"`,
	"a = <<A\n${<<B\nB\n}\nA\n",
	"x = \"\\\n\"",
	"a = foo-bar-<<EOT\nEOT\n",
}

// FuzzScanMatchesLexer checks the limits scanner against hclsyntax's own
// scanner: where hclsyntax sees a bracket, brace, template sequence,
// string or heredoc open or close, the limits scanner sees the same, in
// the same order. A disagreement could hide nesting from the limits.
func FuzzScanMatchesLexer(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	for _, src := range []string{strings.Repeat("[", 100) + strings.Repeat("]", 100), strings.Repeat(`"${`, 70)} {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 {
			return
		}
		s := scanner{src: src, lim: limits{bytes: 1 << 30, depth: 1 << 30, ops: 1 << 30, tokens: 1 << 30}, tracing: true}
		if d := s.run("f.hcl"); d != nil {
			if d.Summary == "Unsupported heredoc marker" || d.Summary == "Invalid character encoding" {
				return
			}
			t.Fatalf("scan with no limits: %s: %s", d.Summary, d.Detail)
		}
		want := lexerEvents(src)
		// hclsyntax gives up at input it cannot match (for example a lone
		// CR in a heredoc) and lexes no further structure; the limits
		// scanner goes on, seeing more, never less.
		if !bytes.HasPrefix(s.trace, want) {
			t.Fatalf("scan of %q:\n got %s\nwant %s", src, s.trace, want)
		}
	})
}

// FuzzScanDepthBound: whatever the input, a source the scanner passes has
// no more than MaxNestingDepth open structures in hclsyntax's token
// stream, so the parser's recursion is bounded.
func FuzzScanDepthBound(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Repeat("[(", 40)))
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 {
			return
		}
		if checkSource("f.hcl", src) != nil {
			return
		}
		depth, maxDepth := 0, 0
		for _, e := range lexerEvents(src) {
			switch e {
			case '{', '[', '(', 'I', 'C':
				depth++
				maxDepth = max(maxDepth, depth)
			case '}', ']', ')', 'E':
				depth = max(depth-1, 0)
			}
		}
		if maxDepth > MaxNestingDepth {
			t.Fatalf("scan passed %q, whose tokens nest %d deep", src, maxDepth)
		}
	})
}
