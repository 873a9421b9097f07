package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// TestE2EClientAgentACL: a client-only agent with ACLs on enforces them on
// its own /v1/client/* routes, resolving each token at its server: a
// task's logs read from the client agent need read-logs in the alloc's
// namespace (no token, a token without it: 403), and the same holds when
// the server forwards the request to the client.
func TestE2EClientAgentACL(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the client role needs root outside CI")
	}
	srvHTTP, srvRaft, cliHTTP := freePort(t), freePort(t), freePort(t)
	srvBase := fmt.Sprintf("http://127.0.0.1:%d", srvHTTP)
	cliBase := fmt.Sprintf("http://127.0.0.1:%d", cliHTTP)
	srv := startAgent(t, "-server", "-encrypt", testGossipKey, "-bootstrap-expect", "1", "-data-dir", t.TempDir(), "-bind", "127.0.0.1",
		"-http-port", strconv.Itoa(srvHTTP), "-raft-port", strconv.Itoa(srvRaft), "-acl-enabled")
	waitLeader(t, srv, srvBase)
	ctx := context.Background()
	var boot api.ACLToken
	if code := call(t, "POST", srvBase+"/v1/acl/bootstrap", "", &boot); code != 200 {
		t.Fatalf("bootstrap = %d", code)
	}
	as := func(base, token string) *api.Client {
		c := api.NewClient(base)
		c.Token = token
		return c
	}
	mgmt := as(srvBase, boot.SecretID)
	for name, rules := range map[string]string{
		"logs":   `namespace "default" { capabilities = ["read-logs"] }`,
		"reader": `namespace "default" { capabilities = ["read-job"] }`,
	} {
		if err := mgmt.Write(ctx, "PUT", "/v1/acl/policy/"+name, &api.ACLPolicy{Name: name, Rules: rules}, nil, nil); err != nil {
			t.Fatalf("policy %s: %v", name, err)
		}
	}
	token := func(policy string) string {
		var tok api.ACLToken
		if err := mgmt.Write(ctx, "POST", "/v1/acl/token", &api.ACLToken{Policies: []string{policy}}, &tok, nil); err != nil {
			t.Fatalf("token %s: %v", policy, err)
		}
		return tok.SecretID
	}
	logsTok, readerTok := token("logs"), token("reader")

	cfgFile := filepath.Join(t.TempDir(), "client.hcl")
	if err := os.WriteFile(cfgFile, []byte("acl {\n  enabled = true\n}\nplugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// With ACLs on, a node joins with an introduction an operator issued.
	intro, err := mgmt.CreateNodeIntro(ctx, &api.NodeIntroRequest{NodeName: "acl-client"})
	if err != nil {
		t.Fatalf("node intro: %v", err)
	}
	startAgent(t, "-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srvHTTP), "-data-dir", t.TempDir(),
		"-bind", "127.0.0.1", "-http-port", strconv.Itoa(cliHTTP), "-config", cfgFile, "-node", "acl-client",
		"-client-intro-token", intro.Token)

	job := &api.Job{ID: "hello", TaskGroups: []*api.TaskGroup{{Name: "hello", Count: 1, Tasks: []*api.Task{{Name: "hello", Driver: "raw_exec",
		Config:    map[string]any{"command": "/bin/sh", "args": []string{"-c", "echo hello from drover; exec sleep 300"}},
		Resources: &api.Resources{CPU: 100, MemoryMB: 64}}}}}}
	if _, err := mgmt.RegisterJob(ctx, &api.JobRegisterRequest{Job: job}, nil); err != nil {
		t.Fatalf("register: %v", err)
	}
	var allocID string
	var idx uint64
	deadline := time.Now().Add(30 * time.Second)
	for allocID == "" {
		if time.Now().After(deadline) {
			t.Fatal("allocation not running within 30s")
		}
		stubs, meta, err := mgmt.JobAllocations(ctx, "hello", &api.QueryOptions{WaitIndex: idx, WaitTime: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		idx = meta.LastIndex
		for _, s := range stubs {
			if s.ClientStatus == api.AllocClientStatusRunning {
				allocID = s.ID
			}
		}
	}
	logs := func(base, token string) (string, error) {
		rc, err := as(base, token).Logs(ctx, allocID, "hello", "stdout", false, "", 0)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
	// The task writes the line in its own time: poll.
	testproc.Eventually(t, 10*time.Second, "the line in the logs from the client agent with read-logs", func() bool {
		out, err := logs(cliBase, logsTok)
		return err == nil && strings.Contains(out, "hello from drover")
	})
	for _, base := range []string{cliBase, srvBase} {
		for name, tok := range map[string]string{"no token": "", "bogus": "not-a-token", "read-job only": readerTok} {
			if _, err := logs(base, tok); !errors.Is(err, api.ErrPermissionDenied) {
				t.Errorf("logs at %s with %s: %v, want permission denied", base, name, err)
			}
		}
	}
	if out, err := logs(srvBase, logsTok); err != nil || !strings.Contains(out, "hello from drover") {
		t.Errorf("logs through the server with read-logs: %q %v", out, err)
	}
}
