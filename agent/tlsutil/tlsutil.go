package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"slices"
	"time"
)

// Roles of certificates.
const (
	RoleServer = "server"
	RoleClient = "client"
	RoleCLI    = "cli"
)

// Domain is the suffix of role names (server.global.drover).
const Domain = "drover"

// RoleName is the DNS name a role's certificate carries in a region.
func RoleName(role, region string) string { return role + "." + region + "." + Domain }

// CreateCA makes a self-signed ECDSA P-256 CA valid for days and returns
// its certificate and key in PEM.
func CreateCA(days int) (certPEM, keyPEM []byte, err error) {
	key, serial, err := newKeyAndSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("drover agent CA %08x", serial.Uint64()&0xffffffff), Organization: []string{"drover"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Duration(days) * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	return encode(der, key)
}

// CertRequest says what certificate CreateCert makes.
type CertRequest struct {
	Role   string // RoleServer, RoleClient or RoleCLI
	Region string // default "global"
	Days   int
	// DNSNames and IPs are added to the role name, localhost and 127.0.0.1.
	DNSNames []string
	IPs      []net.IP
}

// CreateCert makes a certificate for a role signed by the CA (PEM in,
// PEM out). Server and client certificates serve and dial (server and
// client auth); CLI ones only dial.
func CreateCert(caCertPEM, caKeyPEM []byte, req CertRequest) (certPEM, keyPEM []byte, err error) {
	if !slices.Contains([]string{RoleServer, RoleClient, RoleCLI}, req.Role) {
		return nil, nil, fmt.Errorf("certificate role %q: want server, client or cli", req.Role)
	}
	if req.Region == "" {
		req.Region = "global"
	}
	ca, err := tls.X509KeyPair(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("CA certificate and key: %w", err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	if !caCert.IsCA {
		return nil, nil, errors.New("the CA certificate is not a CA")
	}
	key, serial, err := newKeyAndSerial()
	if err != nil {
		return nil, nil, err
	}
	name := RoleName(req.Role, req.Region)
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	dns := []string{name}
	ips := slices.Clone(req.IPs)
	if req.Role != RoleCLI {
		usage = append(usage, x509.ExtKeyUsageServerAuth)
		dns = append(dns, "localhost")
		ips = append(ips, net.ParseIP("127.0.0.1"))
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(time.Duration(req.Days) * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		DNSNames:     append(dns, req.DNSNames...),
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return nil, nil, err
	}
	return encode(der, key)
}

// newKeyAndSerial makes a certificate's ECDSA P-256 key and random serial.
func newKeyAndSerial() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	return key, serial, nil
}

func encode(der []byte, key *ecdsa.PrivateKey) ([]byte, []byte, error) {
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
}

// Config is the agent's tls block (Nomad's names).
type Config struct {
	HTTP                 bool   // serve the HTTP API over TLS and dial agents over it
	CAFile               string // the CA that signs agents' and CLIs' certificates
	CertFile, KeyFile    string // this agent's certificate (server or client role)
	VerifyServerHostname bool   // peers must hold an agent role name of Region
	VerifyHTTPSClient    bool   // callers of the HTTP API must present a certificate from the CA
	Region               string
}

// load reads the CA pool and the agent's key pair.
func (c *Config) load() (*x509.CertPool, tls.Certificate, error) {
	var none tls.Certificate
	if c.CAFile == "" || c.CertFile == "" || c.KeyFile == "" {
		return nil, none, errors.New("tls needs ca_file, cert_file and key_file")
	}
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, none, fmt.Errorf("tls ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, none, fmt.Errorf("tls ca_file %s: no PEM certificate", c.CAFile)
	}
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, none, fmt.Errorf("tls cert_file/key_file: %w", err)
	}
	return pool, pair, nil
}

// Server is the tls.Config of the HTTP API.
func (c *Config) Server() (*tls.Config, error) {
	pool, pair, err := c.load()
	if err != nil {
		return nil, err
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}, ClientCAs: pool,
		NextProtos: []string{"h2", "http/1.1"}}
	if c.VerifyHTTPSClient {
		t.ClientAuth = tls.RequireAndVerifyClientCert
	} else {
		t.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return t, nil
}

// Client is the tls.Config of the agent's own requests to other agents:
// it presents the agent's certificate and trusts only the CA; with
// VerifyServerHostname the peer must hold server.<region>.drover or
// client.<region>.drover (checked instead of the dialled address).
func (c *Config) Client() (*tls.Config, error) {
	pool, pair, err := c.load()
	if err != nil {
		return nil, err
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}, RootCAs: pool}
	if c.VerifyServerHostname {
		region := c.Region
		if region == "" {
			region = "global"
		}
		t.InsecureSkipVerify = true // replaced by VerifyConnection: the chain and a role name
		t.VerifyConnection = func(cs tls.ConnectionState) error {
			return VerifyRole(cs, pool, region, RoleServer, RoleClient)
		}
	}
	return t, nil
}

// RegionServer is the tls.Config of a server's requests to the servers
// of another region (forwarding by ?region=, ACL replication): it
// presents this agent's certificate and accepts only a peer holding
// server.<region>.drover from the CA, whatever address was dialled.
func (c *Config) RegionServer(region string) (*tls.Config, error) {
	pool, pair, err := c.load()
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}, RootCAs: pool,
		InsecureSkipVerify: true, // replaced by VerifyConnection: the chain and the role
		VerifyConnection: func(cs tls.ConnectionState) error {
			return VerifyRole(cs, pool, region, RoleServer)
		}}, nil
}

// Raft is the tls.Config pair of Raft between servers: both ends present
// their certificate and accept only a peer holding server.<region>.drover
// from the CA, so a process without a server certificate neither joins
// nor receives a single entry.
func (c *Config) Raft() (serve, dial *tls.Config, err error) {
	pool, pair, err := c.load()
	if err != nil {
		return nil, nil, err
	}
	region := c.Region
	if region == "" {
		region = "global"
	}
	verify := func(cs tls.ConnectionState) error { return VerifyRole(cs, pool, region, RoleServer) }
	serve = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAnyClientCert, VerifyConnection: verify}
	dial = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair},
		InsecureSkipVerify: true, VerifyConnection: verify} // VerifyConnection checks the chain and the role
	return serve, dial, nil
}

// VerifyRole checks a peer's chain against pool and that its leaf holds
// one of the roles' names in region.
func VerifyRole(cs tls.ConnectionState, pool *x509.CertPool, region string, roles ...string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the peer sent no certificate")
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("tls: peer certificate: %w", err)
	}
	for _, r := range roles {
		if leaf.VerifyHostname(RoleName(r, region)) == nil {
			return nil
		}
	}
	return fmt.Errorf("tls: peer certificate %q holds no agent role of region %s", leaf.Subject.CommonName, region)
}
