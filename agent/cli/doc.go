// Package cli is drover's cobra command line: `drover <noun> <verb>`
// over the REST API (through api.Client), plus `drover agent` which wires
// the server and client roles. Each file adds its commands to the noun
// groups declared in root.go from an init function.
//
// Exit codes: 0 ok, 1 error, 2 usage. Human tables by default, -json for
// machines: a read command (list, status, info) is built by readCmd
// (read.go) from what it reads and how a person sees it, so -json, the
// table and the "No ... found" line are written in one place.
package cli
