package cli

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
	"testing"
)

// TestCLITLSCreate: tls ca create and tls cert create write a CA and
// role-bound certificates it signs (the key 0600), never overwrite them,
// and refuse a call naming no role or two.
func TestCLITLSCreate(t *testing.T) {
	t.Chdir(t.TempDir())
	if code, _, stderr := runCLI(t, "tls", "ca", "create"); code != 0 {
		t.Fatalf("tls ca create: exit %d %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "tls", "ca", "create"); code != ExitError || !strings.Contains(stderr, "exists") {
		t.Errorf("second tls ca create: exit %d %q, want 1: exists", code, stderr)
	}
	if code, _, stderr := runCLI(t, "tls", "cert", "create", "-server", "-region", "eu", "-additional-dnsname", "s1.example"); code != 0 {
		t.Fatalf("tls cert create -server: exit %d %s", code, stderr)
	}
	for _, args := range [][]string{{"tls", "cert", "create"}, {"tls", "cert", "create", "-server", "-cli"}} {
		if code, _, _ := runCLI(t, args...); code != ExitUsage {
			t.Errorf("drover %s: exit %d, want %d", strings.Join(args, " "), code, ExitUsage)
		}
	}
	caPEM, _ := os.ReadFile(caCertFile)
	certPEM, err := os.ReadFile("eu-server-drover.pem")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	b, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "server.eu.drover"}); err != nil {
		t.Errorf("the server certificate does not verify as server.eu.drover: %v", err)
	}
	if cert.VerifyHostname("s1.example") != nil || cert.VerifyHostname("127.0.0.1") != nil {
		t.Errorf("the server certificate lacks its extra names: %v %v", cert.DNSNames, cert.IPAddresses)
	}
	if fi, err := os.Stat("eu-server-drover-key.pem"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v, want mode 0600", fi, err)
	}
}
