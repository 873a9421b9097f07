// Package codec is the JSON codec of what servers write and send in bulk:
// Raft log entries (server/fsm) and HTTP API responses (agent/http), and
// of the client agent's side of those responses (API, an api.Client's
// JSON, in agent/client and agent/sim). Both roles use it, so it lives
// in internal/ rather than under server/. It is
// github.com/goccy/go-json, held to encoding/json's output: codectest
// checks every stored and sent type, with every field set, encodes to the
// bytes encoding/json writes and decodes to the value encoding/json reads.
// A 10,000-alloc plan entry encodes in about two thirds and decodes in
// about a quarter of encoding/json's time.
//
// Request bodies from outside are still read with encoding/json
// (agent/http's decodeBody), for its error types.
//
// It imports no drover package. Its functions are safe for concurrent use.
package codec
