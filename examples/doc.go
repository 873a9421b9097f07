// Package examples holds runnable job files (*.hcl), each a commented tour
// of part of the jobspec grammar that says in its first lines what it
// needs ("# Needs: only make dev", or what else and the end-to-end test
// that runs it so). examples_test.go validates and format-checks every
// one and holds every example to that header; agent's
// TestE2EExamplesOnDevAgent runs each dev-agent example on `drover agent
// -dev`. It has no Go code and imports nothing.
package examples
