//go:build supervisor_stdjson

package supervisor

import (
	"bufio"
	"encoding/json"
)

// The supervisor's messages through encoding/json instead of its own codec
// (codec.go, json.go): built only with -tags supervisor_stdjson, for
// BenchmarkSupervisorJSON, which measures what the own codec saves.

// AppendJSON appends r as JSON (the exit-status file).
func (r *Result) AppendJSON(b []byte) []byte { return appendMarshal(b, r) }

// AppendJSON appends s as JSON (one line on the start pipe).
func (s *Started) AppendJSON(b []byte) []byte { return appendMarshal(b, s) }

// appendJSON appends r as JSON (one line on the init's status pipe).
func (r *initReport) appendJSON(b []byte) []byte { return appendMarshal(b, r) }

// appendMarshal appends v's encoding; the types above always encode.
func appendMarshal(b []byte, v any) []byte {
	j, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return append(b, j...)
}

func decodeConfig(b []byte) (*Config, error) {
	c := &Config{}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, err
	}
	return c, nil
}

// readInitReport reads the next line of the init's status pipe.
func readInitReport(r *bufio.Reader) (initReport, error) {
	var rep initReport
	line, err := r.ReadBytes('\n')
	if err != nil {
		return rep, err
	}
	err = json.Unmarshal(line, &rep)
	return rep, err
}
