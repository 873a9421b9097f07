package acl

import (
	"strings"
	"testing"
)

// Variables by path: deny by default, the most specific path glob of the
// most specific namespace rule decides, deny wins within a rule, rules of
// several policies merge; management holds everything, a node nothing; a
// workload reads and lists its own job/group/task paths only.
func TestAllowVariable(t *testing.T) {
	a := New(
		mustParse(t, `namespace "default" {
  policy = "read"
  variables {
    path "team/*" { capabilities = ["read", "list"] }
    path "team/secret/*" { capabilities = ["deny", "read"] }
    path "exact" { capabilities = ["write"] }
  }
}
namespace "ml-*" {
  variables {
    path "*" { capabilities = ["list"] }
  }
}`),
		mustParse(t, `namespace "default" {
  variables {
    path "team/*" { capabilities = ["destroy"] }
  }
}`),
	)
	for _, c := range []struct {
		ns, path, cap string
		want          bool
	}{
		{"default", "team/db", VarRead, true},
		{"default", "team/db", VarList, true},
		{"default", "team/db", VarDestroy, true}, // merged from the second policy
		{"default", "team/db", VarWrite, false},
		{"default", "team/secret/root", VarRead, false},
		{"default", "exact", VarWrite, true},
		{"default", "exact/below", VarWrite, false},
		{"default", "other", VarRead, false},
		{"ml-train", "anything", VarList, true},
		{"ml-train", "anything", VarRead, false},
		{"prod", "team/db", VarRead, false},
	} {
		if got := a.AllowVariable(c.ns, c.path, c.cap); got != c.want {
			t.Errorf("%s %s %s = %v, want %v", c.ns, c.path, c.cap, got, c.want)
		}
	}
	if !a.AllowNamespace("default", CapReadJob) {
		t.Error("a variables block took the namespace's policy away")
	}
	if !a.AllowVariableAnywhere("default", VarList) || !a.AllowVariableAnywhere("*", VarList) || a.AllowVariableAnywhere("prod", VarList) ||
		a.AllowVariableAnywhere("default", VarWrite) == false || a.AllowVariableAnywhere("ml-x", VarRead) {
		t.Error("AllowVariableAnywhere")
	}
	if New().AllowVariable("default", "x", VarRead) {
		t.Error("no policy allows")
	}
	if !Management().AllowVariable("x", "y", VarDestroy) || Node("n1").AllowVariable("default", "x", VarRead) {
		t.Error("management or node")
	}
	w := ForWorkload(Workload{Namespace: "prod", JobID: "web", Group: "api", Task: "srv"})
	for _, c := range []struct {
		ns, path, cap string
		want          bool
	}{
		{"prod", "nomad/jobs/web", VarRead, true},
		{"prod", "nomad/jobs/web/api", VarList, true},
		{"prod", "nomad/jobs/web/api/srv", VarRead, true},
		{"prod", "nomad/jobs/web/api/srv", VarWrite, false},
		{"prod", "nomad/jobs/web/api/other", VarRead, false},
		{"prod", "nomad/jobs/webx", VarRead, false},
		{"prod", "nomad/jobs", VarRead, false},
		{"default", "nomad/jobs/web", VarRead, false},
	} {
		if got := w.AllowVariable(c.ns, c.path, c.cap); got != c.want {
			t.Errorf("workload %s %s %s = %v, want %v", c.ns, c.path, c.cap, got, c.want)
		}
	}
	if w.AllowNamespace("prod", CapReadJob) || w.AllowNode(false) || w.WorkloadOf() == nil {
		t.Error("a workload's ACL holds more than its variables")
	}
}

func TestParseVariablesErrors(t *testing.T) {
	ml := func(inner string) string { return "namespace \"x\" {\n  variables {\n    " + inner + "\n  }\n}" }
	for rules, want := range map[string]string{
		ml(`path "a" { capabilities = ["fly"] }`): `unknown capability "fly"`,
		ml(`path "" { capabilities = ["read"] }`): "empty pattern",
		ml("path \"a\" {\n}"):                     "capabilities",
		ml("colour = 1"):                          "colour",
	} {
		_, err := Parse(rules)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%s) = %v, want %q", rules, err, want)
		}
	}
}
