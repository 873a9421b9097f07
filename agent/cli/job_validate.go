package cli

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/drover/drover/jobspec"
	"github.com/spf13/cobra"
)

func init() {
	jobCmd.AddCommand(newJobValidateCmd())
}

func newJobValidateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate [flags] FILE...",
		Short: "Check job files locally, printing every problem as file:line:col: message",
		Long: `Parse and validate job files without contacting a server.

Exit status: 0 when every file is valid, 1 when a file has problems (each is
printed to stderr as file:line:col: message), 2 on usage errors such as no
file, a file that does not exist or a malformed -var.`,
		Args: cobra.MinimumNArgs(1),
	}
	vars, varFiles := addVarFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		code := ExitOK
		for _, path := range args {
			c := validateFile(cmd, path, *vars, *varFiles)
			code = max(code, c)
		}
		if code != ExitOK {
			return failed(code)
		}
		return nil
	}
	return cmd
}

// validateFile checks one file and returns its exit code.
func validateFile(cmd *cobra.Command, path string, vars, varFiles []string) int {
	stderr := cmd.ErrOrStderr()
	_, err := loadJob(path, vars, varFiles, "", stderr)
	var diags jobspec.Diagnostics
	var ee *exitError
	switch {
	case err == nil:
		fmt.Fprintf(cmd.OutOrStdout(), "%s: Job validation successful\n", path)
		return ExitOK
	case errors.As(err, &diags):
		fmt.Fprintln(stderr, diags.Error())
		return ExitError
	case errors.As(err, &ee):
		fmt.Fprintln(stderr, "Error:", ee.err)
		return ee.code
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(stderr, "Error: %s: no such file\n", path)
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "Error: %s: %v\n", path, err)
		return ExitError
	}
}
