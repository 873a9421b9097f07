package http

import (
	"encoding/json"
	"log/slog"
	"net"
	nethttp "net/http"
	"strconv"
	"sync"
	"time"

	"github.com/drover/drover/api"
)

// Defaults of the connection limits (agent config limits block, as
// Nomad's).
const (
	// DefaultReadTimeout bounds reading one request, headers and body
	// (limits.http_read_timeout); it does not bound the response, so
	// blocking queries, log follow, the event stream and exec go on.
	DefaultReadTimeout = 30 * time.Second
	// DefaultMaxConnsPerClient is limits.http_max_conns_per_client.
	DefaultMaxConnsPerClient = 100
)

// tooManyConns is what a connection over the per-client limit reads
// before it is closed (Nomad answers 429 too).
var tooManyConns = func() []byte {
	body, _ := json.Marshal(&api.ErrorBody{Error: api.NewError(nethttp.StatusTooManyRequests, "too_many_connections",
		"too many open connections from this client address (agent limits.http_max_conns_per_client)")})
	return []byte("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
}()

// connLimitListener counts the open connections of each remote IP and
// refuses one over max: it is answered 429 and closed, never handed to the
// HTTP server. Safe for concurrent use (Accept runs in the serving
// goroutine, Close of a connection anywhere).
type connLimitListener struct {
	net.Listener
	max    int
	exempt func(ip string) bool // not counted (drover's own traffic)
	log    *slog.Logger

	mu    sync.Mutex
	conns map[string]int
}

func newConnLimitListener(ln net.Listener, max int, exempt func(string) bool, log *slog.Logger) *connLimitListener {
	return &connLimitListener{Listener: ln, max: max, exempt: exempt, log: log, conns: map[string]int{}}
}

func (l *connLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c.RemoteAddr())
		if l.exempt != nil && l.exempt(ip) {
			return c, nil
		}
		l.mu.Lock()
		n := l.conns[ip]
		if n >= l.max {
			l.mu.Unlock()
			l.log.Warn("http connection refused: too many from one client", "client", ip, "limit", l.max)
			go refuse(c)
			continue
		}
		l.conns[ip] = n + 1
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *connLimitListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[ip]--; l.conns[ip] <= 0 {
		delete(l.conns, ip)
	}
}

// refuse answers 429 within a second, whatever the client does, and closes.
func refuse(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(tooManyConns)
	_ = c.Close()
}

func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// countedConn gives its slot back once, on the first Close (hijacked
// connections, exec's websocket, are closed by their new owner).
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
