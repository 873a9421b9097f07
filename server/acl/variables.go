package acl

import (
	"fmt"
	"slices"
	"strings"
)

// Variable capabilities (Nomad's), granted by path in a namespace rule:
//
//	namespace "x" { variables { path "team/*" { capabilities = ["read", "list"] } } }
const (
	VarRead    = "read"
	VarWrite   = "write"
	VarList    = "list"
	VarDestroy = "destroy"
	VarDeny    = "deny"
)

var varCaps = []string{VarRead, VarWrite, VarList, VarDestroy, VarDeny}

// VariablesRule is a namespace rule's variables block.
type VariablesRule struct {
	Paths []*VariablePathRule `hcl:"path,block"`
}

// VariablePathRule grants capabilities on the variables whose path
// matches Path (a glob with *).
type VariablePathRule struct {
	Path         string   `hcl:"path,label"`
	Capabilities []string `hcl:"capabilities"`
}

func (v *VariablesRule) validate(ns string) error {
	if v == nil {
		return nil
	}
	for _, p := range v.Paths {
		if p.Path == "" {
			return fmt.Errorf("namespace %q: variables path with an empty pattern", ns)
		}
		for _, c := range p.Capabilities {
			if !slices.Contains(varCaps, c) {
				return fmt.Errorf("namespace %q: variables path %q: unknown capability %q (want one of %s)", ns, p.Path, c, strings.Join(varCaps, ", "))
			}
		}
	}
	return nil
}

func (a *ACL) addVariables(ns string, v *VariablesRule) {
	if v == nil {
		return
	}
	paths := a.vars[ns]
	if paths == nil {
		paths = map[string]map[string]bool{}
		a.vars[ns] = paths
	}
	for _, p := range v.Paths {
		caps := paths[p.Path]
		if caps == nil {
			caps = map[string]bool{}
			paths[p.Path] = caps
		}
		for _, c := range p.Capabilities {
			caps[c] = true
		}
	}
}

// Workload is what a workload identity stands for: a task of a live
// alloc. Its ACL holds only the implicit access Nomad gives a task to
// its own variables.
type Workload struct {
	Namespace, JobID, Group, Task string
}

// ForWorkload is the ACL of a workload identity: read and list on
// nomad/jobs/<job>, nomad/jobs/<job>/<group> and
// nomad/jobs/<job>/<group>/<task> in its namespace, and nothing else.
func ForWorkload(w Workload) *ACL { return &ACL{workload: &w} }

// WorkloadOf is the workload an ACL stands for (nil for other ACLs).
func (a *ACL) WorkloadOf() *Workload {
	if a == nil {
		return nil
	}
	return a.workload
}

// implicit reports whether the workload's implicit access covers c on
// path in ns.
func (w *Workload) implicit(ns, path, c string) bool {
	if w == nil || ns != w.Namespace || (c != VarRead && c != VarList) {
		return false
	}
	base := "nomad/jobs/" + w.JobID
	return path == base || path == base+"/"+w.Group || path == base+"/"+w.Group+"/"+w.Task
}

// AllowVariable reports whether the ACL holds variable capability c
// (VarRead, VarWrite, VarList, VarDestroy) on path in namespace ns: the
// most specific path rule of the most specific namespace rule decides,
// deny wins within it; nothing is allowed without a rule (a workload
// identity's implicit paths aside).
func (a *ACL) AllowVariable(ns, path, c string) bool {
	if a == nil || a.nodeID != "" {
		return false
	}
	if a.management {
		return true
	}
	if a.workload.implicit(ns, path, c) {
		return true
	}
	paths, ok := bestGlob(a.vars, ns)
	if !ok {
		return false
	}
	caps, ok := bestGlob(paths, path)
	return ok && !caps[VarDeny] && caps[c]
}

// AllowVariableAnywhere reports whether c is held on some path of ns
// ("*": of some namespace): a list is answered, then filtered per item.
func (a *ACL) AllowVariableAnywhere(ns, c string) bool {
	if a == nil || a.nodeID != "" {
		return false
	}
	if a.management {
		return true
	}
	if w := a.workload; w != nil && (ns == w.Namespace || ns == "*") && (c == VarRead || c == VarList) {
		return true
	}
	held := func(paths map[string]map[string]bool) bool {
		for _, caps := range paths {
			if !caps[VarDeny] && caps[c] {
				return true
			}
		}
		return false
	}
	if ns != "*" {
		paths, ok := bestGlob(a.vars, ns)
		return ok && held(paths)
	}
	for _, paths := range a.vars {
		if held(paths) {
			return true
		}
	}
	return false
}
