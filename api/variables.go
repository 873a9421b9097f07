package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Variable is a Nomad Variable: encrypted key/value items stored by the
// servers at a path in a namespace (Nomad's JSON shape). Reads of a
// variable carry its Items; lists carry metadata only.
type Variable struct {
	Namespace   string            `json:"Namespace"`
	Path        string            `json:"Path"`
	CreateIndex uint64            `json:"CreateIndex"`
	ModifyIndex uint64            `json:"ModifyIndex"`
	CreateTime  int64             `json:"CreateTime"` // unix nanoseconds
	ModifyTime  int64             `json:"ModifyTime"`
	Items       map[string]string `json:"Items"`
	Lock        *VariableLock     `json:"Lock,omitempty"`
}

// VariableMetadata is a variable without its items (GET /v1/vars).
type VariableMetadata struct {
	Namespace   string        `json:"Namespace"`
	Path        string        `json:"Path"`
	CreateIndex uint64        `json:"CreateIndex"`
	ModifyIndex uint64        `json:"ModifyIndex"`
	CreateTime  int64         `json:"CreateTime"`
	ModifyTime  int64         `json:"ModifyTime"`
	Lock        *VariableLock `json:"Lock,omitempty"`
}

// VariableLock is a lock held over a variable (Nomad's): TTL and
// LockDelay are durations ("15s"); ID is returned only to the caller that
// acquired it, and the holder renews (before TTL passes) and releases
// with it. An expired lock can be taken again once LockDelay has passed.
type VariableLock struct {
	ID        string `json:"ID,omitempty"`
	TTL       string `json:"TTL,omitempty"`
	LockDelay string `json:"LockDelay,omitempty"`
}

// Lock operations (the query parameter of PUT /v1/var/:path).
const (
	VariableLockAcquire = "lock-acquire"
	VariableLockRenew   = "lock-renew"
	VariableLockRelease = "lock-release"
)

// Defaults and limits of variables (Nomad's where it has them).
const (
	DefaultVariableLockTTL   = 15 * time.Second
	DefaultVariableLockDelay = 15 * time.Second
	MinVariableLockTTL       = 10 * time.Millisecond
	MaxVariableLockTTL       = 24 * time.Hour
	// MaxVariablePathLen bounds a variable's path.
	MaxVariablePathLen = 128
	// MaxVariableItemsBytes bounds the items of one variable (keys and
	// values together, as stored before encryption).
	MaxVariableItemsBytes = 64 << 10
	// MaxVariableBodyBytes bounds a variable's request body (the JSON of
	// items up to MaxVariableItemsBytes, escaped, and its metadata).
	MaxVariableBodyBytes = 512 << 10
)

// ErrCASConflict answers a write whose check-and-set index (?cas=) is not
// the variable's ModifyIndex, or one that a lock held by someone else
// refuses (409, the current variable in the body as Nomad).
var ErrCASConflict = &Error{Code: "cas_conflict", Status: http.StatusConflict, Message: "check-and-set conflict"}

// ValidateVariablePath checks a path by Nomad's rules: 1 to 128
// characters of [A-Za-z0-9_.~/-], no "." or ".." segment, no empty
// segment, not under "nomad/" except "nomad/jobs" and below (the
// workload identities' implicit paths).
func ValidateVariablePath(p string) error {
	bad := func(why string) error {
		return Errorf(ErrBadRequest, fmt.Sprintf("invalid variable path %q: %s", p, why))
	}
	if p == "" {
		return bad("empty")
	}
	if len(p) > MaxVariablePathLen {
		return bad(fmt.Sprintf("%d characters, at most %d", len(p), MaxVariablePathLen))
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-~/.", r)) {
			return bad(fmt.Sprintf("character %q (allowed: letters, digits and _-~/.)", r))
		}
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return bad("empty segment (a leading, trailing or doubled /)")
		case ".", "..":
			return bad(fmt.Sprintf("segment %q", seg))
		}
	}
	if p == "nomad" || strings.HasPrefix(p, "nomad/") && p != "nomad/jobs" && !strings.HasPrefix(p, "nomad/jobs/") {
		return bad(`"nomad/" is reserved: only "nomad/jobs" and the paths below it may be written`)
	}
	return nil
}

// ValidateVariableItems checks items: at least one, no empty key, and
// the keys and values of all of them together within
// MaxVariableItemsBytes.
func ValidateVariableItems(items map[string]string) error {
	if len(items) == 0 {
		return Errorf(ErrBadRequest, "a variable needs at least one item")
	}
	size := 0
	for k, v := range items {
		if k == "" {
			return Errorf(ErrBadRequest, "variable item with an empty key")
		}
		size += len(k) + len(v)
	}
	if size > MaxVariableItemsBytes {
		return Errorf(ErrBadRequest, fmt.Sprintf("variable items of %d bytes: at most %d", size, MaxVariableItemsBytes))
	}
	return nil
}

// ParseLockDurations reads a lock's TTL and LockDelay (defaults when
// empty) and checks their bounds.
func (l *VariableLock) ParseLockDurations() (ttl, delay time.Duration, err error) {
	ttl, delay = DefaultVariableLockTTL, DefaultVariableLockDelay
	if l == nil {
		return ttl, delay, nil
	}
	if l.TTL != "" {
		if ttl, err = time.ParseDuration(l.TTL); err != nil {
			return 0, 0, Errorf(ErrBadRequest, fmt.Sprintf("invalid lock TTL %q: want a duration such as 15s", l.TTL))
		}
	}
	if l.LockDelay != "" {
		if delay, err = time.ParseDuration(l.LockDelay); err != nil {
			return 0, 0, Errorf(ErrBadRequest, fmt.Sprintf("invalid lock delay %q: want a duration such as 15s", l.LockDelay))
		}
	}
	if ttl < MinVariableLockTTL || ttl > MaxVariableLockTTL {
		return 0, 0, Errorf(ErrBadRequest, fmt.Sprintf("lock TTL %s: want %s to %s", ttl, MinVariableLockTTL, MaxVariableLockTTL))
	}
	if delay < 0 || delay > MaxVariableLockTTL {
		return 0, 0, Errorf(ErrBadRequest, fmt.Sprintf("lock delay %s: want 0 to %s", delay, MaxVariableLockTTL))
	}
	return ttl, delay, nil
}

// CASConflictError is a write refused by check-and-set (or by a lock
// held by someone else): Current is the variable as it is now (nil when
// it does not exist, or the caller may not read it).
type CASConflictError struct {
	Err     *Error
	Current *Variable
}

func (e *CASConflictError) Error() string { return e.Err.Error() }
func (e *CASConflictError) Unwrap() error { return e.Err }

func varPath(p string) string {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for i, s := range segs {
		segs[i] = esc(s)
	}
	return "/v1/var/" + strings.Join(segs, "/")
}

// Variables lists the metadata of the variables under o.Prefix (in
// o.Namespace; "*" for every namespace the token may list).
func (c *Client) Variables(ctx context.Context, o *QueryOptions) ([]*VariableMetadata, *QueryMeta, error) {
	var out []*VariableMetadata
	qm, err := c.Query(ctx, "/v1/vars", &out, o)
	return out, qm, err
}

// Variable reads a variable with its items.
func (c *Client) Variable(ctx context.Context, path string, o *QueryOptions) (*Variable, *QueryMeta, error) {
	var out Variable
	qm, err := c.Query(ctx, varPath(path), &out, o)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// PutVariable creates or replaces v (its Namespace, else o's or the
// client's); with cas >= 0 only if its ModifyIndex is cas (0: only if it
// does not exist). A conflict is a *CASConflictError.
func (c *Client) PutVariable(ctx context.Context, v *Variable, cas int64, o *WriteOptions) (*Variable, error) {
	q := varQuery(o, v)
	if cas >= 0 {
		q.Set("cas", strconv.FormatInt(cas, 10))
	}
	return c.varWrite(ctx, http.MethodPut, v.Path, q, v)
}

// varQuery is o's parameters, with v's namespace when o names none (the
// servers check ACLs in the request's namespace).
func varQuery(o *WriteOptions, v *Variable) url.Values {
	q := o.values()
	if q.Get("namespace") == "" && v.Namespace != "" {
		q.Set("namespace", v.Namespace)
	}
	return q
}

// DeleteVariable purges a variable; with cas >= 0 only if its
// ModifyIndex is cas.
func (c *Client) DeleteVariable(ctx context.Context, path string, cas int64, o *WriteOptions) error {
	q := o.values()
	if cas >= 0 {
		q.Set("cas", strconv.FormatInt(cas, 10))
	}
	_, err := c.varWrite(ctx, http.MethodDelete, path, q, nil)
	return err
}

// LockVariable runs a lock operation (VariableLockAcquire, ...Renew,
// ...Release) on v; v.Lock carries the TTL and delay to acquire with, or
// the ID to renew or release. The answer is the variable with its lock
// (its ID after an acquire).
func (c *Client) LockVariable(ctx context.Context, op string, v *Variable, o *WriteOptions) (*Variable, error) {
	q := varQuery(o, v)
	q.Set(op, "")
	return c.varWrite(ctx, http.MethodPut, v.Path, q, v)
}

func (c *Client) varWrite(ctx context.Context, method, path string, q url.Values, body any) (*Variable, error) {
	if err := ValidateVariablePath(path); err != nil {
		return nil, err // before the URL: the server's router would clean "a//b" into another path
	}
	resp, err := c.Raw(ctx, method, varPath(path), q, body)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Code == ErrCASConflict.Code {
			ce := &CASConflictError{Err: e}
			var cur Variable
			if len(e.body) > 0 && json.Unmarshal(e.body, &cur) == nil && cur.Path != "" {
				ce.Current = &cur
			}
			return nil, ce
		}
		return nil, err
	}
	defer resp.Body.Close()
	if method == http.MethodDelete {
		return nil, nil
	}
	var out Variable
	if err := c.decode(resp, &out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	return &out, nil
}
