package cli

import (
	"strings"
	"testing"
)

// TestSettingsFromNomadEnv: a Nomad user's NOMAD_* variables configure
// the CLI like their DROVER_* counterparts; DROVER_ wins where both are
// set and a flag wins over both.
func TestSettingsFromNomadEnv(t *testing.T) {
	nomad := map[string]string{
		"NOMAD_ADDR": "http://nomad:4646", "NOMAD_NAMESPACE": "nomad-ns", "NOMAD_REGION": "nomad-region",
		"NOMAD_TOKEN": "nomad-token", "NOMAD_TLS_SERVER_NAME": "server.nomad", "NOMAD_SKIP_VERIFY": "true",
	}
	drover := map[string]string{
		"DROVER_ADDR": "http://drover:4646", "DROVER_NAMESPACE": "drover-ns", "DROVER_REGION": "drover-region",
		"DROVER_TOKEN": "drover-token", "DROVER_TLS_SERVER_NAME": "server.drover", "DROVER_SKIP_VERIFY": "false",
	}
	type want struct{ addr, ns, region, token, serverName string }
	for _, tc := range []struct {
		name string
		env  []map[string]string
		args []string
		want want
		skip bool
	}{
		{"nomad only", []map[string]string{nomad}, nil,
			want{"http://nomad:4646", "nomad-ns", "nomad-region", "nomad-token", "server.nomad"}, true},
		{"drover wins", []map[string]string{nomad, drover}, nil,
			want{"http://drover:4646", "drover-ns", "drover-region", "drover-token", "server.drover"}, false},
		{"flags win", []map[string]string{nomad, drover},
			[]string{"--address", "http://flag:1", "--namespace", "flag-ns", "--region", "flag-region", "--token", "flag-token", "--tls-server-name", "server.flag", "--tls-skip-verify=false"},
			want{"http://flag:1", "flag-ns", "flag-region", "flag-token", "server.flag"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, env := range tc.env {
				for k, v := range env {
					t.Setenv(k, v)
				}
			}
			root := newRoot()
			if err := root.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			c := apiClient(root)
			got := want{c.Address, c.Namespace, c.Region, c.Token, ""}
			tlsCfg, err := cliTLS(root)
			if err != nil || tlsCfg == nil {
				t.Fatalf("TLS config = %v, %v; want one from the server name", tlsCfg, err)
			}
			got.serverName = tlsCfg.ServerName
			if got != tc.want {
				t.Errorf("settings = %+v, want %+v", got, tc.want)
			}
			if tlsCfg.InsecureSkipVerify != tc.skip {
				t.Errorf("InsecureSkipVerify = %v, want %v", tlsCfg.InsecureSkipVerify, tc.skip)
			}
		})
	}
	t.Run("bad skip verify", func(t *testing.T) {
		t.Setenv("NOMAD_SKIP_VERIFY", "maybe")
		if _, err := cliTLS(newRoot()); err == nil || !strings.Contains(err.Error(), "NOMAD_SKIP_VERIFY") {
			t.Errorf("NOMAD_SKIP_VERIFY=maybe: err = %v, want one naming the variable", err)
		}
	})
}

// TestNomadAddrAndRegionAgainstAgent: NOMAD_ADDR alone reaches the agent;
// a region the agent does not serve is refused with a message naming
// both, instead of acting on this region.
func TestNomadAddrAndRegionAgainstAgent(t *testing.T) {
	addr := startAPI(t)
	t.Setenv("NOMAD_ADDR", addr)
	if code, out, stderr := runCLI(t, "server", "members"); code != ExitOK || !strings.Contains(out, "cli-test") {
		t.Fatalf("server members with NOMAD_ADDR: exit %d, out %q, stderr %q", code, out, stderr)
	}
	t.Setenv("NOMAD_REGION", "global")
	if code, _, stderr := runCLI(t, "server", "members"); code != ExitOK {
		t.Fatalf("NOMAD_REGION=global (the agent's): exit %d, stderr %q", code, stderr)
	}
	t.Setenv("NOMAD_REGION", "eu-west")
	code, _, stderr := runCLI(t, "server", "members")
	if code != ExitError || !strings.Contains(stderr, `serves region "global", not "eu-west"`) {
		t.Errorf("NOMAD_REGION=eu-west: exit %d, stderr %q, want 1 naming both regions", code, stderr)
	}
}

// TestNodeDrainNeedsYesWithoutTerminal: without -yes and with no
// terminal to answer on, node drain -enable refuses (exit 1, saying to
// add -yes) instead of printing "Canceling drain".
func TestNodeDrainNeedsYesWithoutTerminal(t *testing.T) {
	rootCmd.SetIn(strings.NewReader("y\n")) // a pipe, not a person
	defer rootCmd.SetIn(nil)
	code, out, stderr := runCLI(t, "node", "drain", "-enable", "-address", "http://127.0.0.1:1", "n1")
	if code != ExitError || !strings.Contains(stderr, "add -yes") || strings.Contains(out, "Canceling") {
		t.Errorf("node drain -enable without -yes: exit %d, out %q, stderr %q; want 1 asking for -yes", code, out, stderr)
	}
}
