package api

import (
	"encoding/json"
	"math"
	"testing"
	"unsafe"

	gojson "github.com/goccy/go-json"
	"github.com/google/go-cmp/cmp"
)

// TestScoresJSONIsTheMapShape: Scores encode byte for byte as the map
// they replace did, through both JSON libraries, and decode back.
func TestScoresJSONIsTheMapShape(t *testing.T) {
	cases := []map[string]float64{
		nil,
		{},
		{"binpack": 0.7234},
		{"binpack": 1, "job-anti-affinity": -0.5, "node-affinity": 1e-7, "devices": 3e21},
		{"a<b>&": 2, "quote\"back\\slash": -0.25, "ünï": 0, "tab\t": 12.5},
	}
	for _, m := range cases {
		var s Scores
		if m != nil {
			s = Scores{}
			for k, v := range m {
				s = append(s, Score{Name: k, Value: v})
			}
			s.sort()
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		for name, marshal := range map[string]func(any) ([]byte, error){"encoding/json": json.Marshal, "goccy": gojson.Marshal} {
			got, err := marshal(NodeScoreMeta{NodeID: "n", Scores: s})
			if err != nil {
				t.Fatal(err)
			}
			wantMeta, _ := json.Marshal(map[string]any{"NodeID": "n", "Scores": m, "NormScore": 0})
			var a, b any
			json.Unmarshal(got, &a)
			json.Unmarshal(wantMeta, &b)
			if diff := cmp.Diff(b, a); diff != "" {
				t.Errorf("%s: %v encodes as %s, want %s", name, m, got, wantMeta)
			}
		}
		got, err := s.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%v: got %s, want %s", m, got, want)
		}
		for name, unmarshal := range map[string]func([]byte, any) error{"encoding/json": json.Unmarshal, "goccy": gojson.Unmarshal} {
			var back NodeScoreMeta
			if err := unmarshal([]byte(`{"Scores":`+string(want)+`}`), &back); err != nil {
				t.Fatalf("%s: %s: %v", name, want, err)
			}
			if diff := cmp.Diff(s, back.Scores); diff != "" {
				t.Errorf("%s: %s decodes to %v (-want +got):\n%s", name, want, back.Scores, diff)
			}
		}
	}
}

// TestScoresDecodeAnyObject: forms the fast path does not take (spaces,
// escapes, disorder, duplicates) decode as encoding/json decodes the map;
// what is not an object of numbers is an error.
func TestScoresDecodeAnyObject(t *testing.T) {
	for _, in := range []string{
		`{ "b": 1, "a": 2 }`, `{"b":1,"a":2}`, `{"a":1,"a":3}`, `{"\u0061":1}`, `{"x":-0.0}`,
		`{"x":1E+2}`, `{"x":12.5e-3}`, "\t{\"y\":4}\n",
	} {
		var m map[string]float64
		if err := json.Unmarshal([]byte(in), &m); err != nil {
			t.Fatal(err)
		}
		var s Scores
		if err := s.UnmarshalJSON([]byte(in)); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if len(s) != len(m) {
			t.Fatalf("%s: got %v, want %v", in, s, m)
		}
		for i, c := range s {
			if m[c.Name] != c.Value || i > 0 && s[i-1].Name >= c.Name {
				t.Errorf("%s: got %v, want %v in name order", in, s, m)
			}
		}
	}
	for _, in := range []string{
		`{"x":01}`, `{"x":-Inf}`, `{"x":0x10}`, `{"x":NaN}`, `{"x":1,}`, `{"x"}`, `{"x":"1"}`,
		`{"x":1.}`, `{"x":.5}`, `{"x":1e}`, `[1]`, `{`, `{"x":1_0}`,
	} {
		var s Scores
		if err := s.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%s: decoded as %v, want an error", in, s)
		}
	}
	if _, err := (Scores{{Name: "x", Value: math.NaN()}}).MarshalJSON(); err == nil {
		t.Error("NaN encoded, want an error")
	}
}

// TestScoresShareKnownNames: decoded scheduler names are the package's
// strings, not one copy per alloc.
func TestScoresShareKnownNames(t *testing.T) {
	var a, b Scores
	if err := a.UnmarshalJSON([]byte(`{"binpack":0.5}`)); err != nil {
		t.Fatal(err)
	}
	if err := b.UnmarshalJSON([]byte(`{"binpack":0.25}`)); err != nil {
		t.Fatal(err)
	}
	if unsafeData(a[0].Name) != unsafeData(b[0].Name) {
		t.Error("two decodes of binpack hold two strings")
	}
	if v, ok := a.Get("binpack"); !ok || v != 0.5 {
		t.Errorf("Get(binpack) = %v, %v", v, ok)
	}
	if _, ok := a.Get("devices"); ok {
		t.Error("Get(devices) found a score that is not there")
	}
}

// FuzzScoresDecode: any input decodes as encoding/json decodes the map,
// or fails where it fails.
func FuzzScoresDecode(f *testing.F) {
	for _, s := range []string{`{"binpack":0.5}`, `{"a":1,"b":-2e-9}`, `{ "b":1 ,"a":2}`, `null`, `{}`, `{"x":01}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var m map[string]float64
		werr := json.Unmarshal(in, &m)
		var s Scores
		gerr := s.UnmarshalJSON(in)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/json err %v, Scores err %v", in, werr, gerr)
		}
		if werr != nil {
			return
		}
		if len(s) != len(m) {
			t.Fatalf("%q: got %v, want %v", in, s, m)
		}
		for _, c := range s {
			if v, ok := m[c.Name]; !ok || v != c.Value && !(math.IsNaN(v) && math.IsNaN(c.Value)) {
				t.Fatalf("%q: got %v, want %v", in, s, m)
			}
		}
	})
}

func unsafeData(s string) *byte { return unsafe.StringData(s) }
