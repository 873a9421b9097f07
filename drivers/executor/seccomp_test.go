package executor

import (
	"math/rand"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/drover/drover/drivers/executor/supervisor"
)

// runBPF interprets a seccomp program (the instructions CompileSeccomp
// emits) on one syscall.
func runBPF(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	word := func(off uint32) uint32 {
		switch {
		case off == offNr:
			return nr
		case off == offArch:
			return arch
		case off >= offArgs && off < offArgs+48:
			a := args[(off-offArgs)/8]
			if (off-offArgs)%8 == 4 {
				return uint32(a >> 32)
			}
			return uint32(a)
		}
		t.Fatalf("load of offset %d", off)
		return 0
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = word(in.K)
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			var ok bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				ok = acc == in.K
			case unix.BPF_JGT:
				ok = acc > in.K
			default:
				ok = acc >= in.K
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		default:
			t.Fatalf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	t.Fatal("program ran off its end")
	return 0
}

func nrOf(t *testing.T, name string) uint32 {
	t.Helper()
	if nr, ok := sysNums[name]; ok {
		return nr
	}
	t.Fatalf("no syscall %q here", name)
	return 0
}

// TestDefaultFilter: the exec tasks' program decides as containerd's
// default profile does for DefaultCaps.
func TestDefaultFilter(t *testing.T) {
	if len(sysNums) == 0 {
		t.Skip("no syscall table for this architecture")
	}
	b, err := taskFilter()
	if err != nil {
		t.Fatal(err)
	}
	prog, err := supervisor.DecodeFilter(b)
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	for _, c := range []struct {
		name string
		args [6]uint64
		want uint32
	}{
		{"read", [6]uint64{}, allow},
		{"write", [6]uint64{}, allow},
		{"execve", [6]uint64{}, allow},
		{"exit_group", [6]uint64{}, allow},
		{"newfstatat", [6]uint64{}, allow},
		{"chroot", [6]uint64{}, allow}, // CAP_SYS_CHROOT is a default capability
		{"add_key", [6]uint64{}, eperm},
		{"keyctl", [6]uint64{}, eperm},
		{"mount", [6]uint64{}, eperm},
		{"unshare", [6]uint64{}, eperm},
		{"setns", [6]uint64{}, eperm},
		{"bpf", [6]uint64{}, eperm},
		{"socket", [6]uint64{unix.AF_INET}, allow},
		{"socket", [6]uint64{unix.AF_UNIX}, allow},
		{"socket", [6]uint64{unix.AF_NETLINK}, allow},
		{"socket", [6]uint64{unix.AF_ALG}, eperm},
		{"socket", [6]uint64{unix.AF_VSOCK}, eperm},
		{"clone", [6]uint64{uint64(unix.SIGCHLD) | unix.CLONE_VM | unix.CLONE_VFORK}, allow},
		{"clone", [6]uint64{uint64(unix.SIGCHLD) | unix.CLONE_NEWUSER}, eperm},
		{"clone", [6]uint64{unix.CLONE_NEWNET}, eperm},
		{"clone3", [6]uint64{}, unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{"personality", [6]uint64{0}, allow},
		{"personality", [6]uint64{0xffffffff}, allow},
		{"personality", [6]uint64{0x1234}, eperm},
	} {
		if got := runBPF(t, prog, auditArch, nrOf(t, c.name), c.args); got != c.want {
			t.Errorf("%s%v = %#x, want %#x", c.name, c.args[:1], got, c.want)
		}
	}
	if got := runBPF(t, prog, auditArch^1, nrOf(t, "read"), [6]uint64{}); got != unix.SECCOMP_RET_KILL_PROCESS {
		t.Errorf("read of another architecture = %#x, want kill", got)
	}
	if x32Bit != 0 {
		if got := runBPF(t, prog, auditArch, x32Bit|nrOf(t, "read"), [6]uint64{}); got != unix.SECCOMP_RET_KILL_PROCESS {
			t.Errorf("x32 read = %#x, want kill", got)
		}
	}
}

// refDecide is CompileSeccomp's documented semantics, evaluated directly.
func refDecide(t *testing.T, p *specs.LinuxSeccomp, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	holds := func(c specs.LinuxSeccompArg) bool {
		a := args[c.Index]
		switch c.Op {
		case specs.OpEqualTo:
			return a == c.Value
		case specs.OpNotEqual:
			return a != c.Value
		case specs.OpLessThan:
			return a < c.Value
		case specs.OpLessEqual:
			return a <= c.Value
		case specs.OpGreaterThan:
			return a > c.Value
		case specs.OpGreaterEqual:
			return a >= c.Value
		case specs.OpMaskedEqual:
			return a&c.Value == c.ValueTwo
		}
		t.Fatalf("op %q", c.Op)
		return false
	}
	named := func(sc specs.LinuxSyscall) bool {
		return slices.ContainsFunc(sc.Names, func(n string) bool {
			x, ok := sysNums[n]
			return ok && x == nr
		})
	}
	ret := func(act specs.LinuxSeccompAction, e *uint) uint32 {
		r, err := seccompRet(act, e)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, sc := range p.Syscalls {
		if len(sc.Args) > 0 && named(sc) && !slices.ContainsFunc(sc.Args, func(c specs.LinuxSeccompArg) bool { return !holds(c) }) {
			return ret(sc.Action, sc.ErrnoRet)
		}
	}
	for _, sc := range p.Syscalls {
		if len(sc.Args) == 0 && named(sc) {
			return ret(sc.Action, sc.ErrnoRet)
		}
	}
	return ret(p.DefaultAction, p.DefaultErrnoRet)
}

// TestCompileMatchesProfile holds the program to refDecide on every
// syscall of the table, for the default profile and a profile with every
// operator on 64-bit operands (alone, and with a second condition), with
// arguments at and around the operands of the syscall's rules.
func TestCompileMatchesProfile(t *testing.T) {
	if len(sysNums) == 0 {
		t.Skip("no syscall table for this architecture")
	}
	r := rand.New(rand.NewSource(1))
	errno := uint(unix.EACCES)
	ops := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
		{Names: []string{"read", "write"}, Action: specs.ActAllow},
		{Names: []string{"write"}, Action: specs.ActErrno, ErrnoRet: &errno, Args: []specs.LinuxSeccompArg{{Index: 2, Value: 1 << 40, Op: specs.OpGreaterThan}}},
		{Names: []string{"mount"}, Action: specs.ActKillThread},
		{Names: []string{"no_such_syscall"}, Action: specs.ActAllow},
	}}
	single := []string{"ioctl", "fcntl", "lseek", "pread64", "pwrite64", "readv", "writev"}
	double := []string{"dup3", "flock", "fsync", "fdatasync", "truncate", "ftruncate", "getdents64"}
	for i, op := range []specs.LinuxSeccompOperator{specs.OpEqualTo, specs.OpNotEqual, specs.OpLessThan, specs.OpLessEqual,
		specs.OpGreaterThan, specs.OpGreaterEqual, specs.OpMaskedEqual} {
		v := r.Uint64() >> (r.Intn(2) * 16) // both words matter
		cond := specs.LinuxSeccompArg{Index: uint(i % 6), Value: v, ValueTwo: v &^ 0xffff, Op: op}
		ops.Syscalls = append(ops.Syscalls,
			specs.LinuxSyscall{Names: []string{single[i]}, Action: specs.ActErrno, ErrnoRet: ptr(uint(i + 1)),
				Args: []specs.LinuxSeccompArg{cond}},
			specs.LinuxSyscall{Names: []string{double[i]}, Action: specs.ActErrno, ErrnoRet: ptr(uint(i + 10)),
				Args: []specs.LinuxSeccompArg{{Index: 5, Value: 7, Op: specs.OpEqualTo}, cond}},
			specs.LinuxSyscall{Names: []string{double[i]}, Action: specs.ActAllow})
	}
	for pi, p := range []*specs.LinuxSeccomp{DefaultSeccompProfile(), ops} {
		prog, err := CompileSeccomp(p)
		if err != nil {
			t.Fatal(err)
		}
		for name, nr := range sysNums {
			candidates := []uint64{0, 1, 7, 1 << 32, 1<<32 | 7, ^uint64(0)}
			for _, sc := range p.Syscalls {
				if !slices.Contains(sc.Names, name) {
					continue
				}
				for _, a := range sc.Args {
					for _, v := range []uint64{a.Value, a.ValueTwo} {
						candidates = append(candidates, v, v-1, v+1, v^1<<32, v&0xffffffff, v|0xffff,
							v&^0xffffffff|uint64(r.Uint32()), uint64(r.Uint32())<<32|v&0xffffffff)
					}
				}
			}
			for range 100 {
				var args [6]uint64
				for i := range args {
					args[i] = candidates[r.Intn(len(candidates))]
				}
				got, want := runBPF(t, prog, auditArch, nr, args), refDecide(t, p, nr, args)
				if got != want {
					t.Fatalf("profile %d: %s%v = %#x, want %#x", pi, name, args, got, want)
				}
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestCapNames: the names handed to the profile are the capabilities'.
func TestCapNames(t *testing.T) {
	for c, want := range map[uintptr]string{unix.CAP_CHOWN: "CAP_CHOWN", unix.CAP_SYS_CHROOT: "CAP_SYS_CHROOT",
		unix.CAP_SYS_ADMIN: "CAP_SYS_ADMIN", unix.CAP_AUDIT_WRITE: "CAP_AUDIT_WRITE", unix.CAP_SETFCAP: "CAP_SETFCAP",
		unix.CAP_CHECKPOINT_RESTORE: "CAP_CHECKPOINT_RESTORE"} {
		if capNames[c] != want {
			t.Errorf("capNames[%d] = %q, want %q", c, capNames[c], want)
		}
	}
	if got, want := len(capNames), unix.CAP_LAST_CAP+1; got != want {
		t.Errorf("%d capability names, want %d", got, want)
	}
	if p := DefaultSeccompProfile(); !slices.ContainsFunc(p.Syscalls, func(s specs.LinuxSyscall) bool {
		return slices.Contains(s.Names, "chroot")
	}) {
		t.Error("default profile without chroot: CAP_SYS_CHROOT not passed on")
	}
}
