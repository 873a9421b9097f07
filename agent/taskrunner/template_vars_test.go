package taskrunner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// fakeVars answers like the servers' blocking variable reads: a read
// with an index blocks until the variables' index passes it.
type fakeVars struct {
	mu     sync.Mutex
	vars   map[string]map[string]string
	mod    map[string]uint64
	index  uint64
	bump   chan struct{}
	tokens []string
}

func newFakeVars() *fakeVars {
	return &fakeVars{vars: map[string]map[string]string{}, mod: map[string]uint64{}, bump: make(chan struct{})}
}

func (f *fakeVars) set(path string, items map[string]string) {
	f.mu.Lock()
	f.index++
	if items == nil {
		delete(f.vars, path)
	} else {
		f.vars[path], f.mod[path] = items, f.index
	}
	close(f.bump)
	f.bump = make(chan struct{})
	f.mu.Unlock()
}

// wait blocks until f's index passes index (or at once for 0).
func (f *fakeVars) wait(ctx context.Context, token string, index uint64) error {
	for {
		f.mu.Lock()
		f.tokens = append(f.tokens, token)
		idx, bump := f.index, f.bump
		f.mu.Unlock()
		if index == 0 || idx > index {
			return nil
		}
		select {
		case <-bump:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *fakeVars) Variable(ctx context.Context, token, ns, path string, index uint64, _ time.Duration) (*api.Variable, uint64, error) {
	if err := f.wait(ctx, token, index); err != nil {
		return nil, 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	items, ok := f.vars[path]
	if !ok {
		return nil, 0, nil
	}
	return &api.Variable{Namespace: ns, Path: path, Items: items, ModifyIndex: f.mod[path]}, f.index, nil
}

func (f *fakeVars) Variables(ctx context.Context, token, ns, prefix string, index uint64, _ time.Duration) ([]*api.VariableMetadata, uint64, error) {
	if err := f.wait(ctx, token, index); err != nil {
		return nil, 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*api.VariableMetadata
	for p := range f.vars {
		if strings.HasPrefix(p, prefix) {
			out = append(out, &api.VariableMetadata{Namespace: ns, Path: p, ModifyIndex: f.mod[p]})
		}
	}
	return out, f.index, nil
}

// Templates read variables with the task's token (nomadVar's items,
// nomadVarList's paths); a change of one read wakes Watch and a re-render
// rewrites only the changed file; a missing variable fails the render.
func TestNomadVarTemplates(t *testing.T) {
	f := newFakeVars()
	f.set("nomad/jobs/web", map[string]string{"user": "app", "pass": "one"})
	f.set("nomad/jobs/web/g", map[string]string{"x": "1"})
	f.set("other", map[string]string{"k": "v"})
	cache := NewVarCache(f, "default", func(context.Context) (string, error) { return "wid-token", nil }, clock.Real{})
	dir := t.TempDir()
	tmpls := []*api.Template{
		{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/web" }}{{ .user }}:{{ .pass }}{{ end }}`, DestPath: "local/creds"},
		{EmbeddedTmpl: `{{ range nomadVarList "nomad/jobs/" }}{{ .Path }} {{ end }}`, DestPath: "local/list"},
	}
	ctx := context.Background()
	_, changed, err := renderTemplates(ctx, tmpls, dir, nil, nil, nil, cache)
	if err != nil || len(changed) != 2 {
		t.Fatalf("first render: %v, %d changed", err, len(changed))
	}
	read := func(p string) string {
		b, _ := os.ReadFile(filepath.Join(dir, p))
		return string(b)
	}
	if got := read("local/creds"); got != "app:one" {
		t.Fatalf("creds = %q", got)
	}
	if got := read("local/list"); got != "nomad/jobs/web nomad/jobs/web/g " {
		t.Fatalf("list = %q", got)
	}
	woke := make(chan bool, 1)
	go func() { woke <- cache.Watch(ctx) }()
	f.set("nomad/jobs/web", map[string]string{"user": "app", "pass": "two"})
	select {
	case ok := <-woke:
		if !ok {
			t.Fatal("Watch returned false")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not return after a change")
	}
	_, changed, err = renderTemplates(ctx, tmpls, dir, nil, nil, nil, cache)
	if err != nil || len(changed) != 1 || changed[0].DestPath != "local/creds" || read("local/creds") != "app:two" {
		t.Fatalf("re-render: %v, changed %v, creds %q", err, changed, read("local/creds"))
	}
	// A change elsewhere (same items, same list) does not wake it.
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	go f.set("other", map[string]string{"k": "w"})
	if cache.Watch(wctx) {
		t.Error("Watch woke for a variable no template reads")
	}
	f.mu.Lock()
	for _, tok := range f.tokens {
		if tok != "wid-token" {
			t.Errorf("a read with token %q, want the workload identity's", tok)
		}
	}
	f.mu.Unlock()

	_, _, err = renderTemplates(ctx, []*api.Template{{EmbeddedTmpl: `{{ with nomadVar "nope" }}{{ .k }}{{ end }}`, DestPath: "local/n"}}, dir, nil, nil, nil, cache)
	if err == nil || !strings.Contains(err.Error(), "no such variable") {
		t.Errorf("a missing variable: %v", err)
	}
	f.set("nope", map[string]string{"k": "here"})
	if _, _, err := renderTemplates(ctx, []*api.Template{{EmbeddedTmpl: `{{ with nomadVar "nope" }}{{ .k }}{{ end }}`, DestPath: "local/n"}}, dir, nil, nil, nil, cache); err != nil || read("local/n") != "here" {
		t.Errorf("a render after the variable was created: %v %q", err, read("local/n"))
	}
	failing := NewVarCache(f, "default", func(context.Context) (string, error) { return "", errors.New("no identity") }, clock.Real{})
	if _, _, err := renderTemplates(ctx, tmpls[:1], dir, nil, nil, nil, failing); err == nil || !strings.Contains(err.Error(), "workload identity") {
		t.Errorf("without a token: %v", err)
	}
	if _, _, err := renderTemplates(ctx, tmpls[:1], dir, nil, nil, nil, nil); err == nil {
		t.Error("nomadVar without a reader rendered")
	}
}

// watchAny returns true on the first change and lets the others go.
func TestWatchAny(t *testing.T) {
	never := func(ctx context.Context) bool { <-ctx.Done(); return false }
	now := func(context.Context) bool { return true }
	if !watchAny(context.Background(), never, now) {
		t.Error("a change was missed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if watchAny(ctx, never, never) {
		t.Error("true without a change")
	}
}
