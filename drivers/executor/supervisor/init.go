package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// initReport is what the namespace init tells the supervisor: first
// {"started":true} (or an error), then the task's exit.
type initReport struct {
	Started  bool   `json:"started,omitempty"`
	ExitCode int    `json:"exit_code"`
	Signal   int    `json:"signal"`
	Err      string `json:"error,omitempty"`
}

// forwarded are the signals the init passes on to the task's process group.
var forwarded = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGCONT, syscall.SIGTSTP, syscall.SIGWINCH}

// runInit is PID 1 of an exec task: it builds the chroot inside its own
// mount namespace, starts the task, forwards signals, reaps orphans and
// reports the task's exit on fd 3.
func runInit(cfgPath string) int {
	syscall.CloseOnExec(statusPipeFD)
	status := os.NewFile(statusPipeFD, "status")
	send := func(r initReport) { _, _ = status.Write(append(r.appendJSON(nil), '\n')) }
	fail := func(err error) int {
		send(initReport{Err: err.Error()})
		return 1
	}
	// Forwarding is set up first so no signal is lost or kills PID 1.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	cfg, err := readConfig(cfgPath)
	if err != nil {
		return fail(err)
	}
	iso := cfg.Isolation
	if iso == nil {
		return fail(errors.New("init without isolation settings"))
	}
	prog, err := DecodeFilter(iso.Seccomp)
	if err != nil { // never a task without its filter
		return fail(err)
	}
	var cred *syscall.Credential
	if cfg.User != "" {
		if cred, err = LookupUser(cfg.User); err != nil {
			return fail(err)
		}
	}
	var netns *os.File
	if iso.NetNS != "" {
		// Opened on the host, before the chroot; joined on the thread
		// that forks the task.
		if netns, err = os.Open(iso.NetNS); err != nil {
			return fail(fmt.Errorf("network namespace: %w", err))
		}
		defer netns.Close()
	}
	root := filepath.Join(cfg.StateDir, "rootfs")
	if err := buildRoot(root, cfg); err != nil {
		return fail(fmt.Errorf("build chroot: %w", err))
	}
	if err := syscall.Chroot(root); err != nil {
		return fail(fmt.Errorf("chroot: %w", err))
	}
	cwd := cfg.Cwd
	if cwd == "" {
		cwd = "/"
	}
	if err := os.Chdir(cwd); err != nil {
		return fail(fmt.Errorf("chdir %s: %w", cwd, err))
	}
	if iso.Hostname != "" {
		_ = syscall.Sethostname([]byte(iso.Hostname))
	}
	// After the mounts and chroot: the task keeps only the default set.
	// The network namespace and the bounding set are per thread and a
	// child inherits them from the thread that forks it: stay on this
	// thread from here to cmd.Start.
	runtime.LockOSThread()
	if netns != nil {
		if err := unix.Setns(int(netns.Fd()), unix.CLONE_NEWNET); err != nil {
			return fail(fmt.Errorf("join network namespace: %w", err))
		}
	}
	// No privileges gained through setuid binaries or file capabilities
	// either (no_new_privs), and only the syscalls of the filter.
	if err := restrictThread(prog); err != nil {
		return fail(err)
	}
	path, err := LookPath(cfg.Command, cfg.Env)
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(path, cfg.Args...)
	cmd.Args[0] = cfg.Command
	cmd.Env = cfg.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("start %s: %w", cfg.Command, err))
	}
	pid := cmd.Process.Pid
	// The init itself is what the driver reports as the task's PID: it
	// keeps no more than the task.
	if err := lockDownInit(); err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return fail(err)
	}
	send(initReport{Started: true})
	lowGC()
	// The task gets the forwarded signals; PID 1 keeps none.
	go func() {
		for s := range sigs {
			_ = syscall.Kill(-pid, s.(syscall.Signal))
		}
	}()
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("wait: %w", err))
		}
		if wpid != pid {
			continue // an orphan reaped
		}
		r := initReport{ExitCode: ws.ExitStatus()}
		if ws.Signaled() {
			r.Signal, r.ExitCode = int(ws.Signal()), 128+int(ws.Signal())
		}
		send(r)
		return 0
	}
}

// hostDirs are bind-mounted read-only (or re-created as symlinks when
// they are symlinks on the host, as on merged-/usr systems).
var hostDirs = []string{"/bin", "/lib", "/lib32", "/lib64", "/libx32", "/sbin", "/usr"}

// etcFiles are the parts of /etc a task sees (read-only).
var etcFiles = []string{"passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "localtime",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl", "ca-certificates", "alternatives", "os-release", "timezone"}

func buildRoot(root string, cfg *Config) error {
	iso := cfg.Isolation
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755,size=1m"); err != nil {
		return fmt.Errorf("mount root tmpfs: %w", err)
	}
	for _, d := range hostDirs {
		st, err := os.Lstat(d)
		if err != nil {
			continue
		}
		if st.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(d)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, filepath.Join(root, d)); err != nil {
				return err
			}
			continue
		}
		if err := bind(d, filepath.Join(root, d), roAttrs); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		return err
	}
	for _, f := range etcFiles {
		src := filepath.Join("/etc", f)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := bind(src, filepath.Join(root, "etc", f), roAttrs); err != nil {
			return err
		}
	}
	rw := []Mount{
		{HostPath: filepath.Join(iso.AllocDir, "alloc"), TaskPath: "/alloc"},
		{HostPath: filepath.Join(iso.TaskDir, "local"), TaskPath: "/local"},
		{HostPath: filepath.Join(iso.TaskDir, "secrets"), TaskPath: "/secrets"},
		{HostPath: filepath.Join(iso.TaskDir, "tmp"), TaskPath: "/tmp"},
	}
	for _, m := range append(rw, iso.Mounts...) {
		if _, err := os.Stat(m.HostPath); err != nil {
			if m.TaskPath == "/tmp" || m.TaskPath == "/secrets" || m.TaskPath == "/local" || m.TaskPath == "/alloc" {
				if err := os.MkdirAll(filepath.Join(root, m.TaskPath), 0o1777); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("mount %s: %w", m.HostPath, err)
		}
		attrs := rwAttrs
		if m.Readonly {
			attrs = roAttrs
		}
		if err := bind(m.HostPath, filepath.Join(root, m.TaskPath), attrs); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", filepath.Join(root, "proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	if err := buildDev(filepath.Join(root, "dev"), iso.Devices); err != nil {
		return err
	}
	if cfg.Cgroup != nil {
		// The task reads its own limits at /sys/fs/cgroup[/memory].
		if CgroupsV2() {
			if err := bind(CgroupDir(cfg.Cgroup.Name, ""), filepath.Join(root, "sys/fs/cgroup"), roAttrs|unix.MOUNT_ATTR_NOEXEC); err != nil {
				return err
			}
		} else {
			for _, c := range []string{"memory", "cpu", "cpuacct", "pids", "cpuset"} {
				if err := bind(CgroupDir(cfg.Cgroup.Name, c), filepath.Join(root, "sys/fs/cgroup", c), roAttrs|unix.MOUNT_ATTR_NOEXEC); err != nil {
					return err
				}
			}
		}
	}
	// The root itself becomes read-only; binds keep their own modes.
	return unix.Mount("", root, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "mode=755,size=1m")
}

var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

func buildDev(dev string, devices []Device) error {
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=755,size=64k"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, n := range devNodes {
		if err := bind("/dev/"+n, filepath.Join(dev, n), devAttrs); err != nil {
			return err
		}
	}
	for _, d := range devices {
		tp := d.TaskPath
		if tp == "" {
			tp = d.HostPath
		}
		rel, ok := strings.CutPrefix(filepath.Clean(tp), "/dev/")
		if !ok {
			return fmt.Errorf("device %s: task path must be under /dev", tp)
		}
		if err := bind(d.HostPath, filepath.Join(dev, rel), devAttrs); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dev, "shm"), 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("shm", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=64m"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return nil
}

// Mount attributes of the chroot's bind mounts: no setuid binary and no
// device node of the host counts inside a task, on any of them (and on
// their submounts); device nodes are bound one by one, without nodev.
const (
	rwAttrs  uint64 = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	roAttrs         = rwAttrs | unix.MOUNT_ATTR_RDONLY
	devAttrs uint64 = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC
)

// bind bind-mounts src (recursively) at dst, creating dst as a dir or
// file, and sets attrs (MOUNT_ATTR_*) on it and its submounts.
func bind(src, dst string, attrs uint64) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	if st.IsDir() {
		err = os.MkdirAll(dst, 0o755)
	} else {
		if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
			var f *os.File
			if f, err = os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				f.Close()
			}
		}
	}
	if err != nil {
		return fmt.Errorf("bind %s: mount point: %w", dst, err)
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", src, dst, err)
	}
	err = unix.MountSetattr(unix.AT_FDCWD, dst, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attrs})
	if errors.Is(err, unix.ENOSYS) {
		// Before Linux 5.12: a remount sets the flags on the top mount only.
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT)
		for _, f := range []struct{ attr, flag uint64 }{{unix.MOUNT_ATTR_RDONLY, unix.MS_RDONLY},
			{unix.MOUNT_ATTR_NOSUID, unix.MS_NOSUID}, {unix.MOUNT_ATTR_NODEV, unix.MS_NODEV}, {unix.MOUNT_ATTR_NOEXEC, unix.MS_NOEXEC}} {
			if attrs&f.attr != 0 {
				flags |= uintptr(f.flag)
			}
		}
		err = unix.Mount("", dst, "", flags, "")
	}
	if err != nil {
		return fmt.Errorf("set mount attributes of %s: %w", dst, err)
	}
	return nil
}
