package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drover/drover/agent/allocrunner"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

func (c *Client) routes() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/client/fs/logs/{alloc}", c.withAlloc(c.handleLogs))
	m.HandleFunc("GET /v1/client/fs/ls/{alloc}", c.withAlloc(c.handleLs))
	m.HandleFunc("GET /v1/client/fs/cat/{alloc}", c.withAlloc(c.handleCat))
	m.HandleFunc("GET /v1/client/fs/stat/{alloc}", c.withAlloc(c.handleStat))
	m.HandleFunc("GET /v1/client/allocation/{alloc}/stats", c.withAlloc(c.handleAllocStats))
	m.HandleFunc("GET /v1/client/allocation/{alloc}/exec", c.withAlloc(c.handleExec))
	for _, method := range []string{"PUT", "POST"} {
		m.HandleFunc(method+" /v1/client/allocation/{alloc}/restart", c.withAlloc(c.handleRestart))
		m.HandleFunc(method+" /v1/client/allocation/{alloc}/signal", c.withAlloc(c.handleSignal))
	}
	m.HandleFunc("GET /v1/client/stats", c.handleHostStats)
	m.HandleFunc("/v1/client/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, api.Errorf(api.ErrNotFound, fmt.Sprintf("no client endpoint %s %s", r.Method, r.URL.Path)))
	})
	return m
}

func writeError(w http.ResponseWriter, err error) {
	e := api.AsError(badPathError(err))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: e})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func badRequest(msg string) error { return api.Errorf(api.ErrBadRequest, msg) }

func (c *Client) withAlloc(h func(http.ResponseWriter, *http.Request, *allocrunner.AllocRunner)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ar, err := c.runner(r.PathValue("alloc"))
		if err != nil {
			writeError(w, err)
			return
		}
		h(w, r, ar)
	}
}

// resolve checks a user path against the alloc dir: ".." components are
// refused (400) and the path is opened through an os.Root, which refuses
// symlinks out of the dir (403). Leading "/" means the alloc dir root.
func resolve(allocDir, p string) (*os.Root, string, error) {
	if strings.ContainsRune(p, 0) {
		return nil, "", badRequest("path contains a NUL byte")
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return nil, "", fmt.Errorf("path %q: %w", p, badRequest("path escapes the allocation directory"))
		}
	}
	name := strings.Trim(filepath.ToSlash(p), "/")
	if name == "" {
		name = "."
	}
	root, err := os.OpenRoot(allocDir)
	if err != nil {
		return nil, "", fmt.Errorf("open alloc dir: %w", err)
	}
	return root, name, nil
}

// classify turns an os.Root error into an API error.
func classify(allocDir, name string, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		// A dangling symlink pointing outside is still an escape.
		if escapes(allocDir, name) {
			return fmt.Errorf("path %q: %w", name, api.Errorf(api.ErrPermissionDenied, "path escapes the allocation directory"))
		}
		return fmt.Errorf("path %q: %w", name, api.Errorf(api.ErrNotFound, "no such file or directory"))
	}
	if escapes(allocDir, name) {
		return fmt.Errorf("path %q: %w", name, api.Errorf(api.ErrPermissionDenied, "path escapes the allocation directory"))
	}
	return fmt.Errorf("path %q: %w", name, err)
}

// escapes reports whether following the symlinks in name leaves dir.
func escapes(dir, name string) bool {
	full := filepath.Join(dir, name)
	for p := full; p != dir && strings.HasPrefix(p, dir); p = filepath.Dir(p) {
		target, err := os.Readlink(p)
		if err != nil {
			continue
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		if rel, err := filepath.Rel(dir, filepath.Clean(target)); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

func fileInfo(fi os.FileInfo) *api.AllocFileInfo {
	return &api.AllocFileInfo{Name: fi.Name(), IsDir: fi.IsDir(), Size: fi.Size(), FileMode: fi.Mode().String(), ModTime: fi.ModTime()}
}

func (c *Client) handleStat(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	root, name, err := resolve(ar.AllocDir(), r.URL.Query().Get("path"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer root.Close()
	fi, err := root.Stat(name)
	if err != nil {
		writeError(w, classify(ar.AllocDir(), name, err))
		return
	}
	writeJSON(w, fileInfo(fi))
}

// openInAlloc opens a user path inside the alloc dir (see resolve); the
// name is the cleaned path within it.
func openInAlloc(allocDir, p string) (*os.File, string, error) {
	root, name, err := resolve(allocDir, p)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return nil, name, classify(allocDir, name, err)
	}
	return f, name, nil
}

func (c *Client) handleLs(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	f, name, err := openInAlloc(ar.AllocDir(), r.URL.Query().Get("path"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		writeError(w, err)
		return
	}
	if !fi.IsDir() {
		writeError(w, badRequest(fmt.Sprintf("%q is not a directory", name)))
		return
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]*api.AllocFileInfo, 0, len(ents))
	for _, e := range ents {
		if info, err := e.Info(); err == nil {
			out = append(out, fileInfo(info))
		}
	}
	writeJSON(w, out)
}

func (c *Client) handleCat(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	f, name, err := openInAlloc(ar.AllocDir(), r.URL.Query().Get("path"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		writeError(w, badRequest(fmt.Sprintf("%q is a directory", name)))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.Copy(w, f)
}

func (c *Client) handleAllocStats(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	st, err := ar.Stats(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	if st.Timestamp == 0 {
		st.Timestamp = time.Now().UnixNano()
	}
	writeJSON(w, st)
}

func decodeBody(r *http.Request, v any) error {
	if r.Body == nil {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return badRequest("read body: " + err.Error())
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return badRequest("invalid JSON body: " + err.Error())
	}
	return nil
}

func (c *Client) handleRestart(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	var req api.AllocRestartRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.TaskName == "" {
		req.TaskName = r.URL.Query().Get("task")
	}
	if err := ar.Restart(r.Context(), req.TaskName); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, struct{}{})
}

func (c *Client) handleSignal(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	var req api.AllocSignalRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Signal == "" {
		writeError(w, badRequest("Signal is required"))
		return
	}
	if err := ar.Signal(r.Context(), req.Task, req.Signal); err != nil {
		if errors.Is(err, drivers.ErrNotSupported) {
			err = api.Errorf(api.ErrBadRequest, err.Error())
		}
		writeError(w, err)
		return
	}
	writeJSON(w, struct{}{})
}

// HostStats answers GET /v1/client/stats.
type HostStats struct {
	Memory    *HostMemoryStats `json:"Memory"`
	DiskStats []*HostDiskStats `json:"DiskStats"`
	Uptime    uint64           `json:"Uptime"`
	Timestamp int64            `json:"Timestamp"`
	Allocs    int              `json:"Allocations"`
}

// HostMemoryStats in bytes.
type HostMemoryStats struct {
	Total     uint64 `json:"Total"`
	Available uint64 `json:"Available"`
	Used      uint64 `json:"Used"`
	Free      uint64 `json:"Free"`
}

// HostDiskStats of the data dir's filesystem.
type HostDiskStats struct {
	Mountpoint  string  `json:"Mountpoint"`
	Size        uint64  `json:"Size"`
	Used        uint64  `json:"Used"`
	Available   uint64  `json:"Available"`
	UsedPercent float64 `json:"UsedPercent"`
}

func (c *Client) handleHostStats(w http.ResponseWriter, r *http.Request) {
	var si unix.Sysinfo_t
	out := &HostStats{Timestamp: time.Now().UnixNano()}
	if err := unix.Sysinfo(&si); err == nil {
		unit := uint64(si.Unit)
		out.Uptime = uint64(si.Uptime)
		out.Memory = &HostMemoryStats{Total: si.Totalram * unit, Free: si.Freeram * unit,
			Available: (si.Freeram + si.Bufferram) * unit, Used: (si.Totalram - si.Freeram) * unit}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(c.cfg.DataDir, &st); err == nil {
		size := st.Blocks * uint64(st.Bsize)
		avail := st.Bavail * uint64(st.Bsize)
		used := size - st.Bfree*uint64(st.Bsize)
		d := &HostDiskStats{Mountpoint: c.cfg.DataDir, Size: size, Used: used, Available: avail}
		if size > 0 {
			d.UsedPercent = float64(used) * 100 / float64(size)
		}
		out.DiskStats = []*HostDiskStats{d}
	}
	c.mu.Lock()
	out.Allocs = len(c.runners)
	c.mu.Unlock()
	writeJSON(w, out)
}
