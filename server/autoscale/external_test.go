package autoscale

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// The external provider speaks the JSON-lines protocol with a command:
// create, list, interruptions and destroy round-trip through a script.
func TestExternalProvider(t *testing.T) {
	ctx := context.Background()
	e := &External{Command: []string{"sh", "testdata/provider.sh"}}
	defer e.Close()
	ids, err := e.Create(ctx, "gpu", Shape{GPUs: 8, CPU: 1000, MemoryMB: 1024, Spot: true}, 1)
	if err != nil || !slices.Equal(ids, []string{"ext-1"}) {
		t.Fatalf("create: %v, %v", ids, err)
	}
	list, err := e.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "ext-1" || list[0].Pool != "gpu" || !list[0].Spot || list[0].Price != 2.5 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	notices, err := e.Interruptions(ctx)
	if err != nil || len(notices) != 1 || notices[0] != (Interruption{ID: "ext-1", Deadline: 2 * time.Minute}) {
		t.Fatalf("interruptions: %+v, %v", notices, err)
	}
	if err := e.Destroy(ctx, []string{"ext-1"}); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	// The same process answers in order: the second create is ext-2.
	if ids, err := e.Create(ctx, "gpu", Shape{CPU: 1000, MemoryMB: 1024}, 1); err != nil || ids[0] != "ext-2" {
		t.Fatalf("second create: %v, %v", ids, err)
	}
}

// A command that never answers fails the call after the timeout and is
// killed; one that does not exist fails at once.
func TestExternalProviderFailures(t *testing.T) {
	ctx := context.Background()
	e := &External{Command: []string{"sh", "-c", "sleep 60"}, Timeout: 50 * time.Millisecond}
	defer e.Close()
	if _, err := e.List(ctx); !errors.Is(err, ErrExternal) || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("silent command: %v, want no answer", err)
	}
	bad := &External{Command: []string{"/nonexistent/provider"}}
	if _, err := bad.List(ctx); !errors.Is(err, ErrExternal) {
		t.Errorf("missing command: %v", err)
	}
}

func TestDecodeExternal(t *testing.T) {
	for _, c := range []struct {
		line, op string
		n        int
		want     string // "" = ok, else in the error
	}{
		{`{"ids":["a","b"]}`, "create", 2, ""},
		{`{"ids":["a","b","c"]}`, "create", 2, "3 ids for 2 asked"},
		{`{"ids":["a b"]}`, "create", 1, "printable"},
		{`{"ids":[""]}`, "create", 1, "instance id"},
		{`{"error":"quota exceeded"}`, "create", 1, "quota exceeded"},
		{`{"ids":[],"extra":1}`, "create", 1, "unknown field"},
		{`{} {}`, "list", 0, "more than one"},
		{`{"interruptions":[{"id":"a","deadline":"2m"}]}`, "interruptions", 0, ""},
		{`{"interruptions":[{"id":"a","deadline":"forever"}]}`, "interruptions", 0, "deadline"},
		{`{"instances":[{"id":"a","price":-1}]}`, "list", 0, "price"},
		{`not json`, "list", 0, "invalid"},
	} {
		_, _, err := decodeExternal([]byte(c.line), c.op, c.n)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.line, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err %v, want %q", c.line, err, c.want)
		}
	}
}

// FuzzDecodeExternal: any answer decodes or fails cleanly, and what it
// accepts keeps the bounds.
func FuzzDecodeExternal(f *testing.F) {
	for _, s := range []string{`{"ids":["i-1","i-2"]}`, `{}`, `{"error":"x"}`,
		`{"instances":[{"id":"i-2","pool":"gpu","spot":true,"price":24.5,"created":"2026-01-02T15:04:05Z"}]}`,
		`{"interruptions":[{"id":"i-2","deadline":"2m"}]}`, `{"ids":null}`, `[`} {
		f.Add([]byte(s), 2)
	}
	f.Fuzz(func(t *testing.T, line []byte, n int) {
		r, notices, err := decodeExternal(line, "create", n)
		if err != nil {
			return
		}
		if len(r.IDs) > n || len(r.IDs) > maxExternalInstances {
			t.Fatalf("accepted %d ids for %d", len(r.IDs), n)
		}
		for _, id := range r.IDs {
			if checkInstanceID(id) != nil {
				t.Fatalf("accepted id %q", id)
			}
		}
		for _, x := range notices {
			if x.Deadline < 0 || x.Deadline > 24*time.Hour {
				t.Fatalf("accepted deadline %v", x.Deadline)
			}
		}
	})
}
