// Package jobspec parses Nomad's HCL2 jobspec grammar (plus drover's
// additions) into api.Job: variables (-var, -var-file, DROVER_VAR_* and
// NOMAD_VAR_*), locals, the cty standard function library plus file and
// fileexists (confined to the job file's directory), dynamic blocks,
// defaults (api.Job.Canonicalize) and validation, with every problem
// reported as file:line:col: message in a Diagnostics error.
//
// Interpolations of runtime names (${node.*}, ${attr.*}, ${meta.*},
// ${device.*}, ${env[...]}, ${NOMAD_*} and other upper-case environment
// names) are kept literally for the server or client to resolve; so is
// any other name that is no variable (${foo}), as Nomad keeps it, with a
// warning. Driver config blocks are kept schemaless: attributes keep
// their values, nested blocks become lists of maps. As in Nomad, a task
// written directly in the job is a group of its own name, and a group
// that scales without a count starts at scaling's min.
//
// Limits (limits.go): a source over MaxSourceBytes, nested deeper than
// MaxNestingDepth, with an expression of more than MaxOperators operators
// or more than MaxTokens tokens is refused with a diagnostic before
// hashicorp/hcl, whose recursive descent has no limit, sees it. The scan
// mirrors hclsyntax's token rules (strings, heredocs, comments, template
// sequences); FuzzScanMatchesLexer holds it to them. It allocates nothing
// per token, unlike hclsyntax's own lexer, whose tokens a check could
// count instead. BenchmarkHostileNesting (`make bench`) gives both a list
// nested 100,000 deep (200 KB): on the 2-core development VM on
// 2026-12-07 (3 runs) Parse refused it in 104 µs having allocated 11 KB,
// where hclsyntax.LexConfig alone took 148 ms and 96 MB, and
// hclsyntax.ParseConfig alone died of a stack overflow after 1.6 s at
// 1,073 MB resident.
//
// What evaluation builds is bounded per parse (budget.go, funcbudget.go):
// MaxValueBytes of strings and MaxValues values, charged by every
// function and by the expressions that build values (function arguments,
// for, templates, constructors), with functions that can build far more
// than their arguments (formatlist, join, replace, setproduct...) refused
// before they run, and regular expressions bounded in work. The first
// excess fails the parse, even under try() or can().
//
// Job, group and task names are checked with api.CheckJobID and
// api.CheckName (they become path elements on clients), at their labels.
//
// Imports: api, the standard library and the HCL/cty libraries only; never
// server, agent or drivers.
//
// Concurrency: Parse and ParseFile are pure functions of their inputs (and
// the files they are told to read); they share no mutable state and may be
// called from any number of goroutines.
package jobspec
