package supervisor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DefaultCaps is the capability bounding set of exec tasks (Docker's and
// Nomad's default allow-list): a task running as root cannot mount,
// load modules, trace other processes or leave its chroot.
var DefaultCaps = []uintptr{
	unix.CAP_AUDIT_WRITE, unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID,
	unix.CAP_KILL, unix.CAP_MKNOD, unix.CAP_NET_BIND_SERVICE, unix.CAP_SETFCAP, unix.CAP_SETGID,
	unix.CAP_SETPCAP, unix.CAP_SETUID, unix.CAP_SYS_CHROOT,
}

// DefaultCapMask is DefaultCaps as the bit mask /proc/<pid>/status shows.
func DefaultCapMask() uint64 {
	var m uint64
	for _, c := range DefaultCaps {
		m |= 1 << c
	}
	return m
}

// dropBoundingCaps removes every capability outside keep from the
// calling thread's bounding set; children forked from that thread (the
// task) inherit it.
func dropBoundingCaps(keep []uintptr) error {
	last := lastCap()
	allowed := map[uintptr]bool{}
	for _, c := range keep {
		allowed[c] = true
	}
	for c := uintptr(0); c <= last; c++ {
		if allowed[c] {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	return nil
}
