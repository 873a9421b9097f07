package executor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procStat holds the /proc/<pid>/stat fields drover uses.
type procStat struct {
	ppid, pgrp   int
	utime, stime uint64 // clock ticks
	start        uint64 // clock ticks since boot
	rssPages     uint64
}

// readProcStat parses /proc/<pid>/stat.
func readProcStat(pid int) (*procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	// Fields after "(comm)": state(3) ppid(4) pgrp(5) ... utime(14) stime(15) ... starttime(22) vsize(23) rss(24).
	f := strings.Fields(s[i+1:])
	if len(f) < 22 {
		return nil, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	n := func(k int) uint64 { v, _ := strconv.ParseUint(f[k-3], 10, 64); return v }
	return &procStat{ppid: int(n(4)), pgrp: int(n(5)), utime: n(14), stime: n(15), start: n(22), rssPages: n(24)}, nil
}

// StartTime is a process's start time in clock ticks since boot; with the
// PID it identifies a process across PID reuse.
func StartTime(pid int) (uint64, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	return st.start, nil
}

// sameProcess reports whether pid still runs and started at start. A
// zombie counts as gone.
func sameProcess(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := readProcStat(pid)
	if err != nil {
		return false
	}
	if st.start != start {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// groupUsage sums RSS bytes and CPU ticks of the processes in process
// group pgrp (raw_exec without a cgroup).
func groupUsage(pgrp int) (rss uint64, ticks uint64, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, err
	}
	page := uint64(os.Getpagesize())
	found := false
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.pgrp != pgrp {
			continue
		}
		found = true
		rss += st.rssPages * page
		ticks += st.utime + st.stime
	}
	if !found {
		return 0, 0, errors.New("no process left")
	}
	return rss, ticks, nil
}

// Memory returns a process's resident set (VmRSS) and its private
// anonymous part (RssAnon) in bytes. File pages of the drover binary are
// shared by all supervisors, so RssAnon is what one more costs.
func Memory(pid int) (rss, anon uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	kb := func(v string) uint64 {
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0
		}
		n, _ := strconv.ParseUint(f[0], 10, 64)
		return n << 10
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = kb(v)
		} else if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			anon = kb(v)
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("no VmRSS for pid %d", pid)
	}
	return rss, anon, nil
}
