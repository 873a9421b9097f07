package tlsutil

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// pki writes a CA and a certificate per role into dir and returns the
// agent Config of each role.
func pki(t *testing.T, dir string, verifyHost bool) map[string]*Config {
	t.Helper()
	caCert, caKey, err := CreateCA(1)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := write("ca.pem", caCert)
	out := map[string]*Config{}
	for _, role := range []string{RoleServer, RoleClient, RoleCLI} {
		c, k, err := CreateCert(caCert, caKey, CertRequest{Role: role, Days: 1})
		if err != nil {
			t.Fatal(err)
		}
		out[role] = &Config{HTTP: true, CAFile: ca, CertFile: write(role+".pem", c), KeyFile: write(role+"-key.pem", k),
			VerifyServerHostname: verifyHost, VerifyHTTPSClient: true}
	}
	return out
}

// TestMutualTLS: an API served with the server certificate answers a
// caller presenting a certificate of the same CA, and refuses one without
// a certificate or with another CA's; with verify_server_hostname a
// caller accepts only a peer holding an agent role name, not a CLI
// certificate (which cannot serve at all), whatever address it dials.
func TestMutualTLS(t *testing.T) {
	certs := pki(t, t.TempDir(), true)
	other := pki(t, t.TempDir(), true)
	serve := func(c *Config) *httptest.Server {
		st, err := c.Server()
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
		ts.TLS = st
		ts.StartTLS()
		t.Cleanup(ts.Close)
		return ts
	}
	get := func(ts *httptest.Server, caller *tls.Config) error {
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: caller}}).Get(ts.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	clientTLS := func(c *Config) *tls.Config {
		ct, err := c.Client()
		if err != nil {
			t.Fatal(err)
		}
		return ct
	}
	srv := serve(certs[RoleServer])
	for _, role := range []string{RoleClient, RoleServer, RoleCLI} {
		if err := get(srv, clientTLS(certs[role])); err != nil {
			t.Errorf("%s certificate calling the server: %v", role, err)
		}
	}
	noCert := clientTLS(certs[RoleClient]).Clone()
	noCert.Certificates = nil
	if get(srv, noCert) == nil {
		t.Error("a caller without a certificate was served")
	}
	if get(srv, clientTLS(other[RoleClient])) == nil {
		t.Error("a caller with another CA's certificate was served")
	}
	// A CLI certificate cannot serve: no agent role, no server auth.
	if _, err := certs[RoleCLI].Server(); err == nil {
		rogue := serve(certs[RoleCLI])
		if get(rogue, clientTLS(certs[RoleClient])) == nil {
			t.Error("an agent accepted a peer serving a CLI certificate")
		}
	}
	if _, _, err := CreateCert([]byte("x"), []byte("y"), CertRequest{Role: RoleServer}); err == nil {
		t.Error("CreateCert with a bad CA succeeded")
	}
	if _, _, err := CreateCert(nil, nil, CertRequest{Role: "admin"}); err == nil {
		t.Error("CreateCert with an unknown role succeeded")
	}
}
