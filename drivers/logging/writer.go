package logging

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
	// dir is Dir, opened once without following a link; every file is
	// opened relative to it with O_NOFOLLOW (the task owns the directory
	// and may plant links in it).
	dir *os.File

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
	dir, err := os.OpenFile(cfg.Dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open log writer: log dir (links are not followed): %w", err)
	}
	w.dir = dir
	idx, err := w.indexes()
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("open log writer: %w", err)
	}
	if len(idx) > 0 {
		w.idx = idx[len(idx)-1]
	}
	if err := w.openLocked(); err != nil {
		dir.Close()
		return nil, err
	}
	return w, nil
}

// indexes is Indexes read through the dir fd.
func (w *Writer) indexes() ([]int, error) {
	fd, err := openat(int(w.dir.Fd()), ".", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("read log dir: %w", err)
	}
	d := os.NewFile(uintptr(fd), w.cfg.Dir)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read log dir: %w", err)
	}
	return parseIndexes(names, w.cfg.Prefix), nil
}

func parseIndexes(names []string, prefix string) []int {
	var out []int
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, prefix+".")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 || strconv.Itoa(n) != rest {
			continue
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

func openat(dirfd int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags, perm)
		if err != syscall.EINTR {
			return fd, err
		}
	}
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
	var names []string
	for _, e := range ents {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return parseIndexes(names, prefix), nil
}

func (w *Writer) name(idx int) string { return w.cfg.Prefix + "." + strconv.Itoa(idx) }

// openLocked opens file w.idx for appending, relative to the dir fd and
// never through a link: O_NOFOLLOW makes a planted symlink fail (ELOOP)
// and O_NONBLOCK a planted FIFO (ENXIO); those, and anything else that is
// not a regular file with one link, are unlinked and the file created
// afresh with O_EXCL. Nothing outside Dir is ever opened for writing.
func (w *Writer) openLocked() error {
	dirfd, name := int(w.dir.Fd()), w.name(w.idx)
	const flags = syscall.O_WRONLY | syscall.O_APPEND | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	fd, err := openat(dirfd, name, flags|syscall.O_CREAT, 0o644)
	if err == nil {
		if st, ok := regular(fd); ok {
			w.f, w.size = os.NewFile(uintptr(fd), filepath.Join(w.cfg.Dir, name)), st.Size
			return nil
		}
		syscall.Close(fd)
	} else if err != syscall.ELOOP && err != syscall.ENXIO {
		return fmt.Errorf("open log file %s: %w", name, err)
	}
	// Not a plain file of ours: replace it (a directory fails here).
	if err := syscall.Unlinkat(dirfd, name); err != nil {
		return fmt.Errorf("open log file %s: replace non-regular file: %w", name, err)
	}
	fd, err = openat(dirfd, name, flags|syscall.O_CREAT|syscall.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("open log file %s: %w", name, err)
	}
	if _, ok := regular(fd); !ok {
		syscall.Close(fd)
		return fmt.Errorf("open log file %s: not a regular file", name)
	}
	w.f, w.size = os.NewFile(uintptr(fd), filepath.Join(w.cfg.Dir, name)), 0
	return nil
}

// regular fstats fd: a regular file with a single link (a hard link to a
// file elsewhere is refused too).
func regular(fd int) (syscall.Stat_t, bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return st, false
	}
	return st, st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Nlink == 1
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
	idx, err := w.indexes()
	if err != nil {
		return fmt.Errorf("rotate log file: %w", err)
	}
	for _, i := range idx {
		if i <= w.idx-w.cfg.MaxFiles {
			// unlinkat never follows: a link is removed, not its target.
			if err := syscall.Unlinkat(int(w.dir.Fd()), w.name(i)); err != nil && err != syscall.ENOENT {
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
	w.dir.Close()
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
		b, err := readNoFollow(filepath.Join(dir, prefix+"."+strconv.Itoa(i)))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// readNoFollow reads a regular file; a link (or FIFO, device) is an error.
func readNoFollow(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, ok := regular(int(f.Fd())); !ok && st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("read %s: not a regular file", path)
	}
	return io.ReadAll(f)
}
