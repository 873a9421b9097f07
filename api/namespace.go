package api

import (
	"fmt"
	"regexp"
	"sync"
)

// Namespace is a named scope for jobs and their allocs, evals and
// deployments. "default" always exists; others are applied
// (`drover namespace apply`). A namespace may name the queue its jobs use
// when they name none (our addition to Nomad's object).
type Namespace struct {
	Name        string            `json:"Name"`
	Description string            `json:"Description,omitempty"`
	Meta        map[string]string `json:"Meta,omitempty"`
	// Queue is the default queue of the namespace's jobs ("" : the
	// default queue).
	Queue       string `json:"Queue,omitempty"`
	CreateIndex uint64 `json:"CreateIndex"`
	ModifyIndex uint64 `json:"ModifyIndex"`
}

// namespaceName is compiled on first use: its counted repetitions compile to
// hundreds of instructions, which every command (the CLI, an agent's
// start) would pay at start-up.
var namespaceName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`) })

// Validate checks a namespace a user writes (as Nomad: letters, digits
// and dashes, at most 128; a description of at most 256 bytes).
func (n *Namespace) Validate() error {
	switch {
	case n == nil:
		return Errorf(ErrBadRequest, "namespace: missing")
	case !namespaceName().MatchString(n.Name):
		return Errorf(ErrBadRequest, fmt.Sprintf("namespace name %q: want 1 to 128 letters, digits or dashes", n.Name))
	case len(n.Description) > 256:
		return Errorf(ErrBadRequest, fmt.Sprintf("namespace %q: description over 256 bytes", n.Name))
	case len(n.Meta) > 64:
		return Errorf(ErrBadRequest, fmt.Sprintf("namespace %q: more than 64 meta keys", n.Name))
	case n.Queue != "" && !ValidQueueName(n.Queue):
		return Errorf(ErrBadRequest, fmt.Sprintf("namespace %q: invalid queue %q", n.Name, n.Queue))
	}
	return nil
}

// Copy returns a deep copy.
func (n *Namespace) Copy() *Namespace {
	if n == nil {
		return nil
	}
	return deepCopy(n)
}

// DefaultNamespaceObject is the built-in default namespace.
func DefaultNamespaceObject() *Namespace {
	return &Namespace{Name: DefaultNamespace, Description: "Default shared namespace"}
}
