package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover/drover/drivers/logging"
)

// startPipeFD is the fd on which the driver hears that the task started.
const startPipeFD = 3

// statusPipeFD is the fd on which the namespace init reports the task's
// wait status to the supervisor.
const statusPipeFD = 3

// supervise runs the task described by the config file to completion and
// records its Result.
func supervise(cfgPath string) error {
	// The supervisor ends only with its task. The signals are caught, not
	// ignored: an ignored signal would stay ignored in the task.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	syscall.CloseOnExec(startPipeFD)
	startPipe := os.NewFile(startPipeFD, "start")
	report := func(s Started) {
		if startPipe == nil {
			return
		}
		_, _ = startPipe.Write(append(s.AppendJSON(nil), '\n'))
		startPipe.Close()
		startPipe = nil
	}
	cfg, err := readConfig(cfgPath)
	if err != nil {
		report(Started{Err: err.Error()})
		return err
	}
	res, err := run(cfg, cfgPath, report)
	if err != nil {
		report(Started{Err: err.Error()})
		res = &Result{ExitCode: -1, Err: err.Error()}
	}
	res.FinishedAt = time.Now().UnixNano()
	if werr := WriteFileAtomic(cfg.ExitFile, res.AppendJSON(nil)); werr != nil {
		return errors.Join(err, fmt.Errorf("write exit status: %w", werr))
	}
	return err
}

// run starts the task, reports its PID, copies its output and waits.
func run(cfg *Config, cfgPath string, report func(Started)) (*Result, error) {
	stdout, err := logging.Open(logging.Config{Dir: cfg.LogDir, Prefix: logging.Prefix(cfg.TaskName, "stdout"),
		MaxFiles: cfg.LogMaxFiles, MaxFileSizeMB: cfg.LogMaxFileSizeMB})
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	stderr, err := logging.Open(logging.Config{Dir: cfg.LogDir, Prefix: logging.Prefix(cfg.TaskName, "stderr"),
		MaxFiles: cfg.LogMaxFiles, MaxFileSizeMB: cfg.LogMaxFileSizeMB})
	if err != nil {
		return nil, err
	}
	defer stderr.Close()

	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	var copiers sync.WaitGroup
	copiers.Add(2)
	go func() { defer copiers.Done(); copyOut(stdout, outR) }()
	go func() { defer copiers.Done(); copyOut(stderr, errR) }()
	// Whatever happens, the copiers end: the write ends are closed below
	// once the task is gone and the read ends after a grace period.
	defer func() {
		outW.Close()
		errW.Close()
		done := make(chan struct{})
		go func() { copiers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second): // a leftover child holds the pipe
			outR.Close()
			errR.Close()
			<-done
		}
	}()

	cmd, statusR, err := buildCmd(cfg, cfgPath)
	if err != nil {
		return nil, err
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, outW, errW

	var cg *taskCgroup
	if cfg.Cgroup != nil {
		if cg, err = createCgroup(cfg.Cgroup); err != nil {
			return nil, err
		}
	}
	if err := startInCgroup(cmd, cg); err != nil {
		if statusR != nil {
			statusR.Close()
		}
		return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	var dec *bufio.Reader
	if statusR != nil {
		defer statusR.Close()
		// The init says once the chroot is built and the task started.
		dec = bufio.NewReaderSize(statusR, 512)
		first, err := readInitReport(dec)
		if err != nil || !first.Started {
			_ = cmd.Wait()
			if first.Err == "" {
				first.Err = fmt.Sprintf("namespace init exited before starting the task (%v)", err)
			}
			return nil, errors.New(first.Err)
		}
	}
	report(Started{TaskPID: cmd.Process.Pid})
	// From here on the supervisor only copies and waits.
	lowGC()

	var initStatus *initReport
	if dec != nil {
		// The init reports the task's status just before it exits.
		if r, err := readInitReport(dec); err == nil {
			initStatus = &r
		}
	}
	werr := cmd.Wait()
	res := &Result{}
	switch {
	case initStatus != nil && initStatus.Err != "":
		res.ExitCode, res.Err = -1, initStatus.Err
	case initStatus != nil:
		res.ExitCode, res.Signal = initStatus.ExitCode, initStatus.Signal
	default:
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case !ok:
			return nil, fmt.Errorf("wait: %w", werr)
		case ws.Signaled():
			res.ExitCode, res.Signal = 128+int(ws.Signal()), int(ws.Signal())
		default:
			res.ExitCode = ws.ExitStatus()
		}
	}
	if cfg.Isolation == nil {
		// The task's process group goes with it (orphans would hold the log pipes).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if cg != nil {
		res.OOMKilled = OOMKilled(cg.name)
		_ = KillCgroup(cg.name, time.Now().Add(2*time.Second))
	}
	return res, nil
}

// copyOut copies a task stream into its log until EOF.
func copyOut(w io.Writer, r *os.File) {
	buf := make([]byte, 16<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// buildCmd builds the task command: the task itself (raw), or the
// namespace init that sets up the chroot and starts it (isolated). For
// the init it also returns the read end of its status pipe.
func buildCmd(cfg *Config, cfgPath string) (*exec.Cmd, *os.File, error) {
	if cfg.Isolation == nil {
		path, err := LookPath(cfg.Command, cfg.Env)
		if err != nil {
			return nil, nil, err
		}
		cmd := exec.Command(path, cfg.Args...)
		cmd.Args[0] = cfg.Command
		cmd.Env = cfg.Env
		cmd.Dir = cfg.Cwd
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if cfg.User != "" {
			cred, err := LookupUser(cfg.User)
			if err != nil {
				return nil, nil, err
			}
			cmd.SysProcAttr.Credential = cred
		}
		return cmd, nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find executor binary: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(exe, append(slices.Clip(self), initFlag, cfgPath)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	flags := uintptr(syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS)
	if !cfg.Isolation.SharePID {
		flags |= syscall.CLONE_NEWPID
	}
	if !cfg.Isolation.ShareIPC {
		flags |= syscall.CLONE_NEWIPC
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags, Setpgid: true, Pdeathsig: 0}
	cmd.ExtraFiles = []*os.File{statusW}
	return cmd, statusR, nil
}

// startInCgroup starts cmd so that it is born inside cg: on v2 with
// clone3(CLONE_INTO_CGROUP); on v1 by joining the cgroup around the fork.
func startInCgroup(cmd *exec.Cmd, cg *taskCgroup) error {
	if cg == nil {
		return cmd.Start()
	}
	if cg.v2 {
		dir, err := cg.openDir()
		if err != nil {
			return err
		}
		defer dir.Close()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(dir.Fd())
		return cmd.Start()
	}
	if err := cg.join(); err != nil {
		return fmt.Errorf("join cgroup: %w", err)
	}
	err := cmd.Start()
	if lerr := cg.leave(); lerr != nil && err == nil {
		err = fmt.Errorf("leave cgroup: %w", lerr)
	}
	return err
}

// LookPath resolves cmd against the PATH in env (or the default PATH).
func LookPath(cmd string, env []string) (string, error) {
	if strings.Contains(cmd, "/") {
		return cmd, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, cmd)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q: %w", cmd, exec.ErrNotFound)
}
