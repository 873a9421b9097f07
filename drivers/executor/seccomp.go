//go:generate go run gensysnum.go amd64
//go:generate go run gensysnum.go arm64

package executor

import (
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/containerd/containerd/contrib/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/drover/drover/drivers/executor/supervisor"
)

// capNames are the capabilities by number, as OCI specs name them.
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT",
	"CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL",
	"CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
}

// DefaultSeccompProfile is containerd's default seccomp profile for a
// process whose bounding set is DefaultCaps (the profile allows some
// syscalls only with a capability, e.g. chroot with CAP_SYS_CHROOT).
func DefaultSeccompProfile() *specs.LinuxSeccomp {
	caps := make([]string, len(DefaultCaps))
	for i, c := range DefaultCaps {
		caps[i] = capNames[c]
	}
	return seccomp.DefaultProfile(&specs.Spec{Process: &specs.Process{
		Capabilities: &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}}})
}

// taskFilter is the exec tasks' seccomp program (DefaultSeccompProfile
// for this host's architecture), encoded for the supervisor.
var taskFilter = sync.OnceValues(func() ([]byte, error) {
	prog, err := CompileSeccomp(DefaultSeccompProfile())
	if err != nil {
		return nil, err
	}
	return supervisor.EncodeFilter(prog), nil
})

// sysNums, in sysnum_linux_<arch>.go, is generated from x/sys: each
// `SYS_X = n` of unix/zsysnum_linux_<arch>.go is "x": unix.SYS_X, the
// kernel's name (a syscall x/sys does not list is denied; regenerate
// with x/sys updates). Every name of the default profile resolves as
// libseccomp resolves it on amd64 and arm64.

// Offsets in struct seccomp_data (little-endian hosts only: amd64, arm64).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// CompileSeccomp compiles an OCI seccomp profile into a classic BPF
// program for this host's native architecture, as libseccomp would for
// that one architecture: syscalls of another architecture (32-bit
// compat, x32) kill the process; names the host does not have are
// skipped. For each syscall the rules with argument conditions are
// tried in order (all conditions of a rule must hold), then its rule
// without conditions, then the default action.
func CompileSeccomp(p *specs.LinuxSeccomp) ([]unix.SockFilter, error) {
	if len(sysNums) == 0 {
		return nil, fmt.Errorf("seccomp: no syscall table for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	def, err := seccompRet(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, err
	}
	type rule struct {
		args []specs.LinuxSeccompArg
		ret  uint32
	}
	cond := map[uint32][]rule{}
	uncond := map[uint32]uint32{}
	for _, sc := range p.Syscalls {
		ret, err := seccompRet(sc.Action, sc.ErrnoRet)
		if err != nil {
			return nil, fmt.Errorf("seccomp rule %v: %w", sc.Names, err)
		}
		for _, a := range sc.Args {
			if a.Index > 5 {
				return nil, fmt.Errorf("seccomp rule %v: argument index %d", sc.Names, a.Index)
			}
		}
		for _, name := range sc.Names {
			nr, ok := sysNums[name]
			if !ok {
				continue // not a syscall of this architecture
			}
			if len(sc.Args) > 0 {
				cond[nr] = append(cond[nr], rule{sc.Args, ret})
			} else if _, seen := uncond[nr]; !seen {
				uncond[nr] = ret
			}
		}
	}
	// Syscalls allowed outright are checked as ranges of numbers; the
	// others get a block of their own.
	var allowed, blocks []uint32
	for nr, ret := range uncond {
		if ret == unix.SECCOMP_RET_ALLOW && !slices.ContainsFunc(cond[nr], func(r rule) bool { return r.ret != ret }) {
			allowed = append(allowed, nr)
		} else {
			blocks = append(blocks, nr)
		}
	}
	for nr := range cond {
		if _, ok := uncond[nr]; !ok {
			blocks = append(blocks, nr)
		}
	}
	slices.Sort(allowed)
	slices.Sort(blocks)

	a := &bpfAsm{}
	a.load(offArch)
	a.jump(unix.BPF_JEQ, auditArch, 1, 0)
	a.ret(unix.SECCOMP_RET_KILL_PROCESS)
	a.load(offNr)
	if x32Bit != 0 {
		a.jump(unix.BPF_JGE, x32Bit, 0, 1)
		a.ret(unix.SECCOMP_RET_KILL_PROCESS)
	}
	for i := 0; i < len(allowed); {
		lo, hi := allowed[i], allowed[i]
		for i++; i < len(allowed) && allowed[i] == hi+1; i++ {
			hi = allowed[i]
		}
		if lo == hi {
			a.jump(unix.BPF_JEQ, lo, 0, 1)
		} else {
			a.jump(unix.BPF_JGT, hi, 2, 0)
			a.jump(unix.BPF_JGE, lo, 0, 1)
		}
		a.ret(unix.SECCOMP_RET_ALLOW)
	}
	for _, nr := range blocks {
		next := a.newLabel()
		a.jumpTo(unix.BPF_JEQ, nr, -1, next)
		for _, r := range cond[nr] {
			fail := a.newLabel()
			for _, arg := range r.args {
				if err := a.cond(arg, fail); err != nil {
					return nil, err
				}
			}
			a.ret(r.ret)
			a.bind(fail)
		}
		if ret, ok := uncond[nr]; ok {
			a.ret(ret)
		} else {
			a.ret(def)
		}
		a.bind(next)
	}
	a.ret(def)
	return a.resolve()
}

// seccompRet is the filter's return value for an OCI action.
func seccompRet(act specs.LinuxSeccompAction, errno *uint) (uint32, error) {
	e := uint32(unix.EPERM)
	if errno != nil {
		e = uint32(*errno) & unix.SECCOMP_RET_DATA
	}
	switch act {
	case specs.ActAllow:
		return unix.SECCOMP_RET_ALLOW, nil
	case specs.ActErrno:
		return unix.SECCOMP_RET_ERRNO | e, nil
	case specs.ActKill, specs.ActKillThread:
		return unix.SECCOMP_RET_KILL_THREAD, nil
	case specs.ActKillProcess:
		return unix.SECCOMP_RET_KILL_PROCESS, nil
	case specs.ActTrap:
		return unix.SECCOMP_RET_TRAP, nil
	case specs.ActTrace:
		return unix.SECCOMP_RET_TRACE | e, nil
	case specs.ActLog:
		return unix.SECCOMP_RET_LOG, nil
	}
	return 0, fmt.Errorf("seccomp action %q is not supported", act)
}

// bpfAsm assembles a classic BPF program with forward jumps to labels.
type bpfAsm struct {
	prog   []unix.SockFilter
	labels []int // label -> instruction index (-1 until bound)
	fixups []bpfFixup
}

// bpfFixup: instruction at has jt/jf labels (-1: the offset is literal).
type bpfFixup struct{ at, jt, jf int }

func (a *bpfAsm) newLabel() int {
	a.labels = append(a.labels, -1)
	return len(a.labels) - 1
}

func (a *bpfAsm) bind(l int) { a.labels[l] = len(a.prog) }

// load loads the 32-bit word at off of seccomp_data into A.
func (a *bpfAsm) load(off uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (a *bpfAsm) and(k uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: k})
}

func (a *bpfAsm) ret(k uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k})
}

// jump is a conditional jump with literal offsets.
func (a *bpfAsm) jump(op uint16, k uint32, jt, jf uint8) {
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k, Jt: jt, Jf: jf})
}

// jumpTo is a conditional jump to labels; -1 falls through.
func (a *bpfAsm) jumpTo(op uint16, k uint32, jt, jf int) {
	a.fixups = append(a.fixups, bpfFixup{len(a.prog), jt, jf})
	a.jump(op, k, 0, 0)
}

// cond emits the test of one argument condition: it falls through when
// the condition holds and jumps to fail when not. Arguments are 64 bits
// wide: the high word decides unless it equals the operand's.
func (a *bpfAsm) cond(c specs.LinuxSeccompArg, fail int) error {
	lo, hi := offArgs+8*uint32(c.Index), offArgs+8*uint32(c.Index)+4
	vlo, vhi := uint32(c.Value), uint32(c.Value>>32)
	ok := a.newLabel()
	const next = -1
	switch c.Op {
	case specs.OpEqualTo:
		a.load(hi)
		a.jumpTo(unix.BPF_JEQ, vhi, next, fail)
		a.load(lo)
		a.jumpTo(unix.BPF_JEQ, vlo, ok, fail)
	case specs.OpNotEqual:
		a.load(hi)
		a.jumpTo(unix.BPF_JEQ, vhi, next, ok)
		a.load(lo)
		a.jumpTo(unix.BPF_JEQ, vlo, fail, ok)
	case specs.OpGreaterThan, specs.OpGreaterEqual:
		a.load(hi)
		a.jumpTo(unix.BPF_JGT, vhi, ok, next)
		a.jumpTo(unix.BPF_JEQ, vhi, next, fail)
		a.load(lo)
		op := uint16(unix.BPF_JGT)
		if c.Op == specs.OpGreaterEqual {
			op = unix.BPF_JGE
		}
		a.jumpTo(op, vlo, ok, fail)
	case specs.OpLessThan, specs.OpLessEqual:
		a.load(hi)
		a.jumpTo(unix.BPF_JGT, vhi, fail, next)
		a.jumpTo(unix.BPF_JEQ, vhi, next, ok)
		a.load(lo)
		op := uint16(unix.BPF_JGE) // arg < v fails when arg >= v
		if c.Op == specs.OpLessEqual {
			op = unix.BPF_JGT
		}
		a.jumpTo(op, vlo, fail, ok)
	case specs.OpMaskedEqual: // (arg & Value) == ValueTwo
		wlo, whi := uint32(c.ValueTwo), uint32(c.ValueTwo>>32)
		a.load(hi)
		a.and(vhi)
		a.jumpTo(unix.BPF_JEQ, whi, next, fail)
		a.load(lo)
		a.and(vlo)
		a.jumpTo(unix.BPF_JEQ, wlo, ok, fail)
	default:
		return fmt.Errorf("seccomp operator %q is not supported", c.Op)
	}
	a.bind(ok)
	return nil
}

// resolve turns the labels into jump offsets (at most 255 forward).
func (a *bpfAsm) resolve() ([]unix.SockFilter, error) {
	if len(a.prog) > 4096 {
		return nil, fmt.Errorf("seccomp program of %d instructions: the kernel takes 4096", len(a.prog))
	}
	off := func(at, l int) (uint8, error) {
		if l < 0 {
			return 0, nil
		}
		d := a.labels[l] - at - 1
		if a.labels[l] < 0 || d < 0 || d > 255 {
			return 0, fmt.Errorf("seccomp program: jump from %d to label %d out of reach", at, l)
		}
		return uint8(d), nil
	}
	for _, f := range a.fixups {
		var err error
		if a.prog[f.at].Jt, err = off(f.at, f.jt); err != nil {
			return nil, err
		}
		if a.prog[f.at].Jf, err = off(f.at, f.jf); err != nil {
			return nil, err
		}
	}
	return a.prog, nil
}
