package ui

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func serve(t *testing.T, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, r)
	return w
}

func TestHandlerServesIndexForDeepLinks(t *testing.T) {
	// Every stable deep link, including IDs with dots and escapes, gets index.html.
	for _, p := range []string{"/ui/", "/ui/jobs", "/ui/jobs/web.v2", "/ui/jobs/a%2Fb", "/ui/allocations/0b7c1f2e-8d0e-4f5b-9c3a-1d2e3f4a5b6c",
		"/ui/nodes", "/ui/nodes/n1", "/ui/topology", "/ui/servers", "/ui/evaluations", "/ui/run", "/ui/no/such/page"} {
		w := serve(t, "GET", p, nil)
		if w.Code != http.StatusOK {
			t.Errorf("GET %s: status %d, want 200", p, w.Code)
			continue
		}
		if got, want := w.Header().Get("Content-Type"), "text/html; charset=utf-8"; got != want {
			t.Errorf("GET %s: Content-Type %q, want %q", p, got, want)
		}
		if !strings.Contains(w.Body.String(), `<script type="module" src="/ui/assets/js/app.js">`) {
			t.Errorf("GET %s: body is not index.html:\n%s", p, w.Body.String())
		}
	}
}

func TestHandlerAssets(t *testing.T) {
	tests := []struct{ path, ctype string }{
		{"/ui/assets/js/app.js", "text/javascript; charset=utf-8"},
		{"/ui/assets/js/pages/jobs.js", "text/javascript; charset=utf-8"},
		{"/ui/assets/app.css", "text/css; charset=utf-8"},
		{"/ui/assets/favicon.svg", "image/svg+xml"},
	}
	for _, tt := range tests {
		w := serve(t, "GET", tt.path, nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: status %d, want 200", tt.path, w.Code)
		}
		if got := w.Header().Get("Content-Type"); got != tt.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", tt.path, got, tt.ctype)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s: missing security headers: %v", tt.path, w.Header())
		}
		etag := w.Header().Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s: no ETag", tt.path)
		}
		w2 := serve(t, "GET", tt.path, map[string]string{"If-None-Match": etag})
		if w2.Code != http.StatusNotModified || w2.Body.Len() != 0 {
			t.Errorf("GET %s with If-None-Match: status %d, %d bytes; want 304, empty", tt.path, w2.Code, w2.Body.Len())
		}
		w3 := serve(t, "HEAD", tt.path, nil)
		if w3.Code != http.StatusOK || w3.Body.Len() != 0 || w3.Header().Get("Content-Length") == "" {
			t.Errorf("HEAD %s: status %d, %d bytes, Content-Length %q", tt.path, w3.Code, w3.Body.Len(), w3.Header().Get("Content-Length"))
		}
	}
}

func TestHandlerErrorsAreJSON(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/ui/assets/js/missing.js", http.StatusNotFound, api.ErrNotFound.Code},
		{"GET", "/ui/assets/../../etc/passwd", http.StatusNotFound, api.ErrNotFound.Code},
		{"GET", "/ui/assets", http.StatusNotFound, api.ErrNotFound.Code},
		{"POST", "/ui/jobs", http.StatusMethodNotAllowed, api.ErrMethodNotAllowed.Code},
	}
	for _, tt := range tests {
		w := serve(t, tt.method, tt.path, nil)
		if w.Code != tt.status {
			t.Errorf("%s %s: status %d, want %d", tt.method, tt.path, w.Code, tt.status)
		}
		var body api.ErrorBody
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error == nil {
			t.Errorf("%s %s: body %q is not a JSON error: %v", tt.method, tt.path, w.Body.String(), err)
			continue
		}
		if body.Error.Code != tt.code || body.Error.Message == "" {
			t.Errorf("%s %s: error %+v, want code %q with a message", tt.method, tt.path, body.Error, tt.code)
		}
	}
}

var (
	staticImport  = regexp.MustCompile(`(?m)^import\s[^'"]*['"]([^'"]+)['"]`)
	dynamicImport = regexp.MustCompile(`import\(\s*['"]([^'"]+)['"]\s*\)`)
	routeDecl     = regexp.MustCompile(`route\('([^']+)', \(\) => import\('([^']+)'\)`)
	pageExport    = regexp.MustCompile(`(?m)^export (async )?function render\(`)
	htmlRef       = regexp.MustCompile(`(?:src|href)="(/ui/[^"]+)"`)
)

// TestModuleGraph checks, without a browser, that every module a module
// imports is embedded, that every page the router loads exports render,
// and that index.html refers only to embedded files: with no build step,
// a typo would otherwise only show in a browser.
func TestModuleGraph(t *testing.T) {
	var scripts []string
	err := fs.WalkDir(files, "assets", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".js") {
			scripts = append(scripts, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) < 10 {
		t.Fatalf("found %d scripts, want the app, api, router, dom and one per page", len(scripts))
	}
	for _, s := range scripts {
		b, _ := fs.ReadFile(files, s)
		src := string(b)
		var specs []string
		for _, m := range staticImport.FindAllStringSubmatch(src, -1) {
			specs = append(specs, m[1])
		}
		for _, m := range dynamicImport.FindAllStringSubmatch(src, -1) {
			specs = append(specs, m[1])
		}
		for _, spec := range specs {
			if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") {
				t.Errorf("%s imports %q: only relative module paths work without a build step", s, spec)
				continue
			}
			target := path.Join(path.Dir(s), spec)
			if _, err := fs.Stat(files, target); err != nil {
				t.Errorf("%s imports %q: %s is not embedded", s, spec, target)
			}
		}
	}

	app, _ := fs.ReadFile(files, "assets/js/app.js")
	routes := routeDecl.FindAllStringSubmatch(string(app), -1)
	patterns := map[string]bool{}
	for _, r := range routes {
		patterns[r[1]] = true
		page, _ := fs.ReadFile(files, path.Join("assets/js", r[2]))
		if !pageExport.Match(page) {
			t.Errorf("page %s (route %s) does not export render", r[2], r[1])
		}
	}
	// The deep links the UI promises.
	for _, want := range []string{"/ui/jobs", "/ui/jobs/:id", "/ui/allocations/:id", "/ui/nodes", "/ui/nodes/:id",
		"/ui/topology", "/ui/servers", "/ui/evaluations", "/ui/run", "/ui/queues", "/ui/usage",
		"/ui/jobs/:id/groups/:group", "/ui/variables", "/ui/variables/new", "/ui/variables/var/*path"} {
		if !patterns[want] {
			t.Errorf("no route for %s; routes: %v", want, patterns)
		}
	}

	index, _ := fs.ReadFile(files, "index.html")
	for _, m := range htmlRef.FindAllStringSubmatch(string(index), -1) {
		ref := strings.TrimPrefix(m[1], Prefix)
		if strings.HasPrefix(ref, "assets/") {
			if _, err := fs.Stat(files, ref); err != nil {
				t.Errorf("index.html refers to %s, which is not embedded", m[1])
			}
		}
	}
}

func TestLoadRequiresIndex(t *testing.T) {
	sub, err := fs.Sub(files, "assets")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load(sub); err == nil {
		t.Fatal("load without index.html: got nil error, want one")
	}
}
