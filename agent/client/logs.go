package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drover/drover/agent/allocrunner"
	"github.com/drover/drover/api"
)

// logFrame is a Nomad-style stream frame (JSON, Data base64).
type logFrame struct {
	Data   []byte `json:"Data,omitempty"`
	File   string `json:"File,omitempty"`
	Offset int64  `json:"Offset"`
}

func (c *Client) handleLogs(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	q := r.URL.Query()
	task, typ := q.Get("task"), q.Get("type")
	if typ == "" {
		typ = "stdout"
	}
	if typ != "stdout" && typ != "stderr" {
		api.WriteError(w, badRequest(fmt.Sprintf("type must be stdout or stderr, not %q", typ)))
		return
	}
	if task == "" {
		api.WriteError(w, badRequest("task is required"))
		return
	}
	if !slices.Contains(ar.TaskNames(), task) {
		api.WriteError(w, api.Errorf(api.ErrNotFound, fmt.Sprintf("task %q is not in allocation %s", task, ar.ID())))
		return
	}
	origin := q.Get("origin")
	if origin == "" {
		origin = "start"
	}
	if origin != "start" && origin != "end" {
		api.WriteError(w, badRequest(fmt.Sprintf("origin must be start or end, not %q", origin)))
		return
	}
	var offset int64
	if s := q.Get("offset"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			api.WriteError(w, badRequest(fmt.Sprintf("offset %q is not a non-negative integer", s)))
			return
		}
		offset = v
	}
	follow, plain := q.Get("follow") == "true", q.Get("plain") == "true"
	// The logs dir is opened once, without following links; every file in
	// it is then opened beneath this fd (see fsopen.go).
	// A pending alloc has no dir yet: the stream opens it once it exists.
	ls := &logStream{allocDir: ar.AllocDir(), prefix: task + "." + typ, done: ar.WaitCh()}
	defer ls.close()
	if err := ls.openDir(); err != nil && !errors.Is(err, api.ErrNotFound) {
		api.WriteError(w, restError(err))
		return
	}
	if err := ls.check(); err != nil {
		api.WriteError(w, restError(err))
		return
	}
	if plain {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	// The headers go once the stream's start is fixed (so what is written
	// after a follower has them is sent), not with the first log byte: a
	// follower (browser, proxy, CLI) must not wait for that to learn the
	// stream is open.
	started := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	enc := json.NewEncoder(w)
	emit := func(file string, off int64, b []byte) error {
		var err error
		if plain {
			_, err = w.Write(b)
		} else {
			err = enc.Encode(logFrame{Data: b, File: "alloc/logs/" + file, Offset: off})
		}
		if flusher != nil {
			flusher.Flush()
		}
		return err
	}
	if err := ls.run(r.Context(), origin, offset, follow, started, emit); err != nil && r.Context().Err() == nil {
		c.log.Debug("log stream ended", "alloc_id", ar.ID(), "task", task, "error", err)
	}
}

// logStream reads a task stream's rotated files prefix.0, .1, ... as one.
// A file that is not a regular file (a planted symlink, FIFO, device) ends
// the stream with an error instead of being followed or read.
type logStream struct {
	allocDir string
	dir      *os.File // alloc/logs, opened without following links; nil until it exists
	prefix   string
	done     <-chan struct{} // closed when the alloc has finished
}

// openDir opens alloc/logs if not yet open; a missing dir is an error
// wrapping api.ErrNotFound, a link 403.
func (l *logStream) openDir() error {
	if l.dir != nil {
		return nil
	}
	// No O_DIRECTORY: with it a link gives ENOTDIR instead of ELOOP (403).
	d, _, err := openInAlloc(l.allocDir, "alloc/logs", unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return err
	}
	if _, st, err := fstatInfo(d, "alloc/logs"); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		d.Close()
		return fmt.Errorf("alloc/logs: %w", api.Errorf(api.ErrPermissionDenied, "alloc/logs is not a directory"))
	}
	l.dir = d
	return nil
}

func (l *logStream) close() {
	if l.dir != nil {
		l.dir.Close()
	}
}

// errNotRegular ends a stream at a log file that is not a regular file.
var errNotRegular = errors.New("log file is not a regular file")

func (l *logStream) indexes() []int {
	if l.openDir() != nil {
		return nil
	}
	d, err := openBeneath(int(l.dir.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil
	}
	var out []int
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, l.prefix+".")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

func (l *logStream) name(i int) string { return l.prefix + "." + strconv.Itoa(i) }

// open opens file index i beneath the logs dir fd without following links
// and checks through the fd that it is a regular file.
func (l *logStream) open(i int) (*os.File, int64, error) {
	if err := l.openDir(); err != nil {
		if errors.Is(err, api.ErrNotFound) {
			return nil, 0, fmt.Errorf("%s: %w", l.name(i), os.ErrNotExist)
		}
		return nil, 0, err
	}
	f, err := openBeneath(int(l.dir.Fd()), l.name(i), unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %w", l.name(i), errNotRegular)
	}
	return f, st.Size, nil
}

// check refuses (403) a stream whose files include a link or anything but
// a regular file, before the response starts.
func (l *logStream) check() error {
	for _, ix := range l.indexes() {
		f, _, err := l.open(ix)
		switch {
		case err == nil:
			f.Close()
		case errors.Is(err, os.ErrNotExist):
		case errors.Is(err, errNotRegular):
			return fmt.Errorf("alloc/logs/%s: %w", l.name(ix), api.Errorf(api.ErrPermissionDenied, "log file is not a regular file"))
		default:
			return classifyOpen("alloc/logs/"+l.name(ix), err)
		}
	}
	return nil
}

// size is the size of file index i (-1 when it cannot be opened safely).
func (l *logStream) size(i int) int64 {
	f, n, err := l.open(i)
	if err != nil {
		return -1
	}
	f.Close()
	return n
}

// run streams from the position given by origin/offset; with follow it
// waits for more (inotify on the log dir, a ticker as fallback) until ctx
// ends, or the alloc finished and everything was sent. started is called
// once the start is fixed (and, with follow, the dir watched).
func (l *logStream) run(ctx context.Context, origin string, offset int64, follow bool, started func(), emit func(string, int64, []byte) error) error {
	var changes <-chan struct{}
	if follow {
		w, err := newDirWatcher(l.dir)
		if err == nil {
			defer w.close()
			changes = w.events
		} else {
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			ch := make(chan struct{})
			changes = ch
			go func() {
				// Owned by this function: ends when ctx ends.
				for {
					select {
					case <-t.C:
						select {
						case ch <- struct{}{}:
						case <-ctx.Done():
							return
						}
					case <-ctx.Done():
						return
					}
				}
			}()
		}
	}
	// Find the start: file index and offset within it.
	idxs := l.indexes()
	cur, pos := 0, int64(0)
	if len(idxs) > 0 {
		cur = idxs[0]
		sizes := make([]int64, len(idxs))
		var total int64
		for i, ix := range idxs {
			sizes[i] = max(l.size(ix), 0)
			total += sizes[i]
		}
		want := offset
		if origin == "end" {
			want = max(total-offset, 0)
		}
		for i, ix := range idxs {
			cur, pos = ix, want
			if want < sizes[i] || i == len(idxs)-1 {
				pos = min(want, sizes[i])
				break
			}
			want -= sizes[i]
		}
	}
	started()
	buf := make([]byte, 64<<10)
	for {
		// Drain the current file.
		f, _, err := l.open(cur)
		if err == nil {
			if _, err := f.Seek(pos, io.SeekStart); err == nil {
				for {
					n, rerr := f.Read(buf)
					if n > 0 {
						if err := emit(l.name(cur), pos, buf[:n]); err != nil {
							f.Close()
							return err
						}
						pos += int64(n)
					}
					if rerr != nil {
						break
					}
				}
			}
			f.Close()
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		// Rotated: move on to the next file.
		if next := l.nextIndex(cur); next >= 0 {
			cur, pos = next, 0
			continue
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.done:
			// Finished: one last drain happens if the file grew.
			if l.size(cur) > pos {
				continue
			}
			if l.nextIndex(cur) >= 0 {
				continue
			}
			return nil
		case <-changes:
		}
	}
}

func (l *logStream) nextIndex(cur int) int {
	for _, ix := range l.indexes() {
		if ix > cur {
			return ix
		}
	}
	return -1
}

// dirWatcher reports changes in a directory through inotify.
type dirWatcher struct {
	f      *os.File
	events chan struct{}
	done   chan struct{}
}

// newDirWatcher watches the directory open as dir, through its fd's
// /proc/self/fd entry, so no path is resolved again.
func newDirWatcher(dir *os.File) (*dirWatcher, error) {
	if dir == nil {
		return nil, errors.New("inotify: log dir does not exist yet")
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, "/proc/self/fd/"+strconv.Itoa(int(dir.Fd())), unix.IN_MODIFY|unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE|unix.IN_ONLYDIR); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify watch %s: %w", dir.Name(), err)
	}
	w := &dirWatcher{f: os.NewFile(uintptr(fd), "inotify"), events: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		// Owned by the watcher: close() closes the file, which ends Read.
		defer close(w.done)
		buf := make([]byte, 4096)
		for {
			if _, err := w.f.Read(buf); err != nil {
				return
			}
			select {
			case w.events <- struct{}{}:
			default:
			}
		}
	}()
	return w, nil
}

func (w *dirWatcher) close() {
	w.f.Close()
	<-w.done
}
