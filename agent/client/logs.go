package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
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
		writeError(w, badRequest(fmt.Sprintf("type must be stdout or stderr, not %q", typ)))
		return
	}
	if task == "" {
		writeError(w, badRequest("task is required"))
		return
	}
	if !slices.Contains(ar.TaskNames(), task) {
		writeError(w, api.Errorf(api.ErrNotFound, fmt.Sprintf("task %q is not in allocation %s", task, ar.ID())))
		return
	}
	origin := q.Get("origin")
	if origin == "" {
		origin = "start"
	}
	if origin != "start" && origin != "end" {
		writeError(w, badRequest(fmt.Sprintf("origin must be start or end, not %q", origin)))
		return
	}
	var offset int64
	if s := q.Get("offset"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			writeError(w, badRequest(fmt.Sprintf("offset %q is not a non-negative integer", s)))
			return
		}
		offset = v
	}
	follow, plain := q.Get("follow") == "true", q.Get("plain") == "true"
	ls := &logStream{dir: filepath.Join(ar.AllocDir(), "alloc", "logs"), prefix: task + "." + typ, done: ar.WaitCh()}
	if plain {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
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
	if err := ls.run(r.Context(), origin, offset, follow, emit); err != nil && r.Context().Err() == nil {
		c.log.Debug("log stream ended", "alloc_id", ar.ID(), "task", task, "error", err)
	}
}

// logStream reads a task stream's rotated files prefix.0, .1, ... as one.
type logStream struct {
	dir, prefix string
	done        <-chan struct{} // closed when the alloc has finished
}

func (l *logStream) indexes() []int {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), l.prefix+".")
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

// run streams from the position given by origin/offset; with follow it
// waits for more (inotify on the log dir, a ticker as fallback) until ctx
// ends, or the alloc finished and everything was sent.
func (l *logStream) run(ctx context.Context, origin string, offset int64, follow bool, emit func(string, int64, []byte) error) error {
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
			if fi, err := os.Stat(filepath.Join(l.dir, l.name(ix))); err == nil {
				sizes[i] = fi.Size()
			}
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
	buf := make([]byte, 64<<10)
	for {
		// Drain the current file.
		f, err := os.Open(filepath.Join(l.dir, l.name(cur)))
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
			if fi, err := os.Stat(filepath.Join(l.dir, l.name(cur))); err == nil && fi.Size() > pos {
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

func newDirWatcher(dir string) (*dirWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MODIFY|unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify watch %s: %w", dir, err)
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
