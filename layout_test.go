package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/drover/drover"

// rule says which drover packages a package under prefix may import.
type rule struct {
	prefix  string
	allowed func(imp string) bool // imp is relative to the module ("api", "server/state")
	// testAllowed: what its _test.go files may import besides.
	testAllowed func(imp string) bool
	stdOnly     bool // no third-party imports either
	// thirdParty: the module paths a stdOnly package may import all the same.
	thirdParty []string
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

var rules = []rule{
	// api parses periodic specs with Nomad's cron grammar (as Nomad's own api
	// package does), so cron specs mean the same on both sides.
	{prefix: "api", stdOnly: true, allowed: func(string) bool { return false },
		thirdParty: []string{"github.com/hashicorp/cronexpr"}},
	{prefix: "jobspec", allowed: func(i string) bool { return under(i, "api") }},
	// drivers' tests (and drivertest) build and run the drover binary
	// through internal/testproc (test-only: see testOnly).
	{prefix: "drivers", allowed: func(i string) bool { return under(i, "api") || under(i, "drivers") || i == "internal/testproc" }},
	{prefix: "server", allowed: func(i string) bool { return !under(i, "agent") && !under(i, "drivers") && !under(i, "ui") }},
	// capacity is the pure resource model the scheduler and the plan applier share.
	{prefix: "server/capacity", stdOnly: true, allowed: func(i string) bool { return under(i, "api") }},
	// fairshare is the pure fair-share calculator the scheduler and the server share.
	{prefix: "server/fairshare", stdOnly: true, allowed: func(i string) bool { return under(i, "api") }},
	// glob is the pure pattern matcher the scheduler and server/acl share.
	{prefix: "server/glob", stdOnly: true, allowed: func(string) bool { return false }},
	// tlsutil is the CA, certificates and tls.Configs of agents and the CLI.
	{prefix: "agent/tlsutil", stdOnly: true, allowed: func(string) bool { return false }},
	// ui's tests start the real binary through the shared test helpers.
	{prefix: "ui", allowed: func(i string) bool { return under(i, "api") },
		testAllowed: func(i string) bool { return i == "internal/testproc" || i == "internal/oidctest" }},
	// oidctest is the in-process OIDC provider of SSO tests.
	{prefix: "internal/oidctest", stdOnly: true, allowed: func(string) bool { return false }},
	// codec is the JSON codec servers and client agents share: no drover
	// package (its tests fill api types).
	{prefix: "internal/codec", allowed: func(string) bool { return false },
		testAllowed: func(i string) bool { return i == "api" }},
	// internal/ holds the leaf packages both roles use. clock is the one
	// time source of server and client.
	{prefix: "internal/clock", stdOnly: true, allowed: func(string) bool { return false }},
	// testproc builds drover and runs processes for every package's tests,
	// so it can import nothing those packages' tests could cycle with.
	{prefix: "internal/testproc", stdOnly: true, allowed: func(string) bool { return false }},
	// testcluster starts in-process servers and agents for tests.
	{prefix: "internal/testcluster", allowed: func(i string) bool { return !under(i, "ui") }},
}

// testOnly are packages only _test.go files (and the test-only packages
// themselves) may import.
var testOnly = []string{"internal/oidctest", "internal/codec/codectest", "internal/testproc", "internal/testcluster",
	"drivers/drivertest", "agent/gpushare/gpusharetest"}

// testHelper reports whether dir is one of the testOnly packages.
func testHelper(dir string) bool {
	for _, p := range testOnly {
		if under(dir, p) {
			return true
		}
	}
	return false
}

// TestLayout enforces the import direction among drover's packages and
// that every package has a doc.go.
func TestLayout(t *testing.T) {
	fset := token.NewFileSet()
	pkgs := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "build", "bin", "node_modules", ".git", ".gl":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if !strings.HasSuffix(path, "_test.go") {
			pkgs[dir] = true
		}
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			if v := violation(dir, imp, strings.HasSuffix(path, "_test.go")); v != "" {
				t.Errorf("%s: %s", path, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range pkgs {
		if dir == "." {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "doc.go")); err != nil {
			// main packages of small tools document themselves in their main.go.
			if _, err2 := os.Stat(filepath.Join(dir, "main.go")); err2 == nil {
				continue
			}
			t.Errorf("package %s has no doc.go", dir)
		}
	}
}

// violation says why dir may not import imp, or "" when it may.
func violation(dir, imp string, isTest bool) string {
	for _, p := range testOnly {
		if rel, ok := strings.CutPrefix(imp, module+"/"); ok && under(rel, p) && !isTest && !testHelper(dir) {
			return "imports " + imp + ": only tests may import " + p
		}
	}
	for _, r := range rules {
		if !under(dir, r.prefix) {
			continue
		}
		if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
			if isTest && r.testAllowed != nil && r.testAllowed(rel) {
				continue
			}
			if !under(rel, r.prefix) && !r.allowed(rel) {
				return "imports " + imp + ": " + r.prefix + " must not import it"
			}
			continue
		}
		if r.stdOnly && !isTest && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") && !slices.Contains(r.thirdParty, imp) {
			return "imports " + imp + ": " + r.prefix + " imports the standard library only"
		}
	}
	return ""
}

// TestLayoutRulesCatchViolations makes sure the rules above bite.
func TestLayoutRulesCatchViolations(t *testing.T) {
	cases := []struct {
		dir, imp string
		isTest   bool
		bad      bool
	}{
		{"api", "github.com/spf13/cobra", false, true},
		{"api", "net/http", false, false},
		{"drivers/exec", module + "/agent/client", false, true},
		{"drivers/exec", module + "/api", false, false},
		{"drivers/exec", module + "/drivers/logging", false, false},
		{"drivers/exec", module + "/server/state", false, true},
		{"server/state", module + "/agent/http", false, true},
		{"server", module + "/drivers/exec", false, true},
		{"server", module + "/jobspec", false, false},
		{"jobspec", module + "/server", false, true},
		{"ui", module + "/drivers/drivertest", true, true},
		{"ui", module + "/internal/testproc", true, false},
		{"server/capacity", module + "/api", false, false},
		{"server/capacity", module + "/server/state", false, true},
		{"server/capacity", "github.com/hashicorp/go-version", false, true},
		{"ui", module + "/drivers/drivertest", false, true},
		{"ui", module + "/drivers/exec", true, true},
		{"ui", module + "/agent", true, true},
		{"ui", module + "/internal/oidctest", true, false},
		{"ui", module + "/internal/oidctest", false, true},
		{"server", module + "/internal/oidctest", true, false},
		{"server", module + "/internal/oidctest", false, true},
		{"agent/http", module + "/internal/oidctest", false, true},
		{"internal/oidctest", "github.com/coreos/go-oidc/v3/oidc", false, true},
		{"internal/oidctest", "github.com/coreos/go-oidc/v3/oidc", true, false},
		{"internal/oidctest", module + "/api", false, true},
		{"internal/codec", module + "/api", false, true},
		{"internal/codec", module + "/api", true, false},
		{"internal/codec", "github.com/goccy/go-json", false, false},
		{"internal/codec/codectest", module + "/internal/codec", false, false},
		{"agent/client", module + "/internal/codec", false, false},
		{"server/fsm", module + "/internal/codec/codectest", false, true},
		{"server/fsm", module + "/internal/codec/codectest", true, false},
		{"internal/clock", module + "/api", false, true},
		{"internal/clock", "github.com/hashicorp/raft", false, true},
		{"server/broker", module + "/internal/clock", false, false},
		{"agent/client", module + "/internal/clock", false, false},
		{"drivers/exec", module + "/internal/clock", false, true},
		{"internal/testproc", module + "/api", false, true},
		{"internal/testproc", "github.com/google/go-cmp/cmp", false, true},
		{"drivers/exec", module + "/internal/testproc", true, false},
		{"drivers/exec", module + "/internal/testproc", false, true},
		{"drivers/drivertest", module + "/internal/testproc", false, false},
		{"server", module + "/internal/testproc", true, false},
		{"agent/client", module + "/internal/testcluster", false, true},
		{"agent/cli", module + "/internal/testcluster", true, false},
		{"internal/testcluster", module + "/server", false, false},
		{"internal/testcluster", module + "/agent", false, false},
		{"internal/testcluster", module + "/internal/testproc", false, false},
		{"internal/testcluster", module + "/ui", false, true},
		{"agent", module + "/drivers/drivertest", false, true},
	}
	for _, c := range cases {
		if got := violation(c.dir, c.imp, c.isTest) != ""; got != c.bad {
			t.Errorf("%s importing %s (test file: %v): violation=%v, want %v", c.dir, c.imp, c.isTest, got, c.bad)
		}
	}
}
