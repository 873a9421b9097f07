package api

import (
	"fmt"
	"regexp"
	"sync"
)

// Built-in node pools (Nomad's): every node is in "all"; nodes and jobs
// that name no pool are in "default". Neither can be changed or deleted.
const (
	NodePoolAll = "all"
)

// NodePool groups client nodes; jobs name the pool they run in. A pool is
// created by `drover node pool apply` or, implicitly, when a node
// registers in a pool that does not exist yet.
type NodePool struct {
	Name        string            `json:"Name"`
	Description string            `json:"Description,omitempty"`
	Meta        map[string]string `json:"Meta,omitempty"`
	CreateIndex uint64            `json:"CreateIndex"`
	ModifyIndex uint64            `json:"ModifyIndex"`
}

// NodePoolUpsertRequest is the body of PUT /v1/node/pools.
type NodePoolUpsertRequest struct {
	NodePools []*NodePool `json:"NodePools"`
}

// nodePoolName is compiled on first use, as namespaceName.
var nodePoolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`) })

// IsBuiltinNodePool reports whether name is "all" or "default".
func IsBuiltinNodePool(name string) bool { return name == NodePoolAll || name == DefaultNodePool }

// BuiltinNodePools returns fresh copies of the built-in pools.
func BuiltinNodePools() []*NodePool {
	return []*NodePool{
		{Name: NodePoolAll, Description: "Node pool with all nodes in the cluster."},
		{Name: DefaultNodePool, Description: "Default node pool."},
	}
}

// Validate checks a pool a user writes: a name of letters, digits, - and
// _ (at most 128), not a built-in pool, at most 256 bytes of description
// and 64 meta keys.
func (p *NodePool) Validate() error {
	switch {
	case p == nil:
		return Errorf(ErrBadRequest, "node pool: missing")
	case !nodePoolName().MatchString(p.Name):
		return Errorf(ErrBadRequest, fmt.Sprintf("node pool name %q: want 1 to 128 letters, digits, - or _", p.Name))
	case IsBuiltinNodePool(p.Name):
		return Errorf(ErrBadRequest, fmt.Sprintf("node pool %q is built in and can't be changed", p.Name))
	case len(p.Description) > 256:
		return Errorf(ErrBadRequest, fmt.Sprintf("node pool %q: description over 256 bytes", p.Name))
	case len(p.Meta) > 64:
		return Errorf(ErrBadRequest, fmt.Sprintf("node pool %q: more than 64 meta keys", p.Name))
	}
	return nil
}

// Copy returns a deep copy.
func (p *NodePool) Copy() *NodePool {
	if p == nil {
		return nil
	}
	return deepCopy(p)
}
