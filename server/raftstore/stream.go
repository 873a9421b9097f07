package raftstore

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// tcpStreamLayer is raft's StreamLayer over a listener bound by the caller
// (raft's own TCP transport insists on binding the address itself, which
// leaves a window in which an ephemeral port picked earlier can be taken).
type tcpStreamLayer struct {
	net.Listener
	adv  net.Addr
	dial *tls.Config // nil: plain TCP
}

// TLS is Raft's mutual TLS (Config.TLS).
type TLS struct {
	Serve, Dial *tls.Config
}

func (l *tcpStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if l.dial == nil {
		return d.Dial("tcp", string(address))
	}
	// Handshake now: a peer without a valid server certificate fails the
	// dial instead of receiving entries.
	c, err := tls.DialWithDialer(&d, "tcp", string(address), l.dial)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (l *tcpStreamLayer) Addr() net.Addr {
	if l.adv != nil {
		return l.adv
	}
	return l.Listener.Addr()
}

// onceCloseListener closes its listener once; later calls return nil.
type onceCloseListener struct {
	net.Listener
	once sync.Once
	err  error
}

func (l *onceCloseListener) Close() error {
	l.once.Do(func() { l.err = l.Listener.Close() })
	return l.err
}

// newListenerTransport serves ln, advertising adv (nil: ln's address).
func newListenerTransport(ln net.Listener, adv net.Addr, t *TLS, hl *HCLogger) (*raft.NetworkTransport, error) {
	layer := &tcpStreamLayer{Listener: ln, adv: adv}
	if t != nil {
		layer.Listener, layer.dial = tls.NewListener(ln, t.Serve), t.Dial
		if adv == nil {
			layer.adv = ln.Addr()
		}
	}
	if a, ok := layer.Addr().(*net.TCPAddr); !ok || a.IP.IsUnspecified() {
		return nil, fmt.Errorf("raftstore: %s is not an advertisable address", layer.Addr())
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: layer, MaxPool: 3, Timeout: 10 * time.Second, Logger: hl,
	}), nil
}
