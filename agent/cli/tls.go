package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/drover/drover/agent/tlsutil"
)

func init() {
	tlsCmd := &cobra.Command{Use: "tls", Short: "Create a CA and role-bound certificates for mutual TLS"}
	ca := &cobra.Command{Use: "ca", Short: "Manage the agents' CA"}
	ca.AddCommand(newTLSCACreateCmd())
	cert := &cobra.Command{Use: "cert", Short: "Manage agent and CLI certificates"}
	cert.AddCommand(newTLSCertCreateCmd())
	tlsCmd.AddCommand(ca, cert)
	rootCmd.AddCommand(tlsCmd)
}

const caCertFile, caKeyFile = "drover-agent-ca.pem", "drover-agent-ca-key.pem"

func newTLSCACreateCmd() *cobra.Command {
	var days int
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a CA: " + caCertFile + " and " + caKeyFile + " in the current directory",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if days < 1 {
				return usageErr("-days must be at least 1")
			}
			c, k, err := tlsutil.CreateCA(days)
			if err != nil {
				return cmdErr("create CA: %w", err)
			}
			return writePair(cmd, caCertFile, c, caKeyFile, k)
		},
	}
	cmd.Flags().IntVar(&days, "days", 1825, "days the CA is valid")
	return cmd
}

func newTLSCertCreateCmd() *cobra.Command {
	var server, client, cliRole bool
	var caFile, keyFile, region string
	var days int
	var dnsNames []string
	var ips []net.IP
	cmd := &cobra.Command{
		Use:   "create -server|-client|-cli",
		Short: "Create a certificate for a role: <region>-<role>-drover.pem and its -key.pem",
		Long: `Create a certificate signed by the CA for one role. Agents check the role
name it carries (server.<region>.drover, client.<region>.drover) with
verify_server_hostname; cli certificates may call the API but never serve it.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var role string
			n := 0
			for r, on := range map[string]bool{tlsutil.RoleServer: server, tlsutil.RoleClient: client, tlsutil.RoleCLI: cliRole} {
				if on {
					role, n = r, n+1
				}
			}
			if n != 1 {
				return usageErr("give exactly one of -server, -client or -cli")
			}
			if days < 1 {
				return usageErr("-days must be at least 1")
			}
			caPEM, err := os.ReadFile(caFile)
			if err != nil {
				return cmdErr("read the CA: %w (drover tls ca create makes one)", err)
			}
			caKey, err := os.ReadFile(keyFile)
			if err != nil {
				return cmdErr("read the CA key: %w", err)
			}
			c, k, err := tlsutil.CreateCert(caPEM, caKey, tlsutil.CertRequest{Role: role, Region: region, Days: days, DNSNames: dnsNames, IPs: ips})
			if err != nil {
				return cmdErr("create certificate: %w", err)
			}
			base := fmt.Sprintf("%s-%s-%s", region, role, tlsutil.Domain)
			return writePair(cmd, base+".pem", c, base+"-key.pem", k)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&server, "server", false, "a server agent's certificate")
	fl.BoolVar(&client, "client", false, "a client agent's certificate")
	fl.BoolVar(&cliRole, "cli", false, "a CLI user's certificate")
	fl.StringVar(&caFile, "ca", caCertFile, "the CA certificate")
	fl.StringVar(&keyFile, "key", caKeyFile, "the CA key")
	fl.StringVar(&region, "region", "global", "the region the role name carries")
	fl.IntVar(&days, "days", 365, "days the certificate is valid")
	fl.StringArrayVar(&dnsNames, "additional-dnsname", nil, "another DNS name of the agent (repeatable)")
	fl.IPSliceVar(&ips, "additional-ipaddress", nil, "another IP address of the agent (repeatable)")
	return cmd
}

// writePair writes a certificate (0644) and its key (0600), refusing to
// overwrite either.
func writePair(cmd *cobra.Command, certName string, cert []byte, keyName string, key []byte) error {
	for _, f := range []struct {
		name string
		b    []byte
		mode fs.FileMode
	}{{certName, cert, 0o644}, {keyName, key, 0o600}} {
		fh, err := os.OpenFile(f.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if errors.Is(err, fs.ErrExist) {
			return cmdErr("%s exists: not overwriting it", f.name)
		}
		if err != nil {
			return cmdErr("%v", err)
		}
		_, err = fh.Write(f.b)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return cmdErr("write %s: %v", f.name, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "==> wrote %s\n", f.name)
	}
	return nil
}

// cliTLS is the CLI's TLS from -ca-cert, -client-cert, -client-key,
// -tls-server-name and -tls-skip-verify (default $DROVER_CACERT ..., then
// the NOMAD_ names: env.go); nil when none is given.
func cliTLS(cmd *cobra.Command) (*tls.Config, error) {
	ca := setting(cmd, "ca-cert")
	cert := setting(cmd, "client-cert")
	key := setting(cmd, "client-key")
	serverName := setting(cmd, "tls-server-name")
	skip, err := skipVerify(cmd)
	if err != nil {
		return nil, err
	}
	if ca == "" && cert == "" && key == "" && serverName == "" && !skip {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName, InsecureSkipVerify: skip}
	if ca != "" {
		b, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("-ca-cert: %w", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("-ca-cert %s: no PEM certificate", ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("-client-cert and -client-key go together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("-client-cert/-client-key: %w", err)
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return t, nil
}

// failingTransport answers every request with the error that kept the
// CLI's TLS from loading.
type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }
