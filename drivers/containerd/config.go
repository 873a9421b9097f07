package containerd

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/drover/drover/drivers"
)

// Defaults of the client config.
const (
	DefaultAddress   = "/run/containerd/containerd.sock"
	DefaultNamespace = "drover"
	DefaultRuntime   = "io.containerd.runc.v2"
	Snapshotter      = "overlayfs"
)

// DefaultAllowCaps is the capability set a task may add with cap_add
// unless the client config's allow_caps says otherwise (the usual
// container runtime default set).
var DefaultAllowCaps = []string{
	"CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_MKNOD", "CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SETFCAP",
	"CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT",
}

// ClientConfig is plugin "containerd" { config { ... } }.
type ClientConfig struct {
	Address         string
	Namespace       string
	Runtime         string
	AllowPrivileged bool
	// AllowCaps are the capabilities cap_add may ask for ("ALL" = any).
	AllowCaps []string
}

// ParseClientConfig reads the plugin config block; CONTAINERD_ADDRESS
// overrides the default address (an explicit address wins).
func ParseClientConfig(m map[string]any) (*ClientConfig, error) {
	c := &ClientConfig{Address: DefaultAddress, Namespace: DefaultNamespace, Runtime: DefaultRuntime, AllowCaps: DefaultAllowCaps}
	if env := os.Getenv("CONTAINERD_ADDRESS"); env != "" {
		c.Address = env
	}
	r := reader{m: m}
	if v, ok := r.str("address"); ok && v != "" {
		c.Address = v
	}
	if v, ok := r.str("namespace"); ok && v != "" {
		c.Namespace = v
	}
	if v, ok := r.str("runtime"); ok && v != "" {
		c.Runtime = v
	}
	if v, ok := r.boolean("allow_privileged"); ok {
		c.AllowPrivileged = v
	}
	if v, ok := r.strings("allow_caps"); ok {
		c.AllowCaps = normCaps(v)
	}
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("containerd plugin config: %w", err)
	}
	return c, nil
}

// Mount is one entry of the task config's mounts list.
type Mount struct {
	Type    string   // "bind" (default), "tmpfs"
	Source  string   // host path (relative: inside the task dir)
	Target  string   // path in the container
	Options []string // e.g. ["ro"], ["rbind", "rw"]
}

// Auth is the registry credential of a task config.
type Auth struct {
	Username string
	Password string
}

// TaskConfig is a task's config { ... } block for this driver.
type TaskConfig struct {
	Image          string
	Command        string
	Args           []string
	Entrypoint     []string
	Env            map[string]string
	Mounts         []Mount
	Privileged     bool
	CapAdd         []string
	CapDrop        []string
	ReadonlyRootfs bool
	Hostname       string
	// Seccomp: true (default) applies the runtime default profile.
	Seccomp bool
	// SeccompProfile is a path to a JSON profile (overrides the default).
	SeccompProfile string
	HostNetwork    bool
	Auth           *Auth
	// PidsLimit caps the number of processes (0 = unlimited).
	PidsLimit int64
	// CPUHardLimit sets a CFS quota from the cpu MHz (shares stay).
	CPUHardLimit bool
}

// ParseTaskConfig decodes and checks a task config; errors wrap
// drivers.ErrInvalidConfig and name the key.
func ParseTaskConfig(m map[string]any) (*TaskConfig, error) {
	c := &TaskConfig{Seccomp: true}
	r := reader{m: m}
	c.Image, _ = r.str("image")
	c.Command, _ = r.str("command")
	c.Args, _ = r.strings("args")
	c.Entrypoint, _ = r.strings("entrypoint")
	c.Env, _ = r.strmap("env")
	c.Privileged, _ = r.boolean("privileged")
	c.CapAdd, _ = r.strings("cap_add")
	c.CapDrop, _ = r.strings("cap_drop")
	c.ReadonlyRootfs, _ = r.boolean("readonly_rootfs")
	c.Hostname, _ = r.str("hostname")
	if v, ok := r.boolean("seccomp"); ok {
		c.Seccomp = v
	}
	c.SeccompProfile, _ = r.str("seccomp_profile")
	c.HostNetwork, _ = r.boolean("host_network")
	c.PidsLimit, _ = r.integer("pids_limit")
	c.CPUHardLimit, _ = r.boolean("cpu_hard_limit")
	for i, mm := range r.blocks("mounts") {
		mr := reader{m: mm, prefix: fmt.Sprintf("mounts[%d].", i)}
		var mt Mount
		mt.Type, _ = mr.str("type")
		mt.Source, _ = mr.str("source")
		mt.Target, _ = mr.str("target")
		mt.Options, _ = mr.strings("options")
		if mt.Type == "" {
			mt.Type = "bind"
		}
		if err := mr.done(); err != nil {
			r.errs = append(r.errs, err.Error())
			continue
		}
		switch {
		case mt.Type != "bind" && mt.Type != "tmpfs":
			r.errs = append(r.errs, fmt.Sprintf("%stype: %q is not bind or tmpfs", mr.prefix, mt.Type))
		case mt.Target == "" || !strings.HasPrefix(mt.Target, "/"):
			r.errs = append(r.errs, fmt.Sprintf("%starget: an absolute path is required", mr.prefix))
		case mt.Type == "bind" && mt.Source == "":
			r.errs = append(r.errs, fmt.Sprintf("%ssource: required for a bind mount", mr.prefix))
		}
		c.Mounts = append(c.Mounts, mt)
	}
	if blocks := r.blocks("auth"); len(blocks) > 0 {
		ar := reader{m: blocks[0], prefix: "auth."}
		a := &Auth{}
		a.Username, _ = ar.str("username")
		a.Password, _ = ar.str("password")
		if err := ar.done(); err != nil {
			r.errs = append(r.errs, err.Error())
		}
		c.Auth = a
	}
	if c.Image == "" && !r.bad("image") {
		r.errs = append(r.errs, "image: required")
	}
	if c.PidsLimit < 0 {
		r.errs = append(r.errs, "pids_limit: must not be negative")
	}
	c.CapAdd, c.CapDrop = normCaps(c.CapAdd), normCaps(c.CapDrop)
	if err := r.done(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkAllowed applies the client's policy to a task config.
func (c *ClientConfig) checkAllowed(tc *TaskConfig) error {
	if tc.Privileged && !c.AllowPrivileged {
		return fmt.Errorf("%w: privileged: not allowed by the client (plugin \"containerd\" allow_privileged = false)", drivers.ErrInvalidConfig)
	}
	// Without the default filter, or with a profile the job names (a
	// file it may have written itself), the sandbox is the job's to set.
	if !tc.Seccomp && !c.AllowPrivileged {
		return fmt.Errorf("%w: seccomp = false: not allowed by the client (plugin \"containerd\" allow_privileged = false)", drivers.ErrInvalidConfig)
	}
	if tc.SeccompProfile != "" && !c.AllowPrivileged {
		return fmt.Errorf("%w: seccomp_profile: not allowed by the client (plugin \"containerd\" allow_privileged = false)", drivers.ErrInvalidConfig)
	}
	allowed := map[string]bool{}
	for _, a := range c.AllowCaps {
		allowed[a] = true
	}
	if allowed["CAP_ALL"] {
		return nil
	}
	var denied []string
	for _, cp := range tc.CapAdd {
		if cp == "CAP_ALL" || !allowed[cp] {
			denied = append(denied, cp)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("%w: cap_add: %s not in the client's allow_caps", drivers.ErrInvalidConfig, strings.Join(denied, ", "))
	}
	return nil
}

// normCaps upper-cases and prefixes CAP_ ("net_admin" -> "CAP_NET_ADMIN").
func normCaps(in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, 0, len(in))
	for _, c := range in {
		c = strings.ToUpper(strings.TrimSpace(c))
		if !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		out = append(out, c)
	}
	return out
}

// reader decodes a loosely typed map (HCL or JSON decoded) and collects
// errors; keys it was not asked about are reported by done.
type reader struct {
	m      map[string]any
	prefix string
	seen   map[string]bool
	errs   []string
	badKey map[string]bool
}

func (r *reader) get(k string) (any, bool) {
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[k] = true
	v, ok := r.m[k]
	return v, ok && v != nil
}

func (r *reader) fail(k, format string, a ...any) {
	if r.badKey == nil {
		r.badKey = map[string]bool{}
	}
	r.badKey[k] = true
	r.errs = append(r.errs, r.prefix+k+": "+fmt.Sprintf(format, a...))
}

func (r *reader) bad(k string) bool { return r.badKey[k] }

func (r *reader) str(k string) (string, bool) {
	v, ok := r.get(k)
	if !ok {
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		r.fail(k, "want a string, got %T", v)
		return "", false
	}
	return s, true
}

func (r *reader) boolean(k string) (bool, bool) {
	v, ok := r.get(k)
	if !ok {
		return false, false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.fail(k, "want a bool, got %T", v)
		return false, false
	}
	return b, true
}

func (r *reader) integer(k string) (int64, bool) {
	v, ok := r.get(k)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	}
	r.fail(k, "want an integer, got %v", v)
	return 0, false
}

func (r *reader) strings(k string) ([]string, bool) {
	v, ok := r.get(k)
	if !ok {
		return nil, false
	}
	switch l := v.(type) {
	case []string:
		return append([]string(nil), l...), true
	case []any:
		out := make([]string, 0, len(l))
		for i, e := range l {
			s, isStr := e.(string)
			if !isStr {
				r.fail(k, "element %d: want a string, got %T", i, e)
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	r.fail(k, "want a list of strings, got %T", v)
	return nil, false
}

func (r *reader) strmap(k string) (map[string]string, bool) {
	v, ok := r.get(k)
	if !ok {
		return nil, false
	}
	switch mm := v.(type) {
	case map[string]string:
		out := make(map[string]string, len(mm))
		for a, b := range mm {
			out[a] = b
		}
		return out, true
	case map[string]any:
		out := make(map[string]string, len(mm))
		for a, b := range mm {
			s, isStr := b.(string)
			if !isStr {
				r.fail(k, "value of %q: want a string, got %T", a, b)
				return nil, false
			}
			out[a] = s
		}
		return out, true
	case []any:
		if len(mm) == 1 {
			if inner, isMap := mm[0].(map[string]any); isMap {
				sub := reader{m: map[string]any{k: inner}, prefix: r.prefix}
				out, ok := sub.strmap(k)
				r.errs = append(r.errs, sub.errs...)
				return out, ok
			}
		}
	}
	r.fail(k, "want a map of strings, got %T", v)
	return nil, false
}

// blocks accepts a map, a list of maps (HCL blocks or a JSON list).
func (r *reader) blocks(k string) []map[string]any {
	v, ok := r.get(k)
	if !ok {
		return nil
	}
	switch b := v.(type) {
	case map[string]any:
		return []map[string]any{b}
	case []map[string]any:
		return b
	case []any:
		out := make([]map[string]any, 0, len(b))
		for i, e := range b {
			mm, isMap := e.(map[string]any)
			if !isMap {
				r.fail(k, "element %d: want a block, got %T", i, e)
				return nil
			}
			out = append(out, mm)
		}
		return out
	}
	r.fail(k, "want a block or list of blocks, got %T", v)
	return nil
}

func (r *reader) done() error {
	var unknown []string
	for k := range r.m {
		if !r.seen[k] {
			unknown = append(unknown, r.prefix+k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		r.errs = append(r.errs, k+": unknown key")
	}
	if len(r.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", drivers.ErrInvalidConfig, strings.Join(r.errs, "; "))
}
