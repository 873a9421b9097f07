package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/drover/drover/api"
)

// IsJSON reports whether a job source is JSON (its first non-blank byte is
// "{"), not HCL: the CLI reads such files as Nomad's `-json` does.
func IsJSON(src []byte) bool {
	t := bytes.TrimLeft(src, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{'
}

// maxJSONJob bounds a JSON job source, as MaxSourceBytes does HCL.
const maxJSONJob = MaxSourceBytes

// ParseJSON reads a JSON job: either {"Job": {...}} (what `job inspect` and
// `job run -output` print) or the job object itself. Unknown fields are
// errors; problems come back as Diagnostics (file:line:col: message), then
// the job is finished as Parse does (namespace, defaults, validation).
func ParseJSON(filename string, src []byte, opts *Options) (*api.Job, error) {
	if opts == nil {
		opts = &Options{}
	}
	if len(src) > maxJSONJob {
		return nil, Diagnostics{{File: filename, Line: 1, Column: 1,
			Message: fmt.Sprintf("job file is %d bytes, over the %d byte limit", len(src), maxJSONJob)}}
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(src, &probe); err != nil {
		return nil, jsonDiag(filename, src, err)
	}
	body := src
	if raw, ok := probe["Job"]; ok && len(probe) == 1 {
		body = raw
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	job := &api.Job{}
	if err := dec.Decode(job); err != nil { // trailing data failed the probe
		return nil, jsonDiag(filename, src, err)
	}
	if errs := finish(job, opts); len(errs) > 0 {
		ds := make(Diagnostics, 0, len(errs))
		for _, e := range errs {
			ds = append(ds, Diagnostic{File: filename, Line: 1, Column: 1, Message: e.Error()})
		}
		return nil, ds
	}
	return job, nil
}

// jsonDiag places a decoding error at its line and column when the error
// says where.
func jsonDiag(filename string, src []byte, err error) Diagnostics {
	offset := int64(-1)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		offset = se.Offset
	case errors.As(err, &te):
		offset = te.Offset
	}
	line, col := 1, 1
	if offset >= 0 {
		for i := int64(0); i < offset && i < int64(len(src)); i++ {
			if src[i] == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
	}
	return Diagnostics{{File: filename, Line: line, Column: col, Message: "JSON: " + strings.TrimPrefix(err.Error(), "json: ")}}
}
