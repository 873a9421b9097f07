package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drover/drover/agent/allocrunner"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// route is one client route: its ServeMux pattern and handler.
type route struct {
	pattern string
	h       http.HandlerFunc
}

// routeTable is every /v1/client/ route of c.
func (c *Client) routeTable() []route {
	rs := []route{
		{"GET /v1/client/fs/logs/{alloc}", c.withAlloc(c.handleLogs)},
		{"GET /v1/client/fs/ls/{alloc}", c.withAlloc(c.handleLs)},
		{"GET /v1/client/fs/cat/{alloc}", c.withAlloc(c.handleCat)},
		{"GET /v1/client/fs/stat/{alloc}", c.withAlloc(c.handleStat)},
		{"GET /v1/client/allocation/{alloc}/stats", c.withAlloc(c.handleAllocStats)},
		{"GET /v1/client/allocation/{alloc}/exec", c.withAlloc(c.handleExec)},
		{"GET /v1/client/allocation/{alloc}/checks", c.withAlloc(c.handleChecks)},
		{"GET /v1/client/stats", c.handleHostStats},
		{"GET /v1/client/metadata", c.handleMetaRead},
		{"POST /v1/client/metadata", c.handleMetaApply},
		{"PUT /v1/client/metadata", c.handleMetaApply},
	}
	for _, method := range []string{"PUT", "POST"} {
		rs = append(rs, route{method + " /v1/client/allocation/{alloc}/restart", c.withAlloc(c.handleRestart)},
			route{method + " /v1/client/allocation/{alloc}/signal", c.withAlloc(c.handleSignal)})
	}
	return rs
}

// RoutePatterns lists the client's routes (the agent's tenancy matrix
// test sends a request to each).
func RoutePatterns() []string {
	var out []string
	for _, r := range (&Client{}).routeTable() {
		out = append(out, r.pattern)
	}
	return out
}

func (c *Client) routes() http.Handler {
	m := http.NewServeMux()
	for _, r := range c.routeTable() {
		m.HandleFunc(r.pattern, r.h)
	}
	m.HandleFunc("/v1/client/", func(w http.ResponseWriter, r *http.Request) {
		api.WriteError(w, api.Errorf(api.ErrNotFound, fmt.Sprintf("no client endpoint %s %s", r.Method, r.URL.Path)))
	})
	return m
}

// restError is a handler's error as the REST error it answers: an
// *api.Error keeps its code, a path the kernel refused is a bad request
// (badPathError), anything else is internal.
func restError(err error) *api.Error { return api.AsError(badPathError(err)) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func badRequest(msg string) *api.Error { return api.Errorf(api.ErrBadRequest, msg) }

func (c *Client) withAlloc(h func(http.ResponseWriter, *http.Request, *allocrunner.AllocRunner)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ar, err := c.runner(r.PathValue("alloc"))
		if err != nil {
			api.WriteError(w, restError(err))
			return
		}
		h(w, r, ar)
	}
}

func (c *Client) handleStat(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	f, name, err := openInAlloc(ar.AllocDir(), r.URL.Query().Get("path"), unix.O_PATH)
	if err != nil {
		api.WriteError(w, restError(err))
		return
	}
	defer f.Close()
	fi, st, err := fstatInfo(f, name)
	if err != nil {
		api.WriteError(w, restError(err))
		return
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// O_PATH|O_NOFOLLOW opened the link itself: refused like cat.
		api.WriteError(w, restError(classifyOpen(name, unix.ELOOP)))
		return
	}
	writeJSON(w, fi)
}

// handleLs lists a directory; entries are lstat'ed relative to the dir fd,
// so a symlink is shown as a link and never followed.
func (c *Client) handleLs(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	f, name, err := openInAlloc(ar.AllocDir(), r.URL.Query().Get("path"), unix.O_RDONLY)
	if err != nil {
		api.WriteError(w, restError(err))
		return
	}
	defer f.Close()
	_, st, err := fstatInfo(f, name)
	if err != nil {
		api.WriteError(w, restError(err))
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		api.WriteError(w, badRequest(fmt.Sprintf("%q is not a directory", name)))
		return
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		api.WriteError(w, restError(err))
		return
	}
	sort.Strings(names)
	out := make([]*api.AllocFileInfo, 0, len(names))
	for _, n := range names {
		var est unix.Stat_t
		if err := unix.Fstatat(int(f.Fd()), n, &est, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			out = append(out, statInfo(n, &est))
		}
	}
	writeJSON(w, out)
}

func (c *Client) handleCat(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	// O_NONBLOCK: a planted FIFO must not hang the request.
	f, name, err := openInAlloc(ar.AllocDir(), r.URL.Query().Get("path"), unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		api.WriteError(w, restError(err))
		return
	}
	defer f.Close()
	_, st, err := fstatInfo(f, name)
	if err != nil {
		api.WriteError(w, restError(err))
		return
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		api.WriteError(w, badRequest(fmt.Sprintf("%q is a directory", name)))
		return
	default:
		api.WriteError(w, badRequest(fmt.Sprintf("%q is not a regular file", name)))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.Copy(w, f)
}

func (c *Client) handleAllocStats(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	st, err := ar.Stats(r.Context())
	if err != nil {
		api.WriteError(w, restError(err))
		return
	}
	if st.Timestamp == 0 {
		st.Timestamp = time.Now().UnixNano()
	}
	writeJSON(w, st)
}

// handleChecks answers Nomad's GET /v1/client/allocation/{id}/checks: the
// latest result of each service check of the alloc, by check ID.
func (c *Client) handleChecks(w http.ResponseWriter, _ *http.Request, ar *allocrunner.AllocRunner) {
	writeJSON(w, ar.Checks())
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
		api.WriteError(w, restError(err))
		return
	}
	if req.TaskName == "" {
		req.TaskName = r.URL.Query().Get("task")
	}
	if err := ar.Restart(r.Context(), req.TaskName); err != nil {
		api.WriteError(w, restError(err))
		return
	}
	writeJSON(w, struct{}{})
}

func (c *Client) handleSignal(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	var req api.AllocSignalRequest
	if err := decodeBody(r, &req); err != nil {
		api.WriteError(w, restError(err))
		return
	}
	if req.Signal == "" {
		api.WriteError(w, badRequest("Signal is required"))
		return
	}
	if err := ar.Signal(r.Context(), req.Task, req.Signal); err != nil {
		if errors.Is(err, drivers.ErrNotSupported) {
			err = api.Errorf(api.ErrBadRequest, err.Error())
		}
		api.WriteError(w, restError(err))
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
