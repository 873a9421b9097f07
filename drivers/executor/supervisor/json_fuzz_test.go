//go:build !supervisor_stdjson

package supervisor

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The parser of the supervisor's own codec (json.go) is fuzzed against
// encoding/json; it is not built with -tags supervisor_stdjson.

// normalize turns parseJSON's numbers into float64, as encoding/json has them.
func normalize(v any) any {
	switch x := v.(type) {
	case jsonNumber:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,true,false,null,"x\u00e9\ud83d\ude00"]}`, `"\ud800"`, `"\ud800\u0041"`,
		`"\udc00\ud800"`, "\"\xff\"", `01`, `1.`, `-`, `{"a":1,"a":2}`, ` [ ] `, `{}x`, `"\/\b\f\n\r\t"`, `1e+`, `[1,]`, "\"\x01\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseJSON(b)
		if valid := json.Valid(b); (err == nil) != valid {
			t.Fatalf("parseJSON(%q) error %v, encoding/json valid %v", b, err, valid)
		}
		if err != nil {
			return
		}
		var want any
		if err := json.Unmarshal(b, &want); err != nil {
			return // e.g. a number out of float64 range
		}
		if diff := cmp.Diff(want, normalize(got)); diff != "" {
			t.Fatalf("parseJSON(%q) (-encoding/json +got):\n%s", b, diff)
		}
	})
}
