package logging

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Defaults when Config leaves a limit zero (Nomad's task logs defaults).
const (
	DefaultMaxFiles      = 10
	DefaultMaxFileSizeMB = 10
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("log writer closed")

// Config of a Writer.
type Config struct {
	// Dir holds the files (the alloc's alloc/logs).
	Dir string
	// Prefix is "<task>.stdout" or "<task>.stderr"; files are Prefix.N.
	Prefix string
	// MaxFiles kept (oldest deleted); 0 = DefaultMaxFiles.
	MaxFiles int
	// MaxFileSizeMB rotates a file at this size; 0 = DefaultMaxFileSizeMB.
	MaxFileSizeMB int
	// MaxBytes overrides MaxFileSizeMB when > 0 (tests, small limits).
	MaxBytes int64
}

// Prefix returns the file prefix of a task's stream ("stdout" or "stderr").
func Prefix(task, stream string) string { return task + "." + stream }

// FileName is the name of file index idx of a task's stream.
func FileName(task, stream string, idx int) string {
	return Prefix(task, stream) + "." + strconv.Itoa(idx)
}

// Writer appends to rotated files. It implements io.WriteCloser.
type Writer struct {
	cfg      Config
	maxBytes int64

	mu     sync.Mutex
	f      *os.File
	idx    int
	size   int64
	closed bool
}

// Open creates Dir if needed and opens the newest existing file of the
// prefix for appending (or index 0), so a restarted supervisor continues
// where the previous one stopped.
func Open(cfg Config) (*Writer, error) {
	if cfg.Dir == "" || cfg.Prefix == "" {
		return nil, fmt.Errorf("open log writer: dir and prefix are required")
	}
	if strings.ContainsRune(cfg.Prefix, os.PathSeparator) {
		return nil, fmt.Errorf("open log writer: prefix %q contains a path separator", cfg.Prefix)
	}
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = DefaultMaxFiles
	}
	if cfg.MaxFileSizeMB <= 0 {
		cfg.MaxFileSizeMB = DefaultMaxFileSizeMB
	}
	w := &Writer{cfg: cfg, maxBytes: int64(cfg.MaxFileSizeMB) << 20}
	if cfg.MaxBytes > 0 {
		w.maxBytes = cfg.MaxBytes
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("open log writer: %w", err)
	}
	idx, err := Indexes(cfg.Dir, cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("open log writer: %w", err)
	}
	if len(idx) > 0 {
		w.idx = idx[len(idx)-1]
	}
	if err := w.openLocked(); err != nil {
		return nil, err
	}
	return w, nil
}

// Indexes lists the indexes of Dir/Prefix.N files, ascending.
func Indexes(dir, prefix string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []int
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix+".")
		if !ok || e.IsDir() {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 || strconv.Itoa(n) != rest {
			continue
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

func (w *Writer) path(idx int) string {
	return filepath.Join(w.cfg.Dir, w.cfg.Prefix+"."+strconv.Itoa(idx))
}

func (w *Writer) openLocked() error {
	f, err := os.OpenFile(w.path(w.idx), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat log file: %w", err)
	}
	w.f, w.size = f, st.Size()
	return nil
}

// Write appends p, rotating whenever the current file reaches the limit;
// a write larger than the room left is split across files.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	written := 0
	for len(p) > 0 {
		if w.size >= w.maxBytes {
			if err := w.rotateLocked(); err != nil {
				return written, err
			}
		}
		chunk := p
		if room := w.maxBytes - w.size; int64(len(chunk)) > room {
			chunk = chunk[:room]
		}
		n, err := w.f.Write(chunk)
		written += n
		w.size += int64(n)
		if err != nil {
			return written, fmt.Errorf("write log file: %w", err)
		}
		p = p[n:]
	}
	return written, nil
}

func (w *Writer) rotateLocked() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("rotate log file: %w", err)
	}
	w.idx++
	if err := w.openLocked(); err != nil {
		return err
	}
	// Delete files older than the MaxFiles newest.
	idx, err := Indexes(w.cfg.Dir, w.cfg.Prefix)
	if err != nil {
		return fmt.Errorf("rotate log file: %w", err)
	}
	for _, i := range idx {
		if i <= w.idx-w.cfg.MaxFiles {
			if err := os.Remove(w.path(i)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove old log file: %w", err)
			}
		}
	}
	return nil
}

// Close closes the current file; later writes fail with ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.f.Close()
}

// ReadAll concatenates a stream's files in index order (tests, `alloc logs`).
func ReadAll(dir, prefix string) ([]byte, error) {
	idx, err := Indexes(dir, prefix)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, i := range idx {
		b, err := os.ReadFile(filepath.Join(dir, prefix+"."+strconv.Itoa(i)))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}
