package client

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// httpClient is a client with one running alloc (no servers) and an
// HTTP server over its Handler.
func httpClient(t *testing.T) (*Client, *api.Allocation, string) {
	t.Helper()
	c := startClient(t, testConfig(t.TempDir()))
	a := testAlloc(c.NodeID(), "dddddddd-0000-4000-8000-000000000001", nil)
	if err := c.startRunner(a, false); err != nil {
		t.Fatal(err)
	}
	ar, _ := c.runner(a.ID)
	testproc.Eventually(t, 15*time.Second, "task running", func() bool { return ar.Alloc().ClientStatus == api.AllocClientStatusRunning })
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return c, a, srv.URL
}

func get(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestFSPathTraversal(t *testing.T) {
	c, a, base := httpClient(t)
	ar, _ := c.runner(a.ID)
	dir := ar.AllocDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alloc", "data", "ok.txt"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "alloc", "data", "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "web", "local", "leak")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ok.txt", filepath.Join(dir, "alloc", "data", "inside")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		op, path string
		status   int
		code     string
	}{
		{"cat", "alloc/data/ok.txt", 200, ""},
		{"cat", "/alloc/data/ok.txt", 200, ""},
		{"cat", "alloc/data/inside", 403, "permission_denied"}, // links are never followed, even inside
		{"cat", "../../../etc/passwd", 400, "bad_request"},
		{"cat", "alloc/../../x", 400, "bad_request"},
		{"cat", "/../etc/passwd", 400, "bad_request"},
		{"cat", "/etc/passwd", 404, "not_found"}, // absolute = relative to the alloc dir
		{"cat", "alloc/data/out/secret", 403, "permission_denied"},
		{"cat", "web/local/leak", 403, "permission_denied"},
		{"ls", "alloc/data/out", 403, "permission_denied"},
		{"stat", "web/local/leak", 403, "permission_denied"},
		{"ls", "..", 400, "bad_request"},
		{"stat", "alloc/data/nope", 404, "not_found"},
		{"ls", "/", 200, ""},
		{"cat", "alloc/data", 400, "bad_request"},
	}
	for _, tc := range cases {
		u := base + "/v1/client/fs/" + tc.op + "/" + a.ID + "?path=" + url.QueryEscape(tc.path)
		st, body := get(t, u)
		if st != tc.status {
			t.Errorf("%s %q: status %d (%s), want %d", tc.op, tc.path, st, body, tc.status)
			continue
		}
		if strings.Contains(string(body), "s3cret") {
			t.Errorf("%s %q leaked the outside file", tc.op, tc.path)
		}
		if tc.code != "" {
			var eb api.ErrorBody
			if err := json.Unmarshal(body, &eb); err != nil || eb.Error == nil || eb.Error.Code != tc.code {
				t.Errorf("%s %q: body %s, want JSON error code %q", tc.op, tc.path, body, tc.code)
			}
		}
	}
	// Encoded traversal in the raw query: %2e%2e%2f.
	st, _ := get(t, base+"/v1/client/fs/cat/"+a.ID+"?path=%2e%2e%2f%2e%2e%2fetc%2fpasswd")
	if st != 400 {
		t.Errorf("encoded ../: status %d, want 400", st)
	}
	// Unknown alloc.
	st, body := get(t, base+"/v1/client/fs/ls/nope?path=/")
	if st != 404 || !strings.Contains(string(body), "alloc_not_found") {
		t.Errorf("unknown alloc: %d %s", st, body)
	}
}

func TestFSListStatCat(t *testing.T) {
	_, a, base := httpClient(t)
	st, body := get(t, base+"/v1/client/fs/ls/"+a.ID+"?path=/")
	if st != 200 {
		t.Fatalf("ls: %d %s", st, body)
	}
	var ents []*api.AllocFileInfo
	if err := json.Unmarshal(body, &ents); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name] = e.IsDir
	}
	if !names["alloc"] || !names["web"] {
		t.Errorf("ls / = %v, want alloc and web dirs", names)
	}
	st, body = get(t, base+"/v1/client/fs/stat/"+a.ID+"?path=alloc/logs/web.stdout.0")
	var fi api.AllocFileInfo
	if st != 200 || json.Unmarshal(body, &fi) != nil || fi.IsDir || fi.Size != int64(len("hello from web\n")) {
		t.Errorf("stat: %d %s", st, body)
	}
	st, body = get(t, base+"/v1/client/fs/cat/"+a.ID+"?path=alloc/logs/web.stdout.0")
	if st != 200 || string(body) != "hello from web\n" {
		t.Errorf("cat: %d %q", st, body)
	}
}

func TestLogs(t *testing.T) {
	c, a, base := httpClient(t)
	ar, _ := c.runner(a.ID)
	logs := filepath.Join(ar.AllocDir(), "alloc", "logs")
	if err := os.WriteFile(filepath.Join(logs, "web.stdout.0"), []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "web.stdout.1"), []byte("abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := base + "/v1/client/fs/logs/" + a.ID + "?task=web&type=stdout"
	for _, tc := range []struct{ params, want string }{
		{"&plain=true", "0123456789abcdef"},
		{"&plain=true&offset=12", "cdef"},
		{"&plain=true&origin=end&offset=8", "89abcdef"},
		{"&plain=true&origin=end&offset=100", "0123456789abcdef"},
	} {
		st, body := get(t, q+tc.params)
		if st != 200 || string(body) != tc.want {
			t.Errorf("logs%s = %d %q, want %q", tc.params, st, body, tc.want)
		}
	}
	// JSON frames.
	st, body := get(t, q)
	if st != 200 {
		t.Fatalf("frames: %d %s", st, body)
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	var got strings.Builder
	var files []string
	for dec.More() {
		var f logFrame
		if err := dec.Decode(&f); err != nil {
			t.Fatal(err)
		}
		got.Write(f.Data)
		files = append(files, f.File)
	}
	if got.String() != "0123456789abcdef" || len(files) != 2 || files[1] != "alloc/logs/web.stdout.1" {
		t.Errorf("frames = %q from %v", got.String(), files)
	}
	for _, bad := range []string{"?task=web&type=stdin", "?type=stdout", "?task=nope&type=stdout", "?task=web&offset=-1", "?task=web&origin=middle"} {
		st, body := get(t, base+"/v1/client/fs/logs/"+a.ID+bad)
		if st/100 != 4 || !strings.Contains(string(body), `"error"`) {
			t.Errorf("logs%s = %d %s, want a JSON 4xx", bad, st, body)
		}
	}
}

func TestLogsFollowAcrossRotation(t *testing.T) {
	c, a, base := httpClient(t)
	ar, _ := c.runner(a.ID)
	logs := filepath.Join(ar.AllocDir(), "alloc", "logs")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/client/fs/logs/"+a.ID+"?task=web&type=stdout&plain=true&follow=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	readLine := func() string {
		t.Helper()
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read followed log: %v", err)
		}
		return l
	}
	if l := readLine(); l != "hello from web\n" {
		t.Fatalf("first line %q", l)
	}
	f, err := os.OpenFile(filepath.Join(logs, "web.stdout.0"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("second\n")
	f.Close()
	if l := readLine(); l != "second\n" {
		t.Fatalf("appended line %q", l)
	}
	// Rotation: a new file appears.
	if err := os.WriteFile(filepath.Join(logs, "web.stdout.1"), []byte("rotated\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l := readLine(); l != "rotated\n" {
		t.Fatalf("line after rotation %q", l)
	}
	// The stream ends when the alloc finishes.
	ar.Kill()
	<-ar.WaitCh()
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Errorf("after the alloc ended: %q, %v", rest, err)
	}
}

func TestAllocControlEndpoints(t *testing.T) {
	c, a, base := httpClient(t)
	put := func(path, body string) (int, string) {
		req, _ := http.NewRequest("PUT", base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, b := put("/v1/client/allocation/"+a.ID+"/signal", `{"Signal":"SIGHUP"}`); st != 200 {
		t.Errorf("signal: %d %s", st, b)
	}
	d := c.drivers["fake"].(*fakeDriver)
	d.mu.Lock()
	sigs := append([]string(nil), d.sigs...)
	d.mu.Unlock()
	if len(sigs) != 1 || sigs[0] != "SIGHUP" {
		t.Errorf("signals delivered = %v", sigs)
	}
	if st, _ := put("/v1/client/allocation/"+a.ID+"/signal", `{}`); st != 400 {
		t.Errorf("signal without Signal: %d, want 400", st)
	}
	if st, _ := put("/v1/client/allocation/"+a.ID+"/signal", `{bad json`); st != 400 {
		t.Errorf("signal with bad JSON: %d, want 400", st)
	}
	if st, b := put("/v1/client/allocation/"+a.ID+"/restart", `{"TaskName":"web"}`); st != 200 {
		t.Errorf("restart: %d %s", st, b)
	}
	ar, _ := c.runner(a.ID)
	testproc.Eventually(t, 15*time.Second, "restarted", func() bool {
		s := ar.Alloc().TaskStates["web"]
		return s.Restarts == 1 && s.State == api.TaskStateRunning
	})
	if st, _ := put("/v1/client/allocation/"+a.ID+"/restart", `{"TaskName":"nope"}`); st != 404 {
		t.Errorf("restart unknown task: %d, want 404", st)
	}
	st, body := get(t, base+"/v1/client/allocation/"+a.ID+"/stats")
	if st != 200 || !strings.Contains(string(body), "ResourceUsage") {
		t.Errorf("alloc stats: %d %s", st, body)
	}
	st, body = get(t, base+"/v1/client/stats")
	var hs HostStats
	if st != 200 || json.Unmarshal(body, &hs) != nil || hs.Memory == nil || hs.Memory.Total == 0 || len(hs.DiskStats) != 1 {
		t.Errorf("host stats: %d %s", st, body)
	}
	st, body = get(t, base+"/v1/client/nope")
	if st != 404 || !strings.Contains(string(body), `"error"`) {
		t.Errorf("unknown endpoint: %d %s", st, body)
	}
}

// TestLogsFollowSendsHeadersAtOnce: a follow request gets its status and
// headers before any log byte exists (browsers and proxies wait for
// them), then the bytes as they come.
func TestLogsFollowSendsHeadersAtOnce(t *testing.T) {
	c, a, base := httpClient(t)
	ar, _ := c.runner(a.ID)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// From the end: nothing to send until the task writes more.
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/client/fs/logs/"+a.ID+"?task=web&type=stdout&plain=true&follow=true&origin=end&offset=0", nil)
	type answer struct {
		resp *http.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		got <- answer{resp, err}
	}()
	var resp *http.Response
	select {
	case ans := <-got:
		if ans.err != nil {
			t.Fatal(ans.err)
		}
		resp = ans.resp
	case <-time.After(10 * time.Second):
		t.Fatal("no response headers while the log has nothing new")
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	f, err := os.OpenFile(filepath.Join(ar.AllocDir(), "alloc", "logs", "web.stdout.0"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("later\n")
	f.Close()
	stop := time.AfterFunc(30*time.Second, cancel) // a line never sent fails, not hangs
	defer stop.Stop()
	if l, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || l != "later\n" {
		t.Fatalf("followed line %q, %v; want %q", l, err, "later\n")
	}
}
