// Package examples holds runnable job files (*.hcl), each a commented tour
// of part of the jobspec grammar; examples_test.go validates every one.
// It has no Go code and imports nothing.
package examples
