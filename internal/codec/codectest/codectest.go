package codectest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover/drover/internal/codec"
)

// Filled returns a new T with every field it can reach (through at most
// 6 pointers, slices and maps) set to a non-zero value that varies with
// seed, so a codec test covers fields added later without listing them.
// Strings carry a quote, HTML specials and a non-ASCII rune; numbers are
// fractions; interfaces hold a JSON-shaped map.
func Filled[T any](seed int) *T {
	v := new(T)
	Fill(v, seed)
	return v
}

// Fill sets every field *ptr reaches, as Filled.
func Fill(ptr any, seed int) {
	f := &filler{n: seed}
	f.fill(reflect.ValueOf(ptr).Elem(), 0)
}

type filler struct{ n int }

func (f *filler) fill(v reflect.Value, depth int) {
	f.n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + string(rune('a'+f.n%26)) + "\"<&>\u00e9")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.n % 100))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.n % 200))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.n)/7 + 1e-9)
	case reflect.Pointer:
		if depth > 5 {
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth > 5 {
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 { // []byte: base64 in JSON
			v.SetBytes([]byte{byte(f.n), 0, 255})
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			f.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		if depth > 5 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.fill(k, depth+1)
			f.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Interface:
		if v.NumMethod() == 0 {
			v.Set(reflect.ValueOf(map[string]any{"k": "v", "n": float64(f.n) / 3, "l": []any{"x", true, nil}}))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(int64(1_700_000_000+f.n), int64(f.n)).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i), depth)
			}
		}
	}
}

// MatchesJSON checks that codec encodes v (a pointer) to the bytes
// encoding/json writes, and that codec decodes those bytes to the value
// encoding/json reads from them. It returns the encoding.
func MatchesJSON(t testing.TB, v any) []byte {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%T: encoding/json: %v", v, err)
	}
	got, err := codec.Marshal(v)
	if err != nil {
		t.Fatalf("%T: codec: %v", v, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%T: codec writes\n%s\nencoding/json writes\n%s", v, got, want)
	}
	var buf bytes.Buffer
	if err := codec.Encode(&buf, v); err != nil || !bytes.Equal(buf.Bytes(), append(want, '\n')) {
		t.Errorf("%T: codec.Encode differs from encoding/json (err %v)", v, err)
	}
	rt := reflect.TypeOf(v).Elem()
	std, ours := reflect.New(rt).Interface(), reflect.New(rt).Interface()
	if err := json.Unmarshal(want, std); err != nil {
		t.Fatalf("%T: encoding/json reads its own output: %v", v, err)
	}
	if err := codec.Unmarshal(want, ours); err != nil {
		t.Fatalf("%T: codec reads encoding/json's output: %v", v, err)
	}
	if diff := cmp.Diff(std, ours, cmpopts.EquateEmpty(), cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
		t.Errorf("%T: codec reads differently from encoding/json (-json +codec):\n%s", v, diff)
	}
	return want
}
