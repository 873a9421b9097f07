package codec_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/codec"
	"github.com/drover/drover/internal/codec/codectest"
)

type ptrMarshaler struct{ V int }

func (p *ptrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"custom"`), nil }

type embedded struct{ E string }

type selfMarshaling struct {
	A []int
}

func (s selfMarshaling) MarshalJSON() ([]byte, error) { return []byte(`"self"`), nil }

type marshalingSlice []int

func (marshalingSlice) MarshalJSON() ([]byte, error) { return []byte(`"slice"`), nil }

// TestEncodeFields: EncodeFields writes what encoding/json writes, for
// empty, nil and filled slices, omitempty, a pointer receiver's
// MarshalJSON, skipped and renamed fields, and what it encodes whole
// (embedded fields, tag options, types with their own MarshalJSON).
func TestEncodeFields(t *testing.T) {
	type plain struct {
		Allocs  []*api.Allocation `json:"Allocs,omitempty"`
		Nil     []string          `json:"Nil"`
		Empty   []int             `json:"Empty"`
		Bytes   []byte            `json:"Bytes"`
		Custom  ptrMarshaler      `json:"Custom"`
		Customs []ptrMarshaler    `json:"Customs"`
		Skip    string            `json:"-"`
		Renamed string            `json:"other,omitempty"`
		NoTag   *api.Job
		hidden  int
	}
	type withEmbedded struct {
		embedded
		A []int
	}
	type withOption struct {
		N int `json:"N,string"`
	}
	type withMarshalingSlice struct {
		S marshalingSlice
	}
	filled := codectest.Filled[plain](1)
	filled.hidden = 1
	cases := []any{
		&plain{}, plain{Empty: []int{}}, filled, codectest.Filled[api.Job](2),
		&withEmbedded{embedded{"e"}, []int{1}}, &withOption{N: 3}, 42, nil, (*plain)(nil),
		&selfMarshaling{A: []int{1}}, &withMarshalingSlice{S: marshalingSlice{1}},
	}
	for _, v := range cases {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := codec.EncodeFields(&buf, v); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%T: EncodeFields writes\n%s\nencoding/json writes\n%s", v, buf.Bytes(), want)
		}
	}
}
