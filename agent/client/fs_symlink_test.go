package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// The issue #15 traversal table: every fs/log route against .., encoded
// .., absolute paths, symlinks planted by the task (inside the alloc dir
// pointing out, and as a log file) and over-long names. Nothing outside
// the alloc dir may be read and every refusal is a JSON 4xx.
func TestFSRoutesNeverFollowLinks(t *testing.T) {
	c, a, base := httpClient(t)
	ar, _ := c.runner(a.ID)
	dir := ar.AllocDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "shadow")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s3cret", 20)), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "alloc", "logs")
	for _, l := range []struct{ target, at string }{
		{outside, filepath.Join(dir, "alloc", "data", "outdir")},
		{secret, filepath.Join(dir, "alloc", "data", "outfile")},
		{"/etc", filepath.Join(dir, "web", "local", "etc")},
		{secret, filepath.Join(logs, "web.stdout.5")},
	} {
		if err := os.Symlink(l.target, l.at); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("a", 300)
	type tc struct {
		route, rawQuery string
		status          int
		code            string
	}
	var cases []tc
	for _, op := range []string{"ls", "cat", "stat"} {
		for _, p := range []struct {
			path   string
			status int
			code   string
		}{
			{"..", 400, "bad_request"},
			{"../../../../etc/shadow", 400, "bad_request"},
			{"alloc/../../" + filepath.Base(outside), 400, "bad_request"},
			{"/etc/shadow", 404, "not_found"}, // absolute = relative to the alloc dir
			{secret, 404, "not_found"},
			{"alloc/data/outdir", 403, "permission_denied"},
			{"alloc/data/outdir/shadow", 403, "permission_denied"},
			{"alloc/data/outfile", 403, "permission_denied"},
			{"web/local/etc/passwd", 403, "permission_denied"},
			{"alloc/logs/web.stdout.5", 403, "permission_denied"},
			{long, 400, "bad_request"},
			{"alloc/" + long + "/x", 400, "bad_request"},
		} {
			cases = append(cases, tc{op, "path=" + url.QueryEscape(p.path), p.status, p.code})
		}
		// Encoded in the raw query, as a hostile client sends it.
		cases = append(cases,
			tc{op, "path=%2e%2e%2f%2e%2e%2fetc%2fshadow", 400, "bad_request"},
			tc{op, "path=alloc%2f%2e%2e%2f%2e%2e", 400, "bad_request"},
			tc{op, "path=%2e%2e", 400, "bad_request"})
	}
	cases = append(cases, tc{"logs", "task=" + long + "&type=stdout", 404, "not_found"})
	for _, tc := range cases {
		st, body := get(t, base+"/v1/client/fs/"+tc.route+"/"+a.ID+"?"+tc.rawQuery)
		if bytes.Contains(body, []byte("s3cret")) || bytes.Contains(body, []byte("root:")) {
			t.Errorf("%s?%.80s leaked a file outside the alloc dir: %.200s", tc.route, tc.rawQuery, body)
		}
		if st != tc.status {
			t.Errorf("%s?%.80s: status %d (%.200s), want %d", tc.route, tc.rawQuery, st, body, tc.status)
			continue
		}
		var eb api.ErrorBody
		if err := json.Unmarshal(body, &eb); err != nil || eb.Error == nil || eb.Error.Code != tc.code {
			t.Errorf("%s?%.80s: body %.200s, want JSON error code %q", tc.route, tc.rawQuery, body, tc.code)
		}
	}
	// ls shows a link as a link and does not follow it.
	st, body := get(t, base+"/v1/client/fs/ls/"+a.ID+"?path=alloc/data")
	var ents []*api.AllocFileInfo
	if st != 200 || json.Unmarshal(body, &ents) != nil {
		t.Fatalf("ls alloc/data: %d %s", st, body)
	}
	modes := map[string]string{}
	for _, e := range ents {
		modes[e.Name] = e.FileMode
	}
	if !strings.HasPrefix(modes["outdir"], "L") || !strings.HasPrefix(modes["outfile"], "L") {
		t.Errorf("ls alloc/data modes = %v, want the links listed as links (L...)", modes)
	}

	// A link planted as the first log file: logs refuses, in every mode.
	if err := os.Remove(filepath.Join(logs, "web.stdout.0")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(logs, "web.stdout.0")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"&plain=true", "", "&origin=end&offset=10&plain=true"} {
		st, body := get(t, base+"/v1/client/fs/logs/"+a.ID+"?task=web&type=stdout"+q)
		if bytes.Contains(body, []byte("s3cret")) {
			t.Errorf("logs%s printed the outside file: %.200s", q, body)
		}
		var eb api.ErrorBody
		if st != 403 || json.Unmarshal(body, &eb) != nil || eb.Error == nil || eb.Error.Code != "permission_denied" {
			t.Errorf("logs%s = %d %.200s, want a 403 permission_denied JSON error", q, st, body)
		}
	}
	// The alloc/logs dir itself replaced by a link.
	if err := os.Rename(logs, logs+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, logs); err != nil {
		t.Fatal(err)
	}
	st, body = get(t, base+"/v1/client/fs/logs/"+a.ID+"?task=web&type=stdout&plain=true")
	if st != 403 || bytes.Contains(body, []byte("s3cret")) {
		t.Errorf("logs with alloc/logs a link = %d %.200s, want 403", st, body)
	}
}

// streamReader collects a streamed response body in the background.
type streamReader struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

func readStream(body io.Reader) *streamReader {
	s := &streamReader{done: make(chan struct{})}
	go func() {
		// Owned by the test: ends when the body ends or is closed.
		defer close(s.done)
		b := make([]byte, 4096)
		for {
			n, err := body.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *streamReader) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// A link swapped in while a follow stream is open (over the file being
// read, or as the next rotated file) ends the stream; it is never read.
func TestLogsFollowRefusesSwappedLink(t *testing.T) {
	for _, swap := range []string{"current", "next"} {
		t.Run(swap, func(t *testing.T) {
			c, a, base := httpClient(t)
			ar, _ := c.runner(a.ID)
			logs := filepath.Join(ar.AllocDir(), "alloc", "logs")
			secret := filepath.Join(t.TempDir(), "shadow")
			if err := os.WriteFile(secret, []byte(strings.Repeat("s3cret", 20)), 0o600); err != nil {
				t.Fatal(err)
			}
			// stderr: the fake task writes only stdout.
			if err := os.WriteFile(filepath.Join(logs, "web.stderr.0"), []byte("first\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/client/fs/logs/"+a.ID+"?task=web&type=stderr&plain=true&follow=true", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			s := readStream(resp.Body)
			testproc.Eventually(t, 15*time.Second, "first line streamed", func() bool { return strings.Contains(s.String(), "first\n") })
			// Between two reads: swap a link in with an atomic rename.
			name := "web.stderr.0"
			if swap == "next" {
				name = "web.stderr.1"
			}
			tmp := filepath.Join(logs, ".swap")
			if err := os.Symlink(secret, tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(logs, name)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-s.done:
			case <-ctx.Done():
				t.Fatalf("the stream neither ended nor refused the link; got %.200q", s.String())
			}
			if got := s.String(); strings.Contains(got, "s3cret") {
				t.Fatalf("follow stream read through the swapped link: %.200q", got)
			}
			if got := s.String(); got != "first\n" {
				t.Errorf("streamed %q, want only the real file's content", got)
			}
		})
	}
}
