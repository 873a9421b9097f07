package allocrunner

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/drover/drover/agent/taskrunner"
	"github.com/drover/drover/api"
)

// GangHosts renders a gang's members in /etc/hosts format, one line per
// member by rank: "<address> <job>-<gangID>-<rank> <alloc name>". The
// first name is a valid host name (other characters become "-"); the
// alloc name (job.group[index]) is an alias.
func GangHosts(jobID string, g *api.AllocGang) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# drover gang %q of job %q: %d members (written by the client)\n", g.ID, jobID, g.Size)
	for _, m := range g.Members {
		addr := memberHost(m.Address)
		if addr == "" {
			continue
		}
		fmt.Fprintf(&b, "%s %s", addr, GangHostName(jobID, g.ID, m.Rank))
		if n := hostsToken(m.Name); n != "" {
			fmt.Fprintf(&b, " %s", n)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// GangHostName is a member's host name in the gang hosts file,
// "<job>-<gangID>-<rank>" with characters other than letters, digits,
// "-" and "." replaced by "-".
func GangHostName(jobID, gangID string, rank int) string {
	s := jobID + "-" + gangID + "-" + strconv.Itoa(rank)
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '-'
	}, s)
}

// GangHostfile renders an MPI hostfile: one line per node address, in the
// order of the node's lowest rank, "<address> slots=<members on it>".
func GangHostfile(g *api.AllocGang) []byte {
	var order []string
	slots := map[string]int{}
	for _, m := range g.Members {
		addr := memberHost(m.Address)
		if addr == "" {
			continue
		}
		if slots[addr] == 0 {
			order = append(order, addr)
		}
		slots[addr]++
	}
	var b bytes.Buffer
	for _, addr := range order {
		fmt.Fprintf(&b, "%s slots=%d\n", addr, slots[addr])
	}
	return b.Bytes()
}

// memberHost is a member address without a port, should one be given.
func memberHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return strings.TrimSpace(addr)
}

// hostsToken keeps a name to one hosts-file field (no blanks or comments).
func hostsToken(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '#' || r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			return '-'
		}
		return r
	}, s)
}

// WriteGangFiles writes alloc/gang/hosts (GangHosts) and alloc/gang/hostfile
// (GangHostfile) into the alloc dir. The shared alloc/ dir is writable by
// tasks, so nothing is followed: each directory is opened with O_NOFOLLOW
// beneath the one before (a link in the way is an error), and each file is
// written to a new temporary name and renamed over the old one, which
// replaces a planted link rather than writing through it. Nil g writes
// nothing.
func WriteGangFiles(allocDir, jobID string, g *api.AllocGang) error {
	if g == nil {
		return nil
	}
	root, err := unix.Open(allocDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("write gang files: open alloc dir: %w", err)
	}
	defer unix.Close(root)
	shared, err := openDirAt(root, "alloc", false)
	if err != nil {
		return fmt.Errorf("write gang files: %w", err)
	}
	defer unix.Close(shared)
	dir, err := openDirAt(shared, taskrunner.GangDir, true)
	if err != nil {
		return fmt.Errorf("write gang files: %w", err)
	}
	defer unix.Close(dir)
	for _, f := range []struct {
		name string
		data []byte
	}{{taskrunner.GangHostsFile, GangHosts(jobID, g)}, {taskrunner.GangHostfile, GangHostfile(g)}} {
		if err := replaceAt(dir, f.name, f.data); err != nil {
			return fmt.Errorf("write gang files: %w", err)
		}
	}
	return nil
}

// openDirAt opens the directory name beneath dirfd without following a
// link, creating it (0755) first when mkdir is set.
func openDirAt(dirfd int, name string, mkdir bool) (int, error) {
	if mkdir {
		if err := unix.Mkdirat(dirfd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, &os.PathError{Op: "mkdirat", Path: name, Err: err}
		}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return fd, nil
}

// replaceAt writes data (0644) to a fresh file beneath dirfd and renames
// it to name.
func replaceAt(dirfd int, name string, data []byte) error {
	tmp := "." + name + ".tmp"
	_ = unix.Unlinkat(dirfd, tmp, 0) // a leftover (or planted) temporary
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "openat", Path: tmp, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	werr := f.Chmod(0o644) // through the fd, past the umask
	if werr == nil {
		_, werr = f.Write(data)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("write %s: %w", tmp, werr)
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return &os.PathError{Op: "renameat", Path: name, Err: err}
	}
	return nil
}
