package raftstore

import (
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
	adv net.Addr
}

func (l *tcpStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	return d.Dial("tcp", string(address))
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
func newListenerTransport(ln net.Listener, adv net.Addr, hl *HCLogger) (*raft.NetworkTransport, error) {
	layer := &tcpStreamLayer{Listener: ln, adv: adv}
	if a, ok := layer.Addr().(*net.TCPAddr); !ok || a.IP.IsUnspecified() {
		return nil, fmt.Errorf("raftstore: %s is not an advertisable address", layer.Addr())
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: layer, MaxPool: 3, Timeout: 10 * time.Second, Logger: hl,
	}), nil
}
