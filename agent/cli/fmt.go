package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover/drover/jobspec"
)

func init() { rootCmd.AddCommand(newFmtCmd()) }

// newFmtCmd is `drover fmt [PATH...]`, as `nomad fmt`: it rewrites HCL job
// and variable files (*.hcl, *.nomad; directories recursively, "-" for
// standard input) in canonical layout and lists the files it changed.
func newFmtCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fmt [flags] [PATH...]",
		Short: "Rewrite HCL job files in canonical layout (exit 1 with -check when one is not)",
	}
	check := cmd.Flags().Bool("check", false, "only check: exit 1 when a file is not formatted")
	write := cmd.Flags().Bool("write", true, "write the result to the file (false with -check or -)")
	list := cmd.Flags().Bool("list", true, "list the files whose layout changed")
	recursive := cmd.Flags().Bool("recursive", true, "descend into directories")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			args = []string{"."}
		}
		out := cmd.OutOrStdout()
		if len(args) == 1 && args[0] == "-" {
			src, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxStdinJob))
			if err != nil {
				return cmdErr("fmt: read standard input: %w", err)
			}
			got, err := jobspec.Format("<stdin>", src)
			if err != nil {
				return cmdErr("%w", err)
			}
			if *check && !bytes.Equal(got, src) {
				return failed(ExitError)
			}
			_, err = out.Write(got)
			return err
		}
		files, err := fmtFiles(args, *recursive)
		if err != nil {
			return cmdErr("fmt: %w", err)
		}
		unformatted := false
		var errs []error
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			got, err := jobspec.Format(f, src)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if bytes.Equal(got, src) {
				continue
			}
			unformatted = true
			if *list {
				fmt.Fprintln(out, f)
			}
			if *write && !*check {
				if err := writeInPlace(f, got); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if len(errs) > 0 {
			return cmdErr("%w", errors.Join(errs...))
		}
		if *check && unformatted {
			return failed(ExitError)
		}
		return nil
	}
	return cmd
}

// fmtFiles expands paths: files as given, directories to their *.hcl and
// *.nomad files (recursively unless told not to; symlinks not followed).
func fmtFiles(paths []string, recursive bool) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && (!recursive || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && (strings.HasSuffix(path, ".hcl") || strings.HasSuffix(path, ".nomad")) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// writeInPlace replaces f's contents through a temp file and a rename,
// keeping its mode.
func writeInPlace(f string, data []byte) error {
	st, err := os.Stat(f)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f), "."+filepath.Base(f)+".fmt-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f)
}
