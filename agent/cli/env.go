package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Every connection setting the CLI reads from a flag falls back to the
// environment: drover's name first, then Nomad's, so a Nomad user's shell
// works as it is and DROVER_ wins where both are set.
var settingEnv = map[string][]string{
	"address":         {"DROVER_ADDR", "NOMAD_ADDR"},
	"namespace":       {"DROVER_NAMESPACE", "NOMAD_NAMESPACE"},
	"region":          {"DROVER_REGION", "NOMAD_REGION"},
	"token":           {"DROVER_TOKEN", "NOMAD_TOKEN"},
	"ca-cert":         {"DROVER_CACERT", "NOMAD_CACERT"},
	"client-cert":     {"DROVER_CLIENT_CERT", "NOMAD_CLIENT_CERT"},
	"client-key":      {"DROVER_CLIENT_KEY", "NOMAD_CLIENT_KEY"},
	"tls-server-name": {"DROVER_TLS_SERVER_NAME", "NOMAD_TLS_SERVER_NAME"},
	"tls-skip-verify": {"DROVER_SKIP_VERIFY", "NOMAD_SKIP_VERIFY"},
}

// setting is a connection flag's value: the flag when given, else the
// first of its environment variables that is set ("" when none is).
func setting(cmd *cobra.Command, flag string) string {
	if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
		return f.Value.String()
	}
	for _, e := range settingEnv[flag] {
		if v := os.Getenv(e); v != "" {
			return v
		}
	}
	if v, err := cmd.Flags().GetString(flag); err == nil {
		return v
	}
	return ""
}

// skipVerify is -tls-skip-verify, else $DROVER_SKIP_VERIFY or
// $NOMAD_SKIP_VERIFY (a boolean: 1, true, 0, false ...).
func skipVerify(cmd *cobra.Command) (bool, error) {
	v := setting(cmd, "tls-skip-verify")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("-tls-skip-verify (or $DROVER_SKIP_VERIFY, $NOMAD_SKIP_VERIFY) %q: want true or false", v)
	}
	return b, nil
}

// isTerminal reports whether in is a terminal a person can answer a
// prompt on.
func isTerminal(in io.Reader) bool {
	f, ok := in.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
