package taskrunner

import (
	"strings"

	"github.com/drover/drover/api"
)

// Interpolate replaces ${...} references in s: task env variables
// (${NOMAD_ALLOC_ID}, ${DROVER_TASK_DIR}), ${env["X"]}, node fields
// (${node.unique.id}, ${node.unique.name}, ${node.datacenter},
// ${node.region}, ${node.class}, ${node.pool}), ${attr.<name>} and
// ${meta.<key>} (node meta). Unknown references are left unchanged.
func Interpolate(s string, env map[string]string, node *api.Node) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+j]
		if v, ok := lookup(strings.TrimSpace(ref), env, node); ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+j+1])
		}
		s = s[i+j+1:]
	}
	return b.String()
}

func lookup(ref string, env map[string]string, node *api.Node) (string, bool) {
	if rest, ok := strings.CutPrefix(ref, "env["); ok && strings.HasSuffix(rest, "]") {
		key := strings.Trim(strings.TrimSuffix(rest, "]"), `"'`)
		v, ok := env[key]
		return v, ok
	}
	if v, ok := env[ref]; ok {
		return v, true
	}
	if node == nil {
		return "", false
	}
	switch ref {
	case "node.unique.id":
		return node.ID, true
	case "node.unique.name":
		return node.Name, true
	case "node.datacenter":
		return node.Datacenter, true
	case "node.region":
		if r, ok := node.Attributes["region"]; ok {
			return r, true
		}
		return api.DefaultRegion, true
	case "node.class":
		return node.NodeClass, true
	case "node.pool":
		return node.NodePool, true
	}
	if k, ok := strings.CutPrefix(ref, "attr."); ok {
		v, ok := node.Attributes[k]
		return v, ok
	}
	if k, ok := strings.CutPrefix(ref, "meta."); ok {
		v, ok := node.Meta[k]
		return v, ok
	}
	return "", false
}

// InterpolateConfig returns a copy of a driver config with every string
// (in nested maps and lists too) interpolated.
func InterpolateConfig(cfg map[string]any, env map[string]string, node *api.Node) map[string]any {
	if cfg == nil {
		return nil
	}
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		out[k] = interpolateValue(v, env, node)
	}
	return out
}

func interpolateValue(v any, env map[string]string, node *api.Node) any {
	switch x := v.(type) {
	case string:
		return Interpolate(x, env, node)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = interpolateValue(e, env, node)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = Interpolate(e, env, node)
		}
		return out
	case map[string]any:
		return InterpolateConfig(x, env, node)
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			out[i] = InterpolateConfig(e, env, node)
		}
		return out
	default:
		return v
	}
}
