package supervisor

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The exec task's sandbox, on top of its namespaces and chroot: the
// DefaultCaps bounding set, no inheritable or ambient capabilities,
// no_new_privs and a seccomp filter. The filter is computed by the driver
// (containerd's default profile, compiled to classic BPF for this host's
// architecture) and handed over encoded (EncodeFilter): this package
// knows no syscall names.

// filterInsnSize is the encoded size of one BPF instruction: code
// (uint16), jt, jf (uint8), k (uint32), little-endian.
const filterInsnSize = 8

// EncodeFilter encodes a seccomp BPF program for Isolation.Seccomp and
// the --sandbox flag.
func EncodeFilter(prog []unix.SockFilter) []byte {
	b := make([]byte, 0, len(prog)*filterInsnSize)
	for _, in := range prog {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}

// DecodeFilter is EncodeFilter's inverse.
func DecodeFilter(b []byte) ([]unix.SockFilter, error) {
	if len(b) == 0 || len(b)%filterInsnSize != 0 || len(b)/filterInsnSize > 4096 {
		return nil, fmt.Errorf("seccomp filter: %d bytes is no program of whole instructions", len(b))
	}
	prog := make([]unix.SockFilter, len(b)/filterInsnSize)
	for i := range prog {
		in := b[i*filterInsnSize:]
		prog[i] = unix.SockFilter{Code: binary.LittleEndian.Uint16(in), Jt: in[2], Jf: in[3], K: binary.LittleEndian.Uint32(in[4:])}
	}
	return prog, nil
}

// clearInheritedCaps empties the calling thread's inheritable and
// ambient capability sets (an agent started with some must not pass
// them on to tasks); effective and permitted stay.
func clearInheritedCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err) // EINVAL: a kernel before 4.3 has none
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear inheritable capabilities: %w", err)
	}
	return nil
}

// installFilter sets no_new_privs and installs prog on the calling
// thread, or on every thread of the process with tsync (which also sets
// no_new_privs on them). Children forked from a filtered thread inherit
// the filter and no_new_privs; so does an exec.
func installFilter(prog []unix.SockFilter, tsync bool) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	var flags uintptr
	if tsync {
		flags = unix.SECCOMP_FILTER_FLAG_TSYNC
	}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("install seccomp filter: %w", errno)
	}
	if r != 0 { // tsync: the thread that could not be synchronised
		return fmt.Errorf("install seccomp filter: thread %d cannot be synchronised", r)
	}
	return nil
}

// restrictThread gives the calling thread (locked by the caller until the
// task is forked from it) the task's sandbox: bounding set, no
// inheritable or ambient capabilities, no_new_privs, and prog on all of
// the process's threads.
func restrictThread(prog []unix.SockFilter) error {
	if err := dropBoundingCaps(DefaultCaps); err != nil {
		return err
	}
	if err := clearInheritedCaps(); err != nil {
		return err
	}
	return installFilter(prog, true)
}

// lockDownInit is the namespace init's own sandbox once its task runs: on
// every thread the task's bounding set, and of its own capabilities only
// CAP_KILL (to forward signals to a task of another user); no_new_privs
// and the filter are already there (restrictThread's tsync). A cgo build
// cannot change all threads (ENOTSUP): there only the forking thread is.
func lockDownInit() error {
	keep := map[uintptr]bool{}
	for _, c := range DefaultCaps {
		keep[c] = true
	}
	for c := uintptr(0); c <= lastCap(); c++ {
		if keep[c] {
			continue
		}
		if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0); errno != 0 {
			if errno == syscall.ENOTSUP {
				return nil
			}
			return fmt.Errorf("drop capability %d on all threads: %w", c, errno)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{{Effective: 1 << unix.CAP_KILL, Permitted: 1 << unix.CAP_KILL}}
	_, _, errno := syscall.AllThreadsSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	if errno != 0 && errno != syscall.ENOTSUP {
		return fmt.Errorf("drop the init's capabilities: %w", errno)
	}
	return nil
}

// Files of `--sandbox`: its own binary (exec'd as /proc/self/fd/3
// inside the task's chroot), and the command's environment.
const (
	SandboxBinaryFD = 3
	SandboxEnvFD    = 4
)

// SandboxFlag: `--sandbox <uid>:<gid>[:<gid>,...] <filter> -- <command>
// [args...]` runs command with the exec task's sandbox: it is what
// ExecTask has util-linux nsenter run inside the task's namespaces and
// chroot (as root), so that a command exec'd into a task gets what the
// task got. filter is EncodeFilter's output in standard base64. The
// command's environment (NUL-separated KEY=VALUE, whose PATH finds the
// command) is read from fd SandboxEnvFD: the helpers before it (nsenter,
// a dynamically linked root process) run with a clean one, so that no
// LD_PRELOAD or the like of a job reaches them.
const SandboxFlag = "--sandbox"

// FormatSandboxArgs returns the arguments after SandboxFlag.
func FormatSandboxArgs(cred *syscall.Credential, filter []byte, command []string) []string {
	ids := fmt.Sprintf("%d:%d", cred.Uid, cred.Gid)
	if len(cred.Groups) > 0 {
		gs := make([]string, len(cred.Groups))
		for i, g := range cred.Groups {
			gs[i] = strconv.FormatUint(uint64(g), 10)
		}
		ids += ":" + strings.Join(gs, ",")
	}
	return append([]string{ids, base64.StdEncoding.EncodeToString(filter), "--"}, command...)
}

// parseSandboxArgs is FormatSandboxArgs' inverse.
func parseSandboxArgs(args []string) (*syscall.Credential, []unix.SockFilter, []string, error) {
	if len(args) < 4 || args[2] != "--" {
		return nil, nil, nil, errors.New("usage: --sandbox <uid>:<gid>[:<gids>] <filter> -- <command> [args...]")
	}
	parts := strings.Split(args[0], ":")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, nil, nil, fmt.Errorf("sandbox ids %q: want uid:gid[:gids]", args[0])
	}
	num := func(s string) (uint32, error) {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("sandbox ids %q: %w", args[0], err)
		}
		return uint32(n), nil
	}
	cred := &syscall.Credential{}
	var err error
	if cred.Uid, err = num(parts[0]); err != nil {
		return nil, nil, nil, err
	}
	if cred.Gid, err = num(parts[1]); err != nil {
		return nil, nil, nil, err
	}
	if len(parts) == 3 && parts[2] != "" {
		for _, g := range strings.Split(parts[2], ",") {
			n, err := num(g)
			if err != nil {
				return nil, nil, nil, err
			}
			cred.Groups = append(cred.Groups, n)
		}
	}
	raw, err := base64.StdEncoding.DecodeString(args[1])
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sandbox filter: %w", err)
	}
	prog, err := DecodeFilter(raw)
	if err != nil {
		return nil, nil, nil, err
	}
	return cred, prog, args[3:], nil
}

// sandboxAndExec implements SandboxFlag.
func sandboxAndExec(args []string) int {
	syscall.CloseOnExec(SandboxBinaryFD) // not for the command
	cred, prog, command, err := parseSandboxArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "executor:", err)
		return 2
	}
	envFile := os.NewFile(SandboxEnvFD, "env")
	b, err := io.ReadAll(envFile)
	envFile.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "executor: read the environment:", err)
		return 126
	}
	var env []string
	for _, kv := range strings.Split(string(b), "\x00") {
		if kv != "" {
			env = append(env, kv)
		}
	}
	if err := enterSandbox(cred, prog, command, env); err != nil {
		fmt.Fprintln(os.Stderr, "executor:", err)
		return 126
	}
	return 127 // not reached
}

func enterSandbox(cred *syscall.Credential, prog []unix.SockFilter, command, env []string) error {
	path, err := LookPath(command[0], env)
	if err != nil {
		return err
	}
	// The bounding set and the filter are per thread and exec keeps the
	// calling thread's: stay on one.
	runtime.LockOSThread()
	if err := dropBoundingCaps(DefaultCaps); err != nil {
		return err
	}
	if err := clearInheritedCaps(); err != nil {
		return err
	}
	if err := dropTo(cred); err != nil { // all threads; clears the capabilities of a non-root user
		return err
	}
	if err := installFilter(prog, false); err != nil {
		return err
	}
	err = syscall.Exec(path, command, env)
	return fmt.Errorf("exec %s: %w", path, err)
}

// lastCap is the highest capability the kernel knows.
func lastCap() uintptr {
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return uintptr(n)
		}
	}
	return uintptr(unix.CAP_LAST_CAP)
}
