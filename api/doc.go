// Package api holds drover's wire types — the one model used by the HCL
// jobspec, the JSON HTTP API, the CLI, the server and the client — and the
// Go HTTP client for the REST API.
//
// JSON field names follow Nomad's HTTP API (PascalCase) so that job JSON
// produced by Nomad tooling is accepted unchanged. Durations are encoded
// as integer nanoseconds, as Nomad does.
//
// Imports: the standard library only (a test enforces this).
//
// Concurrency: the types are plain data. Objects read from the server's
// state store are shared and must be treated as immutable; use the Copy
// methods before modifying. A *Client is safe for concurrent use.
package api
