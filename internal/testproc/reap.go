package testproc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// An agent's tasks outlive it by design: their supervisors run in
// sessions of their own so that a restarted agent reattaches to them.
// A test's agent is not restarted after the test, so its cleanup reaps
// what the agent started: Descendants before the agent is stopped (its
// children are reparented once it exits), then Reap.

// Proc is a process found in /proc; Start (clock ticks since boot) tells
// it from a later process that reuses its pid.
type Proc struct {
	Pid   int
	Start uint64
	Args  []string
}

// Descendants returns every process below pid now (not pid itself).
func Descendants(pid int) []Proc {
	if pid <= 0 {
		return nil
	}
	return below(scanProcs(), map[int]bool{pid: true})
}

// Reap kills (SIGKILL) the processes of known that still run, every task
// supervisor whose command line names a path under one of dirs (an
// agent's data dir: its supervisors' config files live there), and all
// their descendants; it waits (up to 10 s) until they are gone and
// returns the command lines it killed. The calling process and its
// ancestors are never killed.
func Reap(known []Proc, dirs ...string) []string {
	procs := scanProcs()
	self := ancestors(procs, os.Getpid())
	roots := map[int]bool{}
	for _, k := range known {
		if p, ok := procs[k.Pid]; ok && p.Start == k.Start {
			roots[k.Pid] = true
		}
	}
	for pid, p := range procs {
		if namesUnder(p.Args, dirs) {
			roots[pid] = true
		}
	}
	targets := below(procs, roots)
	for pid := range roots {
		targets = append(targets, procs[pid].Proc)
	}
	var killed []string
	var wait []Proc
	for _, t := range targets {
		if self[t.Pid] {
			continue
		}
		if syscall.Kill(t.Pid, syscall.SIGKILL) == nil {
			killed = append(killed, strings.Join(t.Args, " "))
			wait = append(wait, t)
		}
	}
	// A killed process has no signal to wait on here (its parent is
	// init, or another agent's test process): poll.
	_ = poll(10*time.Second, func() bool {
		for _, t := range wait {
			if alive(t) {
				return false
			}
		}
		return true
	}, nil)
	return killed
}

// namesUnder reports whether an argument is a path under one of dirs.
func namesUnder(args, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		d = filepath.Clean(d) + "/"
		for _, a := range args {
			if strings.HasPrefix(a, d) {
				return true
			}
		}
	}
	return false
}

type procEntry struct {
	Proc
	ppid   int
	zombie bool
}

// scanProcs reads every live (not zombie) process of /proc.
func scanProcs() map[int]procEntry {
	ents, _ := os.ReadDir("/proc")
	out := make(map[int]procEntry, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, ok := readProc(pid)
		if ok && !p.zombie {
			out[pid] = p
		}
	}
	return out
}

// readProc reads a process's parent, start time and command line.
func readProc(pid int) (procEntry, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parens
	if i < 0 {
		return procEntry{}, false
	}
	f := strings.Fields(s[i+1:]) // from field 3: state, ppid, ... starttime is field 22
	if len(f) < 20 {
		return procEntry{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
	return procEntry{Proc: Proc{Pid: pid, Start: start, Args: args}, ppid: ppid, zombie: f[0] == "Z"}, true
}

// below returns the descendants of roots in procs (not the roots).
func below(procs map[int]procEntry, roots map[int]bool) []Proc {
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var out []Proc
	seen := map[int]bool{}
	var walk func(int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			if !seen[c] && !roots[c] {
				seen[c] = true
				out = append(out, procs[c].Proc)
				walk(c)
			}
		}
	}
	for r := range roots {
		walk(r)
	}
	return out
}

// ancestors is pid and every process above it.
func ancestors(procs map[int]procEntry, pid int) map[int]bool {
	out := map[int]bool{}
	for pid > 1 && !out[pid] {
		out[pid] = true
		p, ok := procs[pid]
		if !ok {
			break
		}
		pid = p.ppid
	}
	return out
}

// alive reports whether p still runs (and is not a zombie).
func alive(p Proc) bool {
	e, ok := readProc(p.Pid)
	return ok && !e.zombie && e.Start == p.Start
}
