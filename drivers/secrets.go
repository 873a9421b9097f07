package drivers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// OwnSecrets hands a task's secrets dir (TaskDir/secrets) to the user the
// task runs as, so that it can read its workload identity and other
// secrets while no other user can: the dir becomes uid:gid, mode 0700.
// While the dir still belongs to root (the task never ran), what the
// client wrote into it before the start (identity tokens, templates)
// becomes uid:gid too, without following links; once the dir is the
// task's, its contents are left alone (the task could have planted links
// there), and the client gives new files the dir's owner.
func OwnSecrets(dir string, uid, gid int) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("secrets dir: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok {
		return fmt.Errorf("secrets dir %s: not a directory", dir)
	}
	if sys.Uid == 0 && uid != 0 {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		})
		if err != nil {
			return fmt.Errorf("secrets dir: %w", err)
		}
	}
	if err := errors.Join(os.Lchown(dir, uid, gid), os.Chmod(dir, 0o700)); err != nil {
		return fmt.Errorf("secrets dir: %w", err)
	}
	return nil
}
