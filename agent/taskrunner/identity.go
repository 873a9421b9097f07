package taskrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// IdentitySigner asks the servers for a task's signed identities.
type IdentitySigner func(ctx context.Context, allocID, task string) (*api.TaskIdentityResponse, error)

// exposedIdentities are the identities the task asks to see (env or file).
func exposedIdentities(t *api.Task) []*api.WorkloadIdentity {
	var out []*api.WorkloadIdentity
	for _, w := range t.TaskIdentities() {
		if w != nil && (w.Env || w.File) {
			out = append(out, w)
		}
	}
	return out
}

// fetchIdentities signs the task's identities, retrying transient
// failures for a few seconds (250 ms doubling, five retries) on clk.
func fetchIdentities(ctx context.Context, clk clock.Clock, sign IdentitySigner, allocID, task string) (*api.TaskIdentityResponse, error) {
	retry := clock.Backoff{Base: 250 * time.Millisecond}
	for attempt := 0; ; attempt++ {
		resp, err := sign(ctx, allocID, task)
		var ae *api.Error
		if err == nil || attempt == 5 || ctx.Err() != nil || (errors.As(err, &ae) && ae.Status < 500) {
			return resp, err
		}
		if !retry.Wait(ctx, clk) {
			return nil, ctx.Err()
		}
	}
}

// WriteIdentities writes the tokens of the identities with file = true
// into the task dir (secrets/nomad_token, secrets/nomad_<name>.jwt or
// their filepath; mode 0600, owned by the owner of the dir it lands in:
// the driver hands secrets/ to the task's user, so a renewed token stays
// readable by the task and by no other user; an existing file or link is
// replaced, never followed) and returns the env of those with env = true.
func WriteIdentities(taskDir string, ids []*api.WorkloadIdentity, resp *api.TaskIdentityResponse) (map[string]string, error) {
	tokens := map[string]string{}
	for _, si := range resp.Identities {
		tokens[si.Name] = si.Token
	}
	root, err := os.OpenRoot(taskDir)
	if err != nil {
		return nil, fmt.Errorf("open task dir: %w", err)
	}
	defer root.Close()
	env := map[string]string{}
	for _, w := range ids {
		name := w.Name
		if name == "" {
			name = api.DefaultIdentityName
		}
		tok, ok := tokens[name]
		if !ok {
			return nil, fmt.Errorf("identity %q: not signed by the servers", name)
		}
		if w.Env {
			env[w.EnvVar()] = tok
		}
		if !w.File {
			continue
		}
		dest := path.Clean(strings.TrimPrefix(w.TokenFile(), "/"))
		if dest == "." || dest == ".." || strings.HasPrefix(dest, "../") {
			return nil, fmt.Errorf("identity %q: file %q leaves the task dir", name, w.TokenFile())
		}
		if d := path.Dir(dest); d != "." {
			if err := root.MkdirAll(d, 0o700); err != nil {
				return nil, fmt.Errorf("identity %q: %w", name, err)
			}
		}
		if err := root.Remove(dest); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("identity %q: replace %s: %w", name, dest, err)
		}
		dir, err := root.Stat(path.Dir(dest))
		if err != nil {
			return nil, fmt.Errorf("identity %q: %w", name, err)
		}
		f, err := root.OpenFile(dest, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("identity %q: %w", name, err)
		}
		werr := chownLike(f, dir)
		if werr == nil {
			_, werr = f.WriteString(tok)
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, fmt.Errorf("identity %q: write %s: %w", name, dest, werr)
		}
	}
	return env, nil
}

// chownLike gives f the owner of dir (a no-op where that is us).
func chownLike(f *os.File, dir os.FileInfo) error {
	st, ok := dir.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid() {
		return nil
	}
	if err := f.Chown(int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("chown %s: %w", f.Name(), err)
	}
	return nil
}

// renewIdentities re-signs the task's file identities that have a TTL at
// half their TTL and rewrites their files, until ctx ends (a restart
// signs them anew in setup).
func (tr *TaskRunner) renewIdentities(ctx context.Context) {
	var ids []*api.WorkloadIdentity
	ttl := time.Duration(0)
	for _, w := range exposedIdentities(tr.cfg.Task) {
		if w.File && w.TTL > 0 {
			ids = append(ids, w)
			if ttl == 0 || w.TTL < ttl {
				ttl = w.TTL
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tr.clock.After(ttl / 2):
		}
		resp, err := fetchIdentities(ctx, tr.clock, tr.cfg.Identities, tr.cfg.Alloc.ID, tr.cfg.Task.Name)
		if err == nil {
			_, err = WriteIdentities(filepath.Join(tr.cfg.AllocDir, tr.cfg.Task.Name), ids, resp)
		}
		if err != nil && ctx.Err() == nil {
			tr.log.Warn("renew workload identities", "error", err)
		}
	}
}
