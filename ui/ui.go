package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/drover/drover/api"
)

//go:embed assets index.html
var files embed.FS

// Prefix is the URL path the UI is served under.
const Prefix = "/ui/"

// asset is one embedded file ready to serve.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// contentSecurityPolicy allows only the agent's own origin: the UI has no
// inline script or style and talks to nothing but the agent's API.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// handler serves the embedded assets; see Handler.
type handler struct {
	assets map[string]*asset // by path below Prefix: "index.html", "assets/app.css"
}

// Handler returns the web UI for the paths below /ui/. Requests for
// /ui/assets/... get that file or a JSON 404; every other path gets
// index.html, whose router renders the page named by the URL.
func Handler() http.Handler { return defaultHandler() }

// defaultHandler loads the assets on first use, not at package
// initialisation: every drover process (each task's executor, each CLI
// command) links this package, and only the agent serves the UI.
var defaultHandler = sync.OnceValue(func() *handler { return mustLoad(files) })

func mustLoad(fsys fs.FS) *handler {
	h, err := load(fsys)
	if err != nil {
		panic("ui: " + err.Error())
	}
	return h
}

func load(fsys fs.FS) (*handler, error) {
	h := &handler{assets: map[string]*asset{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		// The UI's own types first: mime.TypeByExtension reads the host's
		// MIME database (~450 KB of heap kept for the agent's lifetime).
		var ct string
		switch path.Ext(p) {
		case ".js":
			ct = "text/javascript; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".html":
			ct = "text/html; charset=utf-8"
		case ".svg":
			ct = "image/svg+xml"
		default:
			ct = mime.TypeByExtension(path.Ext(p))
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(b)
		h.assets[p] = &asset{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if h.assets["index.html"] == nil {
		return nil, fmt.Errorf("index.html is not embedded")
	}
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Every answer, error bodies too, is only what its Content-Type says.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		api.WriteError(w, api.Errorf(api.ErrMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path)))
		return
	}
	rel, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		rel = strings.TrimPrefix(r.URL.Path, "/")
	}
	a := h.assets["index.html"]
	if rel == "assets" || strings.HasPrefix(rel, "assets/") {
		a = h.assets[path.Clean(rel)]
		if a == nil {
			api.WriteError(w, api.Errorf(api.ErrNotFound, fmt.Sprintf("no UI asset %s", r.URL.Path)))
			return
		}
	}
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("ETag", a.etag)
	// Revalidate every time: a new binary must never run stale modules.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("Referrer-Policy", "same-origin")
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatch(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Length", fmt.Sprint(len(a.body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(a.body)
}

// etagMatch reports whether an If-None-Match list names etag.
func etagMatch(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
