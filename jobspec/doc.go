// Package jobspec parses Nomad's HCL2 jobspec grammar (plus drover's
// additions) into api.Job: variables (-var, -var-file, DROVER_VAR_* and
// NOMAD_VAR_*), locals, the cty standard function library plus file and
// fileexists (confined to the job file's directory), dynamic blocks,
// defaults (api.Job.Canonicalize) and validation, with every problem
// reported as file:line:col: message in a Diagnostics error.
//
// Interpolations of runtime names (${node.*}, ${attr.*}, ${meta.*},
// ${device.*}, ${env[...]}, ${NOMAD_*} and other upper-case environment
// names) are kept literally for the server or client to resolve. Driver
// config blocks are kept schemaless: attributes keep their values, nested
// blocks become lists of maps.
//
// Limits (limits.go): a source over MaxSourceBytes, nested deeper than
// MaxNestingDepth, with an expression of more than MaxOperators operators
// or more than MaxTokens tokens is refused with a diagnostic before
// hashicorp/hcl, whose recursive descent has no limit, sees it. The scan
// mirrors hclsyntax's token rules (strings, heredocs, comments, template
// sequences); FuzzScanMatchesLexer holds it to them.
//
// Imports: api, the standard library and the HCL/cty libraries only; never
// server, agent or drivers.
//
// Concurrency: Parse and ParseFile are pure functions of their inputs (and
// the files they are told to read); they share no mutable state and may be
// called from any number of goroutines.
package jobspec
