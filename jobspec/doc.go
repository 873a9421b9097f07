// Package jobspec parses Nomad's HCL2 jobspec grammar (plus drover's
// additions) into api.Job: variables, locals, functions, dynamic blocks,
// defaults and validation with file:line:col diagnostics.
//
// Imports: api and the HCL libraries only.
package jobspec
