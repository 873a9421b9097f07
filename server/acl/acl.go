package acl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/drover/drover/server/glob"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Namespace capabilities (Nomad's names).
const (
	CapListJobs       = "list-jobs"
	CapParseJob       = "parse-job"
	CapReadJob        = "read-job"
	CapSubmitJob      = "submit-job"
	CapDispatchJob    = "dispatch-job"
	CapReadLogs       = "read-logs"
	CapReadFS         = "read-fs"
	CapAllocExec      = "alloc-exec"
	CapAllocLifecycle = "alloc-lifecycle"
	CapScaleJob       = "scale-job"
	CapReadJobScaling = "read-job-scaling"
	CapListScaling    = "list-scaling-policies"
	CapReadScaling    = "read-scaling-policy"
	CapDeny           = "deny"
)

// Policy levels.
const (
	PolicyDeny  = "deny"
	PolicyRead  = "read"
	PolicyWrite = "write"
	PolicyScale = "scale"
)

var (
	readCaps  = []string{CapListJobs, CapParseJob, CapReadJob, CapReadJobScaling, CapListScaling, CapReadScaling}
	scaleCaps = []string{CapListScaling, CapReadScaling, CapReadJobScaling, CapScaleJob}
	writeCaps = append(slices.Clone(readCaps), CapSubmitJob, CapDispatchJob, CapReadLogs, CapReadFS, CapAllocExec,
		CapAllocLifecycle, CapScaleJob)
	allCaps = append(slices.Clone(writeCaps), CapDeny)
)

// Policy is one parsed policy document.
type Policy struct {
	Namespaces []*NamespaceRule `hcl:"namespace,block"`
	Node       *LevelRule       `hcl:"node,block"`
	Agent      *LevelRule       `hcl:"agent,block"`
	Operator   *LevelRule       `hcl:"operator,block"`
	Queues     []*QueueRule     `hcl:"queue,block"`
}

// NamespaceRule grants capabilities in the namespaces matching Name (a
// glob with *).
type NamespaceRule struct {
	Name         string   `hcl:"name,label"`
	Policy       string   `hcl:"policy,optional"`
	Capabilities []string `hcl:"capabilities,optional"`
	// Variables grants capabilities on the namespace's variables by path
	// (variables.go); none without it.
	Variables *VariablesRule `hcl:"variables,block"`
}

// LevelRule is read, write or deny on a non-namespaced API.
type LevelRule struct {
	Policy string `hcl:"policy"`
}

// QueueRule is read or write on the queues matching Name (a glob).
type QueueRule struct {
	Name   string `hcl:"name,label"`
	Policy string `hcl:"policy"`
}

// MaxRulesBytes bounds a policy document.
const MaxRulesBytes = 64 << 10

// Parse reads a policy's rules; errors carry line:col.
func Parse(rules string) (*Policy, error) {
	if len(rules) > MaxRulesBytes {
		return nil, fmt.Errorf("policy rules of %d bytes: at most %d", len(rules), MaxRulesBytes)
	}
	f, diags := hclsyntax.ParseConfig([]byte(rules), "rules.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	p := &Policy{}
	if diags := gohcl.DecodeBody(f.Body, nil, p); diags.HasErrors() {
		return nil, diagErr(diags)
	}
	for _, n := range p.Namespaces {
		if n.Policy != "" && !slices.Contains([]string{PolicyDeny, PolicyRead, PolicyWrite, PolicyScale}, n.Policy) {
			return nil, fmt.Errorf("namespace %q: invalid policy %q (want deny, read, write or scale)", n.Name, n.Policy)
		}
		for _, c := range n.Capabilities {
			if !slices.Contains(allCaps, c) {
				return nil, fmt.Errorf("namespace %q: unknown capability %q (want one of %s)", n.Name, c, strings.Join(allCaps, ", "))
			}
		}
		if err := n.Variables.validate(n.Name); err != nil {
			return nil, err
		}
	}
	for name, l := range map[string]*LevelRule{"node": p.Node, "agent": p.Agent, "operator": p.Operator} {
		if l != nil && !validLevel(l.Policy) {
			return nil, fmt.Errorf("%s: invalid policy %q (want deny, read or write)", name, l.Policy)
		}
	}
	for _, q := range p.Queues {
		if !validLevel(q.Policy) {
			return nil, fmt.Errorf("queue %q: invalid policy %q (want deny, read or write)", q.Name, q.Policy)
		}
	}
	return p, nil
}

func validLevel(s string) bool { return s == PolicyDeny || s == PolicyRead || s == PolicyWrite }

func diagErr(diags hcl.Diagnostics) error {
	var msgs []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		m := d.Summary
		if d.Detail != "" {
			m += ": " + d.Detail
		}
		if d.Subject != nil {
			m = fmt.Sprintf("%d:%d: %s", d.Subject.Start.Line, d.Subject.Start.Column, m)
		}
		msgs = append(msgs, m)
	}
	return fmt.Errorf("invalid policy rules: %s", strings.Join(msgs, "; "))
}

// level orders deny < none < read < write; deny wins merges.
type level int

const (
	levelNone level = iota
	levelRead
	levelWrite
	levelDeny
)

func toLevel(s string) level {
	switch s {
	case PolicyRead:
		return levelRead
	case PolicyWrite:
		return levelWrite
	case PolicyDeny:
		return levelDeny
	}
	return levelNone
}

func merge(a, b level) level {
	if a == levelDeny || b == levelDeny {
		return levelDeny
	}
	return max(a, b)
}

// ACL is what a token may do: the union of its policies (deny wins).
// A node's ACL (Node) is bound to one node ID and holds no policy.
type ACL struct {
	management bool
	nodeID     string
	ns         map[string]map[string]bool // namespace glob -> capabilities (CapDeny: none)
	node       level
	agent      level
	operator   level
	queues     map[string]level
	vars       map[string]map[string]map[string]bool // namespace glob -> path glob -> variable capabilities
	workload   *Workload                             // a workload identity's ACL (Workload)
}

// Management is the ACL of a management token: everything.
func Management() *ACL { return &ACL{management: true} }

// New merges policies into an ACL.
func New(policies ...*Policy) *ACL {
	a := &ACL{ns: map[string]map[string]bool{}, queues: map[string]level{}, vars: map[string]map[string]map[string]bool{}}
	for _, p := range policies {
		if p == nil {
			continue
		}
		for _, n := range p.Namespaces {
			caps := a.ns[n.Name]
			if caps == nil {
				caps = map[string]bool{}
				a.ns[n.Name] = caps
			}
			var add []string
			switch n.Policy {
			case PolicyRead:
				add = readCaps
			case PolicyWrite:
				add = writeCaps
			case PolicyScale:
				add = scaleCaps
			case PolicyDeny:
				add = []string{CapDeny}
			}
			for _, c := range append(slices.Clone(add), n.Capabilities...) {
				caps[c] = true
			}
			a.addVariables(n.Name, n.Variables)
		}
		for _, x := range []struct {
			dst  *level
			rule *LevelRule
		}{{&a.node, p.Node}, {&a.agent, p.Agent}, {&a.operator, p.Operator}} {
			if x.rule != nil {
				*x.dst = merge(*x.dst, toLevel(x.rule.Policy))
			}
		}
		for _, q := range p.Queues {
			a.queues[q.Name] = merge(a.queues[q.Name], toLevel(q.Policy))
		}
	}
	return a
}

// IsManagement reports a management token's ACL.
func (a *ACL) IsManagement() bool { return a != nil && a.management }

// Node is the ACL of a client node's secret: it is bound to the node's ID
// and holds no capability of its own; the routes a node calls check
// NodeID against the node they are about.
func Node(id string) *ACL { return &ACL{nodeID: id} }

// NodeID is the node a node's ACL is bound to ("" for every other ACL).
func (a *ACL) NodeID() string {
	if a == nil {
		return ""
	}
	return a.nodeID
}

// nsRule finds the rule for a namespace: its exact one, else the matching
// glob with the most literal characters (as Nomad).
func (a *ACL) nsRule(ns string) map[string]bool {
	caps, _ := bestGlob(a.ns, ns)
	return caps
}

// bestGlob finds the rule for key in rules: its exact one, else the
// matching glob with the most literal characters (as Nomad).
func bestGlob[T any](rules map[string]T, key string) (T, bool) {
	if r, ok := rules[key]; ok {
		return r, true
	}
	var best T
	found, bestLen := false, -1
	for pat, r := range rules {
		if strings.Contains(pat, "*") && glob.Match(pat, key) {
			if l := len(strings.ReplaceAll(pat, "*", "")); l > bestLen {
				best, bestLen, found = r, l, true
			}
		}
	}
	return best, found
}

// AllowNamespace reports whether the ACL holds capability c in namespace ns.
func (a *ACL) AllowNamespace(ns, c string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	caps := a.nsRule(ns)
	return caps != nil && !caps[CapDeny] && caps[c]
}

// NamespaceVisible reports whether the ACL holds any capability in ns
// (a namespace it may not use at all is not listed to it, as Nomad).
func (a *ACL) NamespaceVisible(ns string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	caps := a.nsRule(ns)
	if caps[CapDeny] {
		return false
	}
	for _, held := range caps {
		if held {
			return true
		}
	}
	return false
}

// AllowAnyNamespace reports whether c is held in some namespace (for list
// reads across namespaces, which then filter item by item).
func (a *ACL) AllowAnyNamespace(c string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	for _, caps := range a.ns {
		if !caps[CapDeny] && caps[c] {
			return true
		}
	}
	return false
}

func allow(a *ACL, l level, write bool) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	if l == levelDeny || l == levelNone {
		return false
	}
	return !write || l == levelWrite
}

// AllowNode, AllowAgent and AllowOperator check the level (write implies read).
func (a *ACL) AllowNode(write bool) bool     { return allow(a, a.nodeLevel(), write) }
func (a *ACL) AllowAgent(write bool) bool    { return allow(a, a.agentLevel(), write) }
func (a *ACL) AllowOperator(write bool) bool { return allow(a, a.operatorLevel(), write) }

func (a *ACL) nodeLevel() level {
	if a == nil {
		return levelNone
	}
	return a.node
}

func (a *ACL) agentLevel() level {
	if a == nil {
		return levelNone
	}
	return a.agent
}

func (a *ACL) operatorLevel() level {
	if a == nil {
		return levelNone
	}
	return a.operator
}

// DefaultQueue is the queue of jobs that name none (api.DefaultQueue).
const DefaultQueue = "default"

// AllowQueue checks a queue: its exact rule, else the matching glob with
// the most literal characters. Read sees the queue's status; write runs
// jobs in it. The default queue is everyone's (read and write) unless a
// rule matching it says otherwise; a node's ACL holds no queue.
func (a *ACL) AllowQueue(name string, write bool) bool {
	if a == nil || a.nodeID != "" {
		return false
	}
	if a.management {
		return true
	}
	l, ok := bestGlob(a.queues, name)
	if !ok && name == DefaultQueue {
		return true
	}
	return allow(a, l, write)
}
