package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	gocni "github.com/containerd/go-cni"
	"golang.org/x/sys/unix"

	"github.com/drover/drover/api"
)

// DefaultPluginDirs are where the CNI plugins are looked for (Debian's
// containernetworking-plugins, then the upstream default).
var DefaultPluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// DefaultSubnet is the bridge's address range (Nomad's default).
const DefaultSubnet = "172.26.64.0/20"

// BridgeName is the host bridge allocs are attached to.
const BridgeName = "drover"

// IPAMDir is where the bridge's address reservations are kept. The bridge
// is one per host, so its addresses are too: every client agent on the
// host (dev clients, tests, an agent and its replacement) reserves from
// the same state, else two of them hand out one address on one bridge. It
// is under /run, so reservations end with a reboot, as the namespaces do.
var IPAMDir = "/run/drover/cni/ipam"

// Manager sets alloc networks up and tears them down.
type Manager struct {
	stateDir   string
	pluginDirs []string
	subnet     string

	once    sync.Once
	cni     gocni.CNI
	loadErr error
	mu      sync.Mutex // one setup or teardown at a time (iptables)
}

// Alloc is an alloc's network as set up.
type Alloc struct {
	NetNS string `json:"NetNS"` // path of the namespace
	IP    string `json:"IP"`    // the alloc's address on the bridge
}

// New returns a manager keeping its allocs' namespaces and state under
// stateDir (the addresses are the host's: IPAMDir; pluginDirs nil:
// DefaultPluginDirs).
func New(stateDir string, pluginDirs []string) *Manager {
	if len(pluginDirs) == 0 {
		pluginDirs = DefaultPluginDirs
	}
	return &Manager{stateDir: stateDir, pluginDirs: pluginDirs, subnet: DefaultSubnet}
}

// Available reports whether the bridge plugin is installed.
func Available(pluginDirs []string) error {
	if len(pluginDirs) == 0 {
		pluginDirs = DefaultPluginDirs
	}
	for _, d := range pluginDirs {
		if hasPlugins(d) {
			return nil
		}
	}
	return fmt.Errorf("the CNI plugins bridge, host-local, portmap and loopback are not installed in %v (Debian: containernetworking-plugins)", pluginDirs)
}

func hasPlugins(dir string) bool {
	for _, p := range []string{"bridge", "host-local", "portmap", "firewall", "loopback"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

func (m *Manager) conflist() []byte {
	b, _ := json.Marshal(map[string]any{
		"cniVersion": "0.4.0", "name": "drover",
		"plugins": []any{
			map[string]any{"type": "bridge", "bridge": BridgeName, "isGateway": true, "ipMasq": true, "hairpinMode": true, "forceAddress": true,
				"ipam": map[string]any{"type": "host-local", "dataDir": IPAMDir,
					"ranges": [][]map[string]string{{{"subnet": m.subnet}}}, "routes": []map[string]string{{"dst": "0.0.0.0/0"}}}},
			map[string]any{"type": "firewall", "backend": "iptables", "iptablesAdminChainName": "DROVER-ADMIN"},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}, "snat": true},
		},
	})
	return b
}

func (m *Manager) load() error {
	m.once.Do(func() {
		if err := Available(m.pluginDirs); err != nil {
			m.loadErr = err
			return
		}
		c, err := gocni.New(gocni.WithPluginDir(m.pluginDirs), gocni.WithInterfacePrefix("eth"), gocni.WithMinNetworkCount(2))
		if err != nil {
			m.loadErr = fmt.Errorf("cni: %w", err)
			return
		}
		if err := c.Load(gocni.WithLoNetwork, gocni.WithConfListBytes(m.conflist())); err != nil {
			m.loadErr = fmt.Errorf("cni config: %w", err)
			return
		}
		m.cni = c
	})
	return m.loadErr
}

func (m *Manager) nsPath(allocID string) string { return filepath.Join(m.stateDir, "netns", allocID) }
func (m *Manager) statePath(allocID string) string {
	return filepath.Join(m.stateDir, "allocs", allocID+".json")
}

func portMappings(ports []api.AllocatedPort) []gocni.PortMapping {
	var out []gocni.PortMapping
	for _, p := range ports {
		to := p.To
		if to <= 0 {
			to = p.Value
		}
		for _, proto := range []string{"tcp", "udp"} {
			out = append(out, gocni.PortMapping{HostPort: int32(p.Value), ContainerPort: int32(to), Protocol: proto, HostIP: p.HostIP})
		}
	}
	return out
}

// Setup creates the alloc's namespace and attaches it, mapping ports. An
// alloc set up before (an agent restart) gets its recorded network back.
func (m *Manager) Setup(ctx context.Context, allocID string, ports []api.AllocatedPort) (*Alloc, error) {
	if err := m.load(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, err := os.ReadFile(m.statePath(allocID)); err == nil {
		var a Alloc
		if json.Unmarshal(b, &a) == nil && a.NetNS != "" {
			if _, err := os.Stat(a.NetNS); err == nil {
				return &a, nil
			}
		}
	}
	for _, d := range []string{filepath.Dir(m.nsPath(allocID)), filepath.Dir(m.statePath(allocID))} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	path := m.nsPath(allocID)
	if err := createNetNS(path); err != nil {
		return nil, fmt.Errorf("create network namespace: %w", err)
	}
	res, err := m.cni.Setup(ctx, allocID, path, gocni.WithCapabilityPortMap(portMappings(ports)))
	if err != nil {
		_ = m.cni.Remove(context.WithoutCancel(ctx), allocID, path, gocni.WithCapabilityPortMap(portMappings(ports)))
		_ = removeNetNS(path)
		return nil, fmt.Errorf("cni setup: %w", err)
	}
	a := &Alloc{NetNS: path}
	for name, iface := range res.Interfaces {
		if name == "lo" {
			continue
		}
		for _, c := range iface.IPConfigs {
			if ip := c.IP.To4(); ip != nil && a.IP == "" {
				a.IP = ip.String()
			}
		}
	}
	if net.ParseIP(a.IP) == nil {
		_ = m.cni.Remove(context.WithoutCancel(ctx), allocID, path, gocni.WithCapabilityPortMap(portMappings(ports)))
		_ = removeNetNS(path)
		return nil, errors.New("cni setup gave the alloc no IPv4 address")
	}
	b, _ := json.Marshal(a)
	if err := os.WriteFile(m.statePath(allocID), b, 0o600); err != nil {
		return nil, err
	}
	return a, nil
}

// Teardown detaches the alloc's namespace (releasing its address and
// port mappings) and removes it; an alloc without one is fine.
func (m *Manager) Teardown(ctx context.Context, allocID string, ports []api.AllocatedPort) error {
	path := m.nsPath(allocID)
	if _, err := os.Stat(m.statePath(allocID)); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	if err := m.load(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.cni.Remove(ctx, allocID, path, gocni.WithCapabilityPortMap(portMappings(ports)))
	if rerr := removeNetNS(path); rerr != nil && err == nil {
		err = rerr
	}
	if rerr := os.Remove(m.statePath(allocID)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// createNetNS makes a new network namespace and pins it at path with a
// bind mount. The namespace is made on a locked thread that is then
// thrown away (its goroutine exits locked), so no other goroutine ever
// runs in it.
func createNetNS(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return err
	}
	f.Close()
	errCh := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errCh <- fmt.Errorf("unshare: %w", err)
			return
		}
		self := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
			errCh <- fmt.Errorf("pin %s: %w", path, err)
			return
		}
		errCh <- nil
	}()
	if err := <-errCh; err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

func removeNetNS(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
