package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drover/drover/api"
)

// Files in an alloc dir are written by the task, which may plant symlinks
// (or swap them in between two requests) to make the agent read host files.
// Every fs/log path is therefore opened beneath a directory fd without
// following any link: openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
// RESOLVE_NO_MAGICLINKS, or, where the kernel lacks openat2 (ENOSYS), a
// component-by-component openat walk with O_NOFOLLOW. Reads and stats then
// go through the fd, never the path again.

// maxNameLen is the longest path component Linux accepts.
const maxNameLen = 255

// openat2Missing is set once openat2 returned ENOSYS.
var openat2Missing atomic.Bool

// cleanRel validates a user path and returns it relative to the alloc dir:
// NUL bytes, ".." components and components over 255 bytes are refused
// (400); a leading "/" means the alloc dir root.
func cleanRel(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", badRequest("path contains a NUL byte")
	}
	var parts []string
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		switch {
		case part == "..":
			return "", fmt.Errorf("path %q: %w", p, badRequest("path escapes the allocation directory"))
		case len(part) > maxNameLen:
			return "", fmt.Errorf("path %.64q...: %w", p, badRequest(fmt.Sprintf("path component is %d bytes, the limit is %d", len(part), maxNameLen)))
		case part == "" || part == ".":
		default:
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return ".", nil
	}
	return strings.Join(parts, "/"), nil
}

// openBeneath opens name (relative, already cleaned) beneath the directory
// fd dirfd without following any symlink; flags are open(2) flags
// (O_CLOEXEC and O_NOFOLLOW are added).
func openBeneath(dirfd int, name string, flags int) (*os.File, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	if !openat2Missing.Load() {
		how := &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		for {
			fd, err := unix.Openat2(dirfd, name, how)
			if err == unix.EINTR || err == unix.EAGAIN {
				continue
			}
			if err == nil {
				return os.NewFile(uintptr(fd), name), nil
			}
			if err != unix.ENOSYS {
				return nil, &os.PathError{Op: "openat2", Path: name, Err: err}
			}
			openat2Missing.Store(true)
			break
		}
	}
	return openWalk(dirfd, name, flags)
}

// openWalk is openBeneath without openat2: each directory component is
// opened with O_NOFOLLOW|O_DIRECTORY from the previous one.
func openWalk(dirfd int, name string, flags int) (*os.File, error) {
	parts := strings.Split(name, "/")
	cur := dirfd
	defer func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}()
	for i, part := range parts {
		if part == ".." {
			return nil, &os.PathError{Op: "openat", Path: name, Err: unix.EXDEV}
		}
		last := i == len(parts)-1
		fl := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if last {
			fl = flags
		}
		fd, err := openatRetry(cur, part, fl)
		if err != nil {
			return nil, &os.PathError{Op: "openat", Path: name, Err: err}
		}
		if cur != dirfd {
			unix.Close(cur)
		}
		cur = fd
		if last {
			f := os.NewFile(uintptr(fd), name)
			cur = dirfd // now owned by f
			return f, nil
		}
	}
	return nil, &os.PathError{Op: "openat", Path: name, Err: unix.ENOENT}
}

func openatRetry(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openInAlloc opens a user path inside the alloc dir without following
// links; the name is the cleaned path within it. flags are open(2) flags
// (O_RDONLY, O_PATH, O_DIRECTORY).
func openInAlloc(allocDir, p string, flags int) (*os.File, string, error) {
	name, err := cleanRel(p)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenFile(allocDir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, name, fmt.Errorf("allocation directory: %w", api.Errorf(api.ErrNotFound, "allocation directory does not exist yet"))
		}
		return nil, name, fmt.Errorf("open alloc dir: %w", err)
	}
	defer root.Close()
	f, err := openBeneath(int(root.Fd()), name, flags)
	if err != nil {
		return nil, name, classifyOpen(name, err)
	}
	return f, name, nil
}

// classifyOpen turns an openBeneath error into an API error: a link or an
// escape is 403, a missing file 404, an over-long name 400.
func classifyOpen(name string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return fmt.Errorf("path %q: %w", name, api.Errorf(api.ErrPermissionDenied, "path is or goes through a symbolic link; links in the allocation directory are not followed"))
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("path %q: %w", name, api.Errorf(api.ErrNotFound, "no such file or directory"))
	case errors.Is(err, unix.ENOTDIR):
		// Also what O_DIRECTORY|O_NOFOLLOW gives for a link to a dir.
		return fmt.Errorf("path %q: %w", name, badRequest("a path component is not a directory"))
	case errors.Is(err, unix.ENAMETOOLONG):
		return fmt.Errorf("path %q: %w", name, badRequest("path is too long"))
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("path %q: %w", name, api.Errorf(api.ErrPermissionDenied, "permission denied"))
	}
	return fmt.Errorf("path %q: %w", name, err)
}

// statInfo is an AllocFileInfo from a stat result (the entry itself, never
// a link's target).
func statInfo(name string, st *unix.Stat_t) *api.AllocFileInfo {
	mode := os.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= os.ModeDir
	case unix.S_IFLNK:
		mode |= os.ModeSymlink
	case unix.S_IFIFO:
		mode |= os.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= os.ModeSocket
	case unix.S_IFCHR:
		mode |= os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		mode |= os.ModeDevice
	}
	if st.Mode&unix.S_ISUID != 0 {
		mode |= os.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		mode |= os.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		mode |= os.ModeSticky
	}
	return &api.AllocFileInfo{Name: name, IsDir: mode.IsDir(), Size: st.Size, FileMode: mode.String(),
		ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec)}
}

// fstatInfo stats an open fd.
func fstatInfo(f *os.File, name string) (*api.AllocFileInfo, *unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, nil, fmt.Errorf("stat %q: %w", name, err)
	}
	return statInfo(filepath.Base(name), &st), &st, nil
}
