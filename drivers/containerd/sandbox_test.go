package containerd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
)

// defaultCapMask is DefaultCaps as /proc/<pid>/status shows it.
func defaultCapMask(t *testing.T) string {
	t.Helper()
	bits := map[string]uint{
		"CAP_AUDIT_WRITE": unix.CAP_AUDIT_WRITE, "CAP_CHOWN": unix.CAP_CHOWN, "CAP_DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE,
		"CAP_FOWNER": unix.CAP_FOWNER, "CAP_FSETID": unix.CAP_FSETID, "CAP_KILL": unix.CAP_KILL, "CAP_MKNOD": unix.CAP_MKNOD,
		"CAP_NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE, "CAP_SETFCAP": unix.CAP_SETFCAP, "CAP_SETGID": unix.CAP_SETGID,
		"CAP_SETPCAP": unix.CAP_SETPCAP, "CAP_SETUID": unix.CAP_SETUID, "CAP_SYS_CHROOT": unix.CAP_SYS_CHROOT,
	}
	var m uint64
	for _, c := range DefaultCaps {
		b, ok := bits[c]
		if !ok {
			t.Fatalf("no bit for %s", c)
		}
		m |= 1 << b
	}
	return fmt.Sprintf("%016x", m)
}

const sandboxScript = `grep -E '^(NoNewPrivs|Seccomp|Cap[A-Za-z]+):' /proc/self/status
/probe/probe add_key net
/probe/suid-probe euid
cat /proc/self/mountinfo
cat /secrets/nomad_token; echo
`

// sandboxTask runs sandboxScript with the probe mounted and an identity
// token written as the client does (root, 0600, in a 0700 dir).
func sandboxTask(t *testing.T) *drivers.TaskConfig {
	t.Helper()
	cfg := shTask(t, sandboxScript)
	cfg.Mounts = []*drivers.MountSpec{{HostPath: drivertest.SandboxProbe(t), TaskPath: "/probe", Readonly: true}}
	secrets := filepath.Join(cfg.TaskDir, "secrets")
	if err := os.Chmod(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secrets, "nomad_token"), []byte("tok-ctr"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestSandboxDefaults: a container runs with no_new_privs, containerd's
// default seccomp profile (add_key denied), the default capability set
// (and, for a user other than root, no effective, permitted, inheritable
// or ambient capabilities), nosuid and nodev on the mounts drover adds,
// can do network I/O and read its identity token, which no other user
// of the host can.
func TestSandboxDefaults(t *testing.T) {
	mask := defaultCapMask(t)
	zero := "0000000000000000"
	for _, tc := range []struct {
		user string
		uid  uint32
		caps string // effective and permitted
	}{
		{"", 0, mask}, // the image's user: root
		{"nobody", 65534, zero},
	} {
		t.Run("user="+tc.user, func(t *testing.T) {
			t.Parallel()
			d := newDriver(t, nil)
			cfg := sandboxTask(t)
			cfg.User = tc.user
			startTask(t, d, cfg)
			res := waitExit(t, d, cfg.ID, 60*time.Second)
			out := readLog(t, cfg, "stdout")
			if !res.Successful() {
				t.Fatalf("exit %+v, stdout %q, stderr %q", res, out, readLog(t, cfg, "stderr"))
			}
			st := drivertest.StatusFields(out)
			for k, v := range map[string]string{"NoNewPrivs": "1", "Seccomp": "2", "CapBnd": mask,
				"CapEff": tc.caps, "CapPrm": tc.caps, "CapInh": zero, "CapAmb": zero} {
				if st[k] != v {
					t.Errorf("/proc/self/status %s = %q, want %q", k, st[k], v)
				}
			}
			for _, w := range []string{"add_key=EPERM\n", "net=ok\n", fmt.Sprintf("euid=%d\n", tc.uid), "tok-ctr\n"} {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q", w)
				}
			}
			mounts := drivertest.MountOptions(out)
			for _, p := range []string{"/alloc", "/local", "/secrets", "/probe"} {
				if opts, ok := mounts[p]; !ok || !slices.Contains(opts, "nosuid") || !slices.Contains(opts, "nodev") {
					t.Errorf("mount %s options %v, want nosuid and nodev", p, opts)
				}
			}
			for p, mode := range map[string]os.FileMode{"secrets": os.ModeDir | 0o700, "secrets/nomad_token": 0o600} {
				fi, err := os.Lstat(filepath.Join(cfg.TaskDir, p))
				if err != nil {
					t.Fatal(err)
				}
				if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != tc.uid || fi.Mode() != mode {
					t.Errorf("%s: uid %d mode %v, want %d and %v", p, uid, fi.Mode(), tc.uid, mode)
				}
			}
			cat := exec.Command("cat", filepath.Join(cfg.TaskDir, "secrets", "nomad_token"))
			cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1, Gid: 1}}
			if b, err := cat.CombinedOutput(); err == nil || strings.Contains(string(b), "tok-") {
				t.Errorf("uid 1 reads the token: %q, %v", b, err)
			}
			if t.Failed() {
				t.Logf("stdout:\n%s", out)
			}
		})
	}
}
