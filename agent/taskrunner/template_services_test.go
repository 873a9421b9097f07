package taskrunner

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// fakeCatalog answers lookups like the servers' blocking queries: a
// read with an index blocks until the service's index passes it.
type fakeCatalog struct {
	mu    sync.Mutex
	regs  map[string][]*api.ServiceRegistration
	index map[string]uint64
	bump  chan struct{}
}

func (f *fakeCatalog) set(name string, regs ...*api.ServiceRegistration) {
	f.mu.Lock()
	f.regs[name] = regs
	f.index[name]++
	close(f.bump)
	f.bump = make(chan struct{})
	f.mu.Unlock()
}

func (f *fakeCatalog) lookup(ctx context.Context, _, name string, index uint64, _ time.Duration) ([]*api.ServiceRegistration, uint64, error) {
	for {
		f.mu.Lock()
		regs, idx, bump := f.regs[name], f.index[name], f.bump
		f.mu.Unlock()
		if index == 0 || idx > index {
			return regs, idx, nil
		}
		select {
		case <-bump:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

// Templates list the passing instances of the services they read; a
// change of one of several services wakes Watch (the others' blocked
// reads are let go), and a re-render rewrites only changed files.
func TestNomadServiceTemplates(t *testing.T) {
	f := &fakeCatalog{regs: map[string][]*api.ServiceRegistration{}, index: map[string]uint64{}, bump: make(chan struct{})}
	f.set("web", &api.ServiceRegistration{ID: "b", Address: "10.0.0.2", Port: 80, Health: api.ServiceHealthPassing},
		&api.ServiceRegistration{ID: "a", Address: "10.0.0.1", Port: 80}, &api.ServiceRegistration{ID: "c", Address: "10.0.0.3", Port: 80, Health: api.ServiceHealthCritical})
	f.set("db", &api.ServiceRegistration{ID: "d", Address: "10.0.1.1", Port: 5432})
	cache := NewServiceCache(f.lookup, "default", clock.Real{})
	dir := t.TempDir()
	tmpls := []*api.Template{
		{EmbeddedTmpl: `{{ range nomadService "web" }}{{ .Address }}:{{ .Port }} {{ end }}`, DestPath: "local/web"},
		{EmbeddedTmpl: `{{ range nomadService "db" }}{{ .Address }}{{ end }}`, DestPath: "local/db"},
	}
	_, changed, err := renderTemplates(context.Background(), tmpls, dir, nil, nil, cache, nil)
	if err != nil || len(changed) != 2 {
		t.Fatalf("first render: %v, %d changed", err, len(changed))
	}
	read := func(p string) string {
		b, _ := os.ReadFile(filepath.Join(dir, p))
		return string(b)
	}
	if got := read("local/web"); got != "10.0.0.1:80 10.0.0.2:80 " {
		t.Fatalf("web = %q, want the two passing instances by ID", got)
	}
	woke := make(chan bool, 1)
	go func() { woke <- cache.Watch(context.Background()) }()
	f.set("db", &api.ServiceRegistration{ID: "d", Address: "10.0.1.9", Port: 5432})
	select {
	case ok := <-woke:
		if !ok {
			t.Fatal("Watch returned false")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not return after a change")
	}
	_, changed, err = renderTemplates(context.Background(), tmpls, dir, nil, nil, cache, nil)
	if err != nil || len(changed) != 1 || changed[0].DestPath != "local/db" || read("local/db") != "10.0.1.9" {
		t.Fatalf("re-render: %v, changed %v, db %q", err, changed, read("local/db"))
	}
	// A change that leaves the passing set as it was does not wake it.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	go f.set("web", &api.ServiceRegistration{ID: "b", Address: "10.0.0.2", Port: 80, Health: api.ServiceHealthPassing},
		&api.ServiceRegistration{ID: "a", Address: "10.0.0.1", Port: 80})
	if cache.Watch(ctx) {
		t.Error("Watch woke for a change of a critical instance only")
	}
}
