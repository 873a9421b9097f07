package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// normalizeArgs lets drover, like Nomad, accept single-dash long flags
// (-var, -address, -detach): each "-name" or "-name=value" that names a
// multi-letter flag of the command being invoked (or one it inherits)
// becomes "--name". Shorthands, values, positional arguments, anything
// that is not a known flag and everything after "--" are left alone, as
// is everything after the first positional argument of a command
// annotated with flagsEndAtFirstArg (alloc exec ALLOC CMD ARGS...).
func normalizeArgs(root *cobra.Command, args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	cmd := root
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if sub := subcommand(cmd, a); sub != nil {
				cmd = sub
			} else if cmd.Annotations[flagsEndAtFirstArg] == "true" {
				break // what follows is not ours (alloc exec's remote command)
			}
			continue
		}
		double := strings.HasPrefix(a, "--")
		name := strings.TrimLeft(a, "-")
		name, _, hasValue := strings.Cut(name, "=")
		if len(name) < 2 {
			continue // a shorthand such as -h, or a negative number
		}
		f := lookupFlag(cmd, name)
		if f == nil {
			continue
		}
		if !double {
			out[i] = "-" + a
		}
		if !hasValue && f.NoOptDefVal == "" {
			i++ // the next argument is this flag's value
		}
	}
	return out
}

func subcommand(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f
	}
	if f := cmd.PersistentFlags().Lookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().Lookup(name)
}

// flagsEndAtFirstArg annotates a command whose flags stop at its first
// positional argument (it calls Flags().SetInterspersed(false)).
const flagsEndAtFirstArg = "drover.flags-end-at-first-arg"
