package acl

import (
	"strings"
	"testing"
)

func mustParse(t *testing.T, rules string) *Policy {
	t.Helper()
	p, err := Parse(rules)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Policies merge: read and write sets, extra capabilities, the most
// specific namespace rule wins (exact over glob, longer glob over
// shorter), deny wins within a rule and on levels.
func TestACLFromPolicies(t *testing.T) {
	a := New(
		mustParse(t, `namespace "*" { policy = "read" }
namespace "ml-*" { policy = "write" }
namespace "ml-secret" { policy = "deny" }
namespace "ops" { capabilities = ["alloc-exec"] }
node { policy = "read" }
queue "research/*" { policy = "write" }`),
		mustParse(t, `agent { policy = "write" }
node { policy = "write" }
operator { policy = "deny" }`),
	)
	for _, c := range []struct {
		ns, cap string
		want    bool
	}{
		{"default", CapReadJob, true}, {"default", CapSubmitJob, false},
		{"ml-train", CapSubmitJob, true}, {"ml-train", CapAllocExec, true},
		{"ml-secret", CapReadJob, false},
		{"ops", CapAllocExec, true}, {"ops", CapReadJob, false}, // an exact rule replaces the glob's
	} {
		if got := a.AllowNamespace(c.ns, c.cap); got != c.want {
			t.Errorf("%s %s = %v, want %v", c.ns, c.cap, got, c.want)
		}
	}
	if !a.AllowNode(true) || !a.AllowAgent(true) || a.AllowOperator(false) {
		t.Errorf("levels: node write %v, agent write %v, operator read %v", a.AllowNode(true), a.AllowAgent(true), a.AllowOperator(false))
	}
	if !a.AllowQueue("research/nlp", true) || a.AllowQueue("prod", false) {
		t.Error("queue globs")
	}
	if !a.AllowAnyNamespace(CapSubmitJob) || New().AllowAnyNamespace(CapReadJob) {
		t.Error("AllowAnyNamespace")
	}
	only := New(mustParse(t, `namespace "ops" { capabilities = ["read-logs"] }
namespace "x" { policy = "deny" }`))
	for ns, want := range map[string]bool{"ops": true, "x": false, "default": false} {
		if got := only.NamespaceVisible(ns); got != want {
			t.Errorf("NamespaceVisible(%s) = %v, want %v", ns, got, want)
		}
	}
	if !a.NamespaceVisible("anything") || a.NamespaceVisible("ml-secret") || !Management().NamespaceVisible("x") {
		t.Error("NamespaceVisible with globs, deny and management")
	}
	if m := Management(); !m.AllowNamespace("x", CapAllocExec) || !m.AllowOperator(true) || !m.IsManagement() {
		t.Error("management")
	}
	var none *ACL
	if none.AllowNamespace("default", CapReadJob) || none.AllowNode(false) {
		t.Error("a nil ACL allows")
	}
}

func TestParseErrors(t *testing.T) {
	for rules, want := range map[string]string{
		`namespace "x" { policy = "own" }`:         `invalid policy "own"`,
		`namespace "x" { capabilities = ["fly"] }`: `unknown capability "fly"`,
		`node { policy = "super" }`:                `node: invalid policy`,
		"namespace \"x\" {\n  colour = 1\n}":       "2:3:",
		`agent {`:                                  "1:",
		strings.Repeat("#", MaxRulesBytes+1):       "at most",
	} {
		if _, err := Parse(rules); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%.40q) = %v, want %q", rules, err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`namespace "*" { policy = "read" capabilities = ["alloc-exec"] }` + "\nnode { policy = \"write\" }")
	f.Add(`queue "a/*" { policy = "deny" }`)
	f.Fuzz(func(t *testing.T, rules string) {
		p, err := Parse(rules)
		if err == nil {
			New(p).AllowNamespace("default", CapReadJob) // must not panic
		}
	})
}

// Queues: a rule (exact, else the longest glob) decides; the default
// queue is open to a token no rule of which matches it; a node's ACL
// holds no queue and no capability.
func TestAllowQueue(t *testing.T) {
	none := New(mustParse(t, `namespace "a" { policy = "write" }`))
	team := New(mustParse(t, `queue "team-a/*" { policy = "write" }
queue "team-a/prod" { policy = "read" }
queue "default" { policy = "deny" }`))
	for _, c := range []struct {
		a     *ACL
		queue string
		write bool
		want  bool
	}{
		{none, DefaultQueue, true, true}, {none, DefaultQueue, false, true}, {none, "team-a", false, false},
		{team, "team-a/train", true, true}, {team, "team-a/prod", false, true}, {team, "team-a/prod", true, false},
		{team, "team-b", false, false}, {team, DefaultQueue, false, false},
		{Node("n1"), DefaultQueue, false, false}, {Management(), "anything", true, true},
	} {
		if got := c.a.AllowQueue(c.queue, c.write); got != c.want {
			t.Errorf("AllowQueue(%q, write=%v) = %v, want %v", c.queue, c.write, got, c.want)
		}
	}
	n := Node("n1")
	if n.NodeID() != "n1" || n.AllowNode(false) || n.AllowAnyNamespace(CapReadJob) || n.IsManagement() || Management().NodeID() != "" {
		t.Errorf("a node's ACL holds nothing but its node ID")
	}
}
