package containerd

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// testRegistry serves the busybox OCI archive over the registry HTTP API
// (manifests and blobs, basic auth) on 127.0.0.1: a real pull without
// network access.
type testRegistry struct {
	blobs      map[string][]byte // digest -> content
	manifest   string            // digest of the manifest
	user, pass string
	mu         sync.Mutex
	manifests  int // authorized manifest requests
	denied     int // requests without valid credentials
}

func newTestRegistry(t *testing.T, archive, user, pass string) (host string, r *testRegistry) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r = &testRegistry{blobs: map[string][]byte{}, user: user, pass: pass}
	var index ocispec.Index
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case h.Name == "index.json":
			if err := json.Unmarshal(b, &index); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(h.Name, "blobs/sha256/") && h.Typeflag == tar.TypeReg:
			r.blobs["sha256:"+strings.TrimPrefix(h.Name, "blobs/sha256/")] = b
		}
	}
	r.manifest = index.Manifests[0].Digest.String()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), r
}

func (r *testRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if u, p, ok := req.BasicAuth(); r.user != "" && (!ok || u != r.user || p != r.pass) {
		r.mu.Lock()
		r.denied++
		r.mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Basic realm="drover-test"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
		return
	}
	path := req.URL.Path
	switch {
	case path == "/v2/" || path == "/v2":
		w.WriteHeader(http.StatusOK)
	case strings.HasPrefix(path, "/v2/drover/busybox/manifests/"):
		ref := strings.TrimPrefix(path, "/v2/drover/busybox/manifests/")
		if ref != "test" && ref != r.manifest {
			http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		r.mu.Lock()
		r.manifests++
		r.mu.Unlock()
		b := r.blobs[r.manifest]
		w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
		w.Header().Set("Docker-Content-Digest", r.manifest)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if req.Method != http.MethodHead {
			w.Write(b)
		}
	case strings.HasPrefix(path, "/v2/drover/busybox/blobs/"):
		dg := strings.TrimPrefix(path, "/v2/drover/busybox/blobs/")
		b, ok := r.blobs[dg]
		if !ok {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Docker-Content-Digest", dg)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if req.Method != http.MethodHead {
			w.Write(b)
		}
	default:
		http.NotFound(w, req)
	}
}

func TestPullFromRegistryWithAuth(t *testing.T) {
	// Its own namespace: the content the other tests imported is not there.
	d := newDriver(t, map[string]any{"namespace": "drover-pull"})
	host, reg := newTestRegistry(t, strings.TrimPrefix(busyboxImage(t), ArchivePrefix), "alice", "s3cret")
	var mu sync.Mutex
	var events []string
	d.OnEvent(func(e Event) { mu.Lock(); events = append(events, e.Message); mu.Unlock() })
	image := host + "/drover/busybox:test"

	bad := shTask(t, "true")
	bad.Config = map[string]any{"image": image, "command": "/bin/true",
		"auth": []any{map[string]any{"username": "alice", "password": "wrong"}}}
	if _, err := d.StartTask(t.Context(), bad); err == nil {
		t.Fatal("pull with a wrong password succeeded")
	}

	cfg := shTask(t, "echo pulled")
	cfg.Config = map[string]any{"image": image, "command": "/bin/sh", "args": []any{"-c", "echo pulled"},
		"auth": []any{map[string]any{"username": "alice", "password": "s3cret"}}}
	startTask(t, d, cfg)
	if res := waitExit(t, d, cfg.ID, 60*time.Second); !res.Successful() {
		t.Fatalf("exit %+v", res)
	}
	if got := readLog(t, cfg, "stdout"); got != "pulled\n" {
		t.Fatalf("stdout %q", got)
	}
	// Blobs may already be in the daemon's (namespace-shared) content
	// store; the manifest is always resolved through the registry.
	reg.mu.Lock()
	manifests, denied := reg.manifests, reg.denied
	reg.mu.Unlock()
	if manifests == 0 || denied == 0 {
		t.Errorf("registry saw %d authorized manifest requests and %d denied ones, want both", manifests, denied)
	}
	mu.Lock()
	defer mu.Unlock()
	joined := strings.Join(events, "\n")
	for _, want := range []string{"pulling image " + image, "pulling layer ", "pulled image " + image} {
		if !strings.Contains(joined, want) {
			t.Errorf("events %q lack %q", events, want)
		}
	}
}
