package codec

import (
	"bytes"
	"encoding"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"sync"

	gojson "github.com/goccy/go-json"
)

// Encode writes v's JSON and a newline to w, as json.Encoder.Encode.
func Encode(w io.Writer, v any) error { return gojson.NewEncoder(w).Encode(v) }

// Marshal returns v's JSON, as json.Marshal.
func Marshal(v any) ([]byte, error) { return gojson.Marshal(v) }

// Unmarshal reads data into v, as json.Unmarshal; decoded strings are
// copies (they keep no part of data alive).
func Unmarshal(data []byte, v any) error { return gojson.Unmarshal(data, v) }

// API is this codec as an api.Client's JSON (api.Codec).
var API apiCodec

type apiCodec struct{}

func (apiCodec) Marshal(v any) ([]byte, error)      { return Marshal(v) }
func (apiCodec) Unmarshal(data []byte, v any) error { return Unmarshal(data, v) }

// Valid reports whether data is one JSON value, as json.Valid.
func Valid(data []byte) bool { return gojson.Valid(data) }

// EncodeFields writes v, a struct or a pointer to one, to buf as Encode
// would (less the newline), but a field at a time and a slice field an
// element at a time: no encoder buffer then holds the whole of a large
// value (a 10,000-alloc plan is ~11 MB), which would be grown, copied
// and collected on every call. Structs with embedded fields, and fields
// with tag options other than omitempty, are encoded whole.
func EncodeFields(buf *bytes.Buffer, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	var fields []field
	if rv.Kind() == reflect.Struct {
		fields = fieldsOf(rv.Type())
	}
	enc := gojson.NewEncoder(buf)
	if fields == nil {
		return encodeTrimmed(enc, buf, v)
	}
	buf.WriteByte('{')
	first := true
	for _, f := range fields {
		fv := rv.Field(f.index)
		if f.omitEmpty && isEmpty(fv) {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.WriteString(f.key)
		if !f.perElement || fv.IsNil() {
			if err := encodeTrimmed(enc, buf, addrOf(fv)); err != nil {
				return err
			}
			continue
		}
		buf.WriteByte('[')
		for i := range fv.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encodeTrimmed(enc, buf, addrOf(fv.Index(i))); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	}
	buf.WriteByte('}')
	return nil
}

// addrOf is v for encoding: through a pointer when addressable, as
// encoding/json calls a pointer receiver's MarshalJSON on an addressable
// value (a pointer's JSON is its value's).
func addrOf(v reflect.Value) any {
	if v.CanAddr() {
		return v.Addr().Interface()
	}
	return v.Interface()
}

// encodeTrimmed writes v's JSON to buf, enc's writer, without the
// newline.
func encodeTrimmed(enc *gojson.Encoder, buf *bytes.Buffer, v any) error {
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1)
	return nil
}

// field is how EncodeFields writes one struct field: key is `"Name":`;
// perElement: a slice written an element at a time (not []byte, not a
// type that encodes itself).
type field struct {
	index      int
	key        string
	omitEmpty  bool
	perElement bool
}

var fieldCache sync.Map // reflect.Type -> []field (nil: encode whole)

// marshals reports whether t or *t encodes itself (json.Marshaler or
// encoding.TextMarshaler).
func marshals(t reflect.Type) bool {
	for _, x := range []reflect.Type{t, reflect.PointerTo(t)} {
		if x.Implements(reflect.TypeFor[json.Marshaler]()) || x.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
			return true
		}
	}
	return false
}

// fieldsOf returns t's encoded fields in order, or nil when t encodes
// itself or has a field EncodeFields does not write itself.
func fieldsOf(t reflect.Type) []field {
	if c, ok := fieldCache.Load(t); ok {
		return c.([]field)
	}
	var out []field
	if marshals(t) {
		fieldCache.Store(t, out)
		return nil
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			out = nil
			break
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts != "" && opts != "omitempty" {
			out = nil
			break
		}
		if name == "" {
			name = sf.Name
		}
		key, err := Marshal(name)
		if err != nil {
			out = nil
			break
		}
		perElement := sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() != reflect.Uint8 && !marshals(sf.Type)
		out = append(out, field{index: i, key: string(key) + ":", omitEmpty: opts == "omitempty", perElement: perElement})
	}
	if out == nil {
		out = []field(nil)
	}
	fieldCache.Store(t, out)
	return out
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
