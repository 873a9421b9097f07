package codec

import (
	"io"

	gojson "github.com/goccy/go-json"
)

// Encode writes v's JSON and a newline to w, as json.Encoder.Encode.
func Encode(w io.Writer, v any) error { return gojson.NewEncoder(w).Encode(v) }

// Marshal returns v's JSON, as json.Marshal.
func Marshal(v any) ([]byte, error) { return gojson.Marshal(v) }

// Unmarshal reads data into v, as json.Unmarshal; decoded strings are
// copies (they keep no part of data alive).
func Unmarshal(data []byte, v any) error { return gojson.Unmarshal(data, v) }

// Valid reports whether data is one JSON value, as json.Valid.
func Valid(data []byte) bool { return gojson.Valid(data) }
