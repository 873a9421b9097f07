package client

import (
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzFSPath: whatever path a stranger sends to ls/cat/stat, nothing
// outside the alloc dir is served and the answer is a known status.
func FuzzFSPath(f *testing.F) {
	for _, s := range []string{"/", "alloc/logs", "../x", "alloc/data/out/secret", "%2e%2e/x", "/etc/passwd", "web/local/leak", "a/../../b", "\x00"} {
		f.Add(s)
	}
	c := startClientF(f)
	a := testAlloc(c.NodeID(), "ffffffff-0000-4000-8000-000000000001", nil)
	if err := c.startRunner(a, false); err != nil {
		f.Fatal(err)
	}
	ar, _ := c.runner(a.ID)
	dir := ar.AllocDir()
	if err := os.MkdirAll(filepath.Join(dir, "alloc", "data"), 0o755); err != nil {
		f.Fatal(err)
	}
	outside := f.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("TOPSECRET"), 0o644); err != nil {
		f.Fatal(err)
	}
	_ = os.Symlink(outside, filepath.Join(dir, "alloc", "data", "out"))
	_ = os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "alloc", "data", "leak"))
	h := c.Handler()
	f.Fuzz(func(t *testing.T, p string) {
		for _, op := range []string{"ls", "cat", "stat"} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/v1/client/fs/"+op+"/"+a.ID+"?"+url.Values{"path": {p}}.Encode(), nil)
			h.ServeHTTP(rec, req)
			switch rec.Code {
			case 200, 400, 403, 404:
			default:
				t.Fatalf("%s %q: status %d: %s", op, p, rec.Code, rec.Body)
			}
			if strings.Contains(rec.Body.String(), "TOPSECRET") {
				t.Fatalf("%s %q served a file outside the alloc dir", op, p)
			}
			if rec.Code == 200 && op == "ls" && strings.Contains(rec.Body.String(), `"secret"`) {
				t.Fatalf("ls %q listed the outside dir", p)
			}
		}
	})
}
