package network

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/internal/testproc"
)

// hostIP is a non-loopback address of the host (what other machines reach).
func hostIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.Equal(net.ParseIP("172.26.64.1")) {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this host")
	return ""
}

// A bridge network for real: busybox httpd in the alloc's namespace,
// listening on its "to" port, answers on the host's address at the
// mapped host port, on the host's address and on localhost; teardown releases the namespace, and a second setup
// of the same alloc (an agent restart) gets the recorded network back.
func TestBridgeSetupPortMapTeardown(t *testing.T) {
	drivertest.NeedRoot(t)
	drivertest.Need(t, Available(nil) == nil, fmt.Sprint(Available(nil)))
	_, iptErr := exec.LookPath("iptables")
	drivertest.Need(t, iptErr == nil, "iptables is not installed")
	drivertest.Need(t, fileExists("/bin/busybox"), "/bin/busybox (busybox-static) is not installed")
	m := New(t.TempDir(), nil)
	hostPort := testproc.FreePort(t)
	ports := []api.AllocatedPort{{Label: "http", Value: hostPort, To: 8080}}
	ctx := context.Background()
	id := fmt.Sprintf("test-%d", time.Now().UnixNano())
	a, err := m.Setup(ctx, id, ports)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Teardown(context.Background(), id, ports) })
	if ip := net.ParseIP(a.IP); ip == nil || !ip.IsPrivate() {
		t.Fatalf("alloc IP %q", a.IP)
	}
	again, err := m.Setup(ctx, id, ports)
	if err != nil || *again != *a {
		t.Fatalf("second setup %+v %v, want %+v", again, err, a)
	}
	www := t.TempDir()
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	httpd := exec.Command("nsenter", "--net="+a.NetNS, "/bin/busybox", "httpd", "-f", "-p", "8080", "-h", www)
	if err := httpd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = httpd.Process.Kill(); _ = httpd.Wait() })
	for _, ip := range []string{hostIP(t), "127.0.0.1"} {
		url := "http://" + net.JoinHostPort(ip, strconv.Itoa(hostPort)) + "/"
		// httpd starting in another process: poll.
		testproc.Eventually(t, 10*time.Second, "GET "+url, func() bool {
			r, err := http.Get(url)
			if err != nil {
				return false
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if string(b) != "inside\n" {
				t.Fatalf("GET %s = %q", url, b)
			}
			return true
		})
	}
	if err := m.Teardown(ctx, id, ports); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.NetNS); !os.IsNotExist(err) {
		t.Errorf("namespace %s still there: %v", a.NetNS, err)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Two client agents on one host (each its own data dir, as dev clients
// are) share the one bridge, so they never hand out one address twice.
func TestBridgeAddressesAreTheHosts(t *testing.T) {
	drivertest.NeedRoot(t)
	drivertest.Need(t, Available(nil) == nil, fmt.Sprint(Available(nil)))
	_, iptErr := exec.LookPath("iptables")
	drivertest.Need(t, iptErr == nil, "iptables is not installed")
	ctx := context.Background()
	seen := map[string]string{}
	for i := range 2 {
		m := New(t.TempDir(), nil)
		id := fmt.Sprintf("test-%d-%d", time.Now().UnixNano(), i)
		a, err := m.Setup(ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Teardown(context.Background(), id, nil) })
		if other, dup := seen[a.IP]; dup {
			t.Fatalf("agents %s and %s both got %s on the host's bridge", other, id, a.IP)
		}
		seen[a.IP] = id
	}
}
