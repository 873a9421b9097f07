package testimage

import (
	"fmt"
	"io"
	"strings"
)

// Mode bits of a newc cpio entry (the file type is in the mode, as in stat).
const (
	cpioDir     = 0o040000
	cpioFile    = 0o100000
	cpioSymlink = 0o120000
	cpioCharDev = 0o020000
)

// cpioWriter writes a "newc" (SVR4, no CRC) cpio archive, the format the
// Linux kernel unpacks as an initramfs.
type cpioWriter struct {
	w      io.Writer
	ino    uint32
	err    error
	closed bool
}

func newCpioWriter(w io.Writer) *cpioWriter { return &cpioWriter{w: w, ino: 1} }

// cpioEntry is one archive member.
type cpioEntry struct {
	Name  string
	Mode  uint32 // type and permission bits
	Data  []byte // file content or symlink target
	Major uint32 // device numbers of a device node
	Minor uint32
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	_, c.err = c.w.Write(b)
}

func (c *cpioWriter) pad(n int) {
	if r := n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// Add writes one entry. Names are stored without a leading slash.
func (c *cpioWriter) Add(e cpioEntry) error {
	if c.closed {
		return fmt.Errorf("cpio: write after close")
	}
	name := strings.TrimPrefix(e.Name, "/")
	if name == "" {
		return fmt.Errorf("cpio: empty name")
	}
	return c.add(name, e)
}

func (c *cpioWriter) add(name string, e cpioEntry) error {
	nlink := 1
	if e.Mode&0o170000 == cpioDir {
		nlink = 2
	}
	ino := c.ino
	c.ino++
	if name == "TRAILER!!!" {
		ino = 0
		nlink = 1
	}
	// 070701, then 13 eight-digit hex fields: ino mode uid gid nlink
	// mtime filesize devmajor devminor rdevmajor rdevminor namesize check.
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, e.Mode, 0, 0, nlink, uint32(epoch.Unix()), len(e.Data), 0, 0, e.Major, e.Minor, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write(append([]byte(name), 0))
	c.pad(len(hdr) + len(name) + 1)
	c.write(e.Data)
	c.pad(len(e.Data))
	return c.err
}

// Close writes the trailer; the underlying writer stays open.
func (c *cpioWriter) Close() error {
	if c.closed {
		return c.err
	}
	err := c.add("TRAILER!!!", cpioEntry{})
	c.closed = true
	return err
}
