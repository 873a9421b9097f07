package jobspec

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// The rest of Nomad's HCL function library that needs nothing outside
// the standard library: hashes, urlencode, uuidv4/uuidv5 and the path
// functions (basename, dirname, pathexpand; filebase64 is bound to the
// job's directory as file is). reverse replaces cty's list reverse with
// one that also reverses strings, as Nomad's does. Not provided: bcrypt,
// rsadecrypt, the cidr* functions, yamldecode/yamlencode, fileset and
// convert (its type argument is syntax, which the budget's wrapping of
// every expression hides from it).
func init() {
	for name, f := range map[string]function.Function{
		"md5": hashFunc(md5.New), "sha1": hashFunc(sha1.New), "sha256": hashFunc(sha256.New), "sha512": hashFunc(sha512.New),
		"urlencode":  stringFunc(url.QueryEscape),
		"basename":   stringFunc(filepath.Base),
		"dirname":    stringFunc(filepath.Dir),
		"pathexpand": pathExpandFunc,
		"uuidv4":     uuidV4Func,
		"uuidv5":     uuidV5Func,
		"reverse":    reverseFunc,
	} {
		stdFuncs[name] = f
	}
}

// reverseFunc reverses a string, as Nomad's reverse does (cty's
// ReverseFunc), or a list or tuple, as drover's did (ReverseListFunc).
var reverseFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType}},
	Type: func(args []cty.Value) (cty.Type, error) {
		if args[0].Type() == cty.String {
			return cty.String, nil
		}
		return stdlib.ReverseListFunc.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if args[0].Type() == cty.String {
			return stdlib.ReverseFunc.Call(args)
		}
		return stdlib.ReverseListFunc.Call(args)
	},
})

// hashFunc is a function returning the hex digest of its string argument.
func hashFunc(h func() hash.Hash) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			d := h()
			d.Write([]byte(args[0].AsString()))
			return cty.StringVal(hex.EncodeToString(d.Sum(nil))), nil
		},
	})
}

// stringFunc lifts a string function.
func stringFunc(f func(string) string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.StringVal(f(args[0].AsString())), nil
		},
	})
}

// pathExpandFunc replaces a leading ~ with the parsing user's home dir.
var pathExpandFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "path", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p := args[0].AsString()
		if p != "~" && !strings.HasPrefix(p, "~/") {
			return cty.StringVal(p), nil
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("pathexpand: %w", err)
		}
		return cty.StringVal(home + p[1:]), nil
	},
})

var uuidV4Func = function.New(&function.Spec{
	Type: function.StaticReturnType(cty.String),
	Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
		var u [16]byte
		if _, err := rand.Read(u[:]); err != nil {
			return cty.UnknownVal(cty.String), err
		}
		return cty.StringVal(formatUUID(u, 4)), nil
	},
})

// uuidV5Func is RFC 4122's name-based UUID: the namespace is dns, url,
// oid, x500 or a UUID.
var uuidV5Func = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "namespace", Type: cty.String}, {Name: "name", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		ns := args[0].AsString()
		switch ns {
		case "dns":
			ns = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
		case "url":
			ns = "6ba7b811-9dad-11d1-80b4-00c04fd430c8"
		case "oid":
			ns = "6ba7b812-9dad-11d1-80b4-00c04fd430c8"
		case "x500":
			ns = "6ba7b814-9dad-11d1-80b4-00c04fd430c8"
		}
		raw, err := hex.DecodeString(strings.ReplaceAll(ns, "-", ""))
		if err != nil || len(raw) != 16 {
			return cty.UnknownVal(cty.String), fmt.Errorf("uuidv5: namespace %q is not dns, url, oid, x500 or a UUID", args[0].AsString())
		}
		h := sha1.New()
		h.Write(raw)
		h.Write([]byte(args[1].AsString()))
		var u [16]byte
		copy(u[:], h.Sum(nil))
		return cty.StringVal(formatUUID(u, 5)), nil
	},
})

// formatUUID sets the version and RFC 4122 variant bits and formats u.
func formatUUID(u [16]byte, version byte) string {
	u[6] = u[6]&0x0f | version<<4
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// fileBase64Func is filebase64 bound to base, as file is.
func fileBase64Func(base string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := readInDir(base, args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			return cty.StringVal(base64.StdEncoding.EncodeToString(b)), nil
		},
	})
}
