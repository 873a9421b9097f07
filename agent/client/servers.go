package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/codec"
)

// servers is the server list with failover: calls go to the current
// server and rotate to the next one on transport errors or 5xx answers.
type servers struct {
	http   *http.Client // nil: api.NewClient's
	scheme string       // of addresses given without one ("": http)

	mu     sync.Mutex
	list   []string
	cur    int
	secret string
}

func newServers(scheme string, list []string) *servers {
	s := &servers{scheme: scheme}
	s.set(list)
	return s
}

func (s *servers) set(list []string) {
	var clean []string
	seen := map[string]bool{}
	for _, a := range list {
		a = strings.TrimRight(strings.TrimSpace(a), "/")
		if a != "" && s.scheme != "" && !strings.Contains(a, "://") {
			a = s.scheme + "://" + a
		}
		if a == "" || seen[a] {
			continue
		}
		seen[a] = true
		clean = append(clean, a)
	}
	if len(clean) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := ""
	if len(s.list) > 0 {
		cur = s.list[s.cur]
	}
	s.list, s.cur = clean, 0
	for i, a := range clean {
		if a == cur {
			s.cur = i
		}
	}
}

func (s *servers) setSecret(secret string) {
	s.mu.Lock()
	s.secret = secret
	s.mu.Unlock()
}

func (s *servers) snapshot() ([]string, int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.list...), s.cur, s.secret
}

func (s *servers) failed(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.list) > 0 && s.list[s.cur] == addr {
		s.cur = (s.cur + 1) % len(s.list)
	}
}

// Current is the server calls go to now.
func (s *servers) current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.list) == 0 {
		return ""
	}
	return s.list[s.cur]
}

// errNoServers is returned when no server is configured.
var errNoServers = errors.New("no servers known")

// do calls fn against each server at most once, starting with the
// current one, until one answers; API errors other than 5xx are answers.
func (s *servers) do(ctx context.Context, fn func(*api.Client) error) error {
	list, cur, secret := s.snapshot()
	if len(list) == 0 {
		return errNoServers
	}
	var errs []error
	for i := range list {
		addr := list[(cur+i)%len(list)]
		c := api.NewClient(addr)
		c.JSON = codec.API
		if s.http != nil {
			c.HTTP = s.http
		}
		c.Headers = http.Header{}
		if secret != "" {
			c.Headers.Set(api.NodeSecretHeader, secret)
		}
		err := fn(c)
		if err == nil || ctx.Err() != nil || !retryable(err) {
			return err
		}
		s.failed(addr)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func retryable(err error) bool {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Status >= 500
	}
	return true
}
