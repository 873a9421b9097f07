package jobspec

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// maxFileSize bounds what file() reads.
const maxFileSize = 4 << 20

// stdFuncs is the pure part of the function library, shared by all parses.
var stdFuncs = map[string]function.Function{
	// string
	"chomp": stdlib.ChompFunc, "format": stdlib.FormatFunc, "formatlist": stdlib.FormatListFunc,
	"indent": stdlib.IndentFunc, "join": stdlib.JoinFunc, "lower": stdlib.LowerFunc,
	"replace": stdlib.ReplaceFunc, "split": stdlib.SplitFunc, "strrev": stdlib.ReverseFunc,
	"substr": stdlib.SubstrFunc, "title": stdlib.TitleFunc, "trim": stdlib.TrimFunc,
	"trimprefix": stdlib.TrimPrefixFunc, "trimspace": stdlib.TrimSpaceFunc, "trimsuffix": stdlib.TrimSuffixFunc,
	"upper": stdlib.UpperFunc, "strlen": stdlib.StrlenFunc,
	// regex
	"regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc, "regex_replace": stdlib.RegexReplaceFunc,
	// collection
	"chunklist": stdlib.ChunklistFunc, "coalesce": stdlib.CoalesceFunc, "coalescelist": stdlib.CoalesceListFunc,
	"compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc,
	"distinct": stdlib.DistinctFunc, "element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc,
	"index": stdlib.IndexFunc, "keys": stdlib.KeysFunc, "length": stdlib.LengthFunc,
	"lookup": stdlib.LookupFunc, "merge": stdlib.MergeFunc, "range": stdlib.RangeFunc,
	"reverse": stdlib.ReverseListFunc, "setintersection": stdlib.SetIntersectionFunc,
	"setproduct": stdlib.SetProductFunc, "setsubtract": stdlib.SetSubtractFunc, "setunion": stdlib.SetUnionFunc,
	"slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,
	// numeric
	"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "floor": stdlib.FloorFunc, "log": stdlib.LogFunc,
	"max": stdlib.MaxFunc, "min": stdlib.MinFunc, "parseint": stdlib.ParseIntFunc, "pow": stdlib.PowFunc,
	"signum": stdlib.SignumFunc,
	// encoding
	"jsonencode": stdlib.JSONEncodeFunc, "jsondecode": jsonDecodeFunc, "csvdecode": stdlib.CSVDecodeFunc,
	"base64encode": base64EncodeFunc, "base64decode": base64DecodeFunc,
	// datetime
	"formatdate": stdlib.FormatDateFunc, "timeadd": stdlib.TimeAddFunc,
	// conversion and control
	"tostring": stdlib.MakeToFunc(cty.String), "tonumber": stdlib.MakeToFunc(cty.Number),
	"tobool": stdlib.MakeToFunc(cty.Bool), "tolist": stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
	"toset": stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)), "tomap": stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
	"try": tryfunc.TryFunc, "can": tryfunc.CanFunc,
	// filesystem (names only; file() and fileexists() read inside the job's directory)
	"abspath": absPathFunc,
}

// absPathFunc is Nomad's abspath: a path made absolute against the working
// directory of whoever parses the job (the CLI, for `drover job run`). It
// reads nothing.
var absPathFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "path", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := filepath.Abs(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		return cty.StringVal(p), nil
	},
})

// jsonDecodeFunc is cty's jsondecode for documents nested at most
// MaxNestingDepth deep: cty builds a type as deep as the document and
// compares such types in quadratic time (a 20 KB string of 10,000 nested
// lists took 6 s and 1.6 GB).
var jsonDecodeFunc = function.New(&function.Spec{
	Description: stdlib.JSONDecodeFunc.Description(),
	Params:      []function.Parameter{{Name: "str", Type: cty.String}},
	Type: func(args []cty.Value) (cty.Type, error) {
		if s := args[0]; s.IsKnown() && !s.IsNull() {
			if err := jsonDepth(s.AsString(), MaxNestingDepth); err != nil {
				return cty.NilType, function.NewArgError(0, err)
			}
		}
		return stdlib.JSONDecodeFunc.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return stdlib.JSONDecodeFunc.Call(args)
	},
})

// jsonDepth fails when the JSON text s nests arrays and objects deeper
// than limit. Malformed JSON is left to the decoder.
func jsonDepth(s string, limit int) error {
	depth, inString := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return fmt.Errorf("JSON nested more than %d levels deep", limit)
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

var base64EncodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(base64.StdEncoding.EncodeToString([]byte(args[0].AsString()))), nil
	},
})

var base64DecodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		b, err := base64.StdEncoding.DecodeString(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("invalid base64: %w", err)
		}
		if !utf8.Valid(b) {
			return cty.UnknownVal(cty.String), errors.New("decoded base64 is not valid UTF-8")
		}
		return cty.StringVal(string(b)), nil
	},
})

// functions returns the library with file/fileexists bound to the base
// dir, every function charging the parse's budget.
func (p *parser) functions() map[string]function.Function {
	fns := make(map[string]function.Function, len(stdFuncs)+2)
	for k, v := range stdFuncs {
		fns[k] = v
	}
	base := p.baseDir
	fns["file"] = function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := readInDir(base, args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			if !utf8.Valid(b) {
				return cty.UnknownVal(cty.String), fmt.Errorf("file %q is not valid UTF-8", args[0].AsString())
			}
			return cty.StringVal(string(b)), nil
		},
	})
	fns["filebase64"] = fileBase64Func(base)
	fns["fileexists"] = function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			rel, err := relPath(args[0].AsString())
			if err != nil {
				return cty.False, err
			}
			root, err := os.OpenRoot(base)
			if err != nil {
				return cty.False, nil
			}
			defer root.Close()
			fi, err := root.Stat(rel)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return cty.False, nil
				}
				return cty.False, err
			}
			return cty.BoolVal(fi.Mode().IsRegular()), nil
		},
	})
	return p.budget.bounded(fns)
}

// relPath accepts only relative paths that stay inside the base dir.
func relPath(p string) (string, error) {
	if p == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) {
		return "", fmt.Errorf("path %q must be relative to the job file's directory and stay inside it", p)
	}
	return filepath.Clean(p), nil
}

// readInDir reads base/p through os.Root, so symlinks cannot escape base.
func readInDir(base, p string) ([]byte, error) {
	rel, err := relPath(p)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		return nil, fmt.Errorf("open job directory: %w", err)
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", p, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxFileSize {
		return nil, fmt.Errorf("read %q: not a regular file of at most %d bytes", p, maxFileSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", p, err)
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("read %q: larger than %d bytes", p, maxFileSize)
	}
	return b, nil
}
