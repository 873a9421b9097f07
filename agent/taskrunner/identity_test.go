package taskrunner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// Identity files: the default one at secrets/nomad_token, a named one at
// secrets/nomad_<name>.jwt, both 0600, a planted link replaced rather
// than followed, env only for env = true; a TTL'd one is re-signed at
// half its TTL.
func TestWriteAndRenewIdentities(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "t", "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "t", "secrets", "nomad_token")); err != nil {
		t.Fatal(err)
	}
	task := &api.Task{Name: "t", Identity: &api.WorkloadIdentity{Name: "default", Env: true, File: true},
		Identities: []*api.WorkloadIdentity{{Name: "vault", File: true, TTL: time.Hour}}}
	var n atomic.Int32
	sign := func(_ context.Context, _, _ string) (*api.TaskIdentityResponse, error) {
		i := n.Add(1)
		return &api.TaskIdentityResponse{Identities: []*api.SignedIdentity{{Name: "default", Token: fmt.Sprint("d", i)}, {Name: "vault", Token: fmt.Sprint("v", i)}}}, nil
	}
	resp, _ := sign(context.Background(), "", "")
	env, err := WriteIdentities(filepath.Join(dir, "t"), exposedIdentities(task), resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(env) != 1 || env["NOMAD_TOKEN"] != "d1" {
		t.Errorf("env %v", env)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(dir, "t", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if read("secrets/nomad_token") != "d1" || read("secrets/nomad_vault.jwt") != "v1" {
		t.Errorf("files %q %q", read("secrets/nomad_token"), read("secrets/nomad_vault.jwt"))
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("the planted link was followed: %q", b)
	}
	if fi, _ := os.Lstat(filepath.Join(dir, "t", "secrets", "nomad_vault.jwt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}

	clk := clock.NewFake(time.Unix(1000, 0))
	tr := New(Config{Alloc: &api.Allocation{ID: "a"}, Task: task, AllocDir: dir, Identities: sign, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tr.renewIdentities(ctx); close(done) }()
	if err := clk.WaitPending(10*time.Second, func(n int) bool { return n != 0 }); err != nil {
		t.Fatalf("renewal never waited: %v", err)
	}
	if d, _ := clk.NextIn(); d != 30*time.Minute {
		t.Errorf("renewal due in %v, want half the TTL", d)
	}
	clk.Advance(30 * time.Minute)
	// The renewal writes the files, then waits on the clock again.
	if err := clk.WaitPending(10*time.Second, func(n int) bool { return n != 0 }); err != nil {
		t.Fatalf("renewal never waited again: %v", err)
	}
	if got := read("secrets/nomad_vault.jwt"); got != "v2" {
		t.Fatalf("not renewed: %q", got)
	}
	cancel()
	<-done
}

// TestIdentityFileOwner: a token file takes the owner of the dir it lands
// in (the driver hands secrets/ to the task's user), so a renewed token
// stays readable by the task and, 0600, by no other user.
func TestIdentityFileOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	dir := t.TempDir()
	secrets := filepath.Join(dir, "t", "secrets")
	if err := os.MkdirAll(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(secrets, 65534, 65533); err != nil {
		t.Fatal(err)
	}
	ids := []*api.WorkloadIdentity{{Name: "default", File: true}, {Name: "other", File: true, Filepath: "other.jwt"}}
	resp := &api.TaskIdentityResponse{Identities: []*api.SignedIdentity{{Name: "default", Token: "d"}, {Name: "other", Token: "o"}}}
	for range 2 { // the first write and a renewal's
		if _, err := WriteIdentities(filepath.Join(dir, "t"), ids, resp); err != nil {
			t.Fatal(err)
		}
		for p, want := range map[string][2]uint32{"secrets/nomad_token": {65534, 65533}, "other.jwt": {0, 0}} {
			fi, err := os.Lstat(filepath.Join(dir, "t", p))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if got := [2]uint32{st.Uid, st.Gid}; got != want || fi.Mode() != 0o600 {
				t.Errorf("%s: owner %v mode %v, want %v and 0600", p, got, fi.Mode(), want)
			}
		}
	}
}
