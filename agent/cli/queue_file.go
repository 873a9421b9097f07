package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/drover/drover/api"
)

// Limits of a queue file.
const (
	maxQueueFile   = 1 << 20 // bytes
	maxQueueBlocks = 256     // queues in one file
)

// queueFileHelp documents the queue file (queue apply's long help).
const queueFileHelp = `A queue file holds one or more queue blocks, applied all or none (a
parent and its children may be in one file, in any order):

  queue "team-a" {
    description = "team A"
    weight      = 2      # share beyond guarantees among siblings (default 1)
    priority    = 10     # siblings with higher priority are served first
    guaranteed {
      gpu    = 16        # any model
      cpu    = 64000     # MHz
      memory = 262144    # MB
      gpu_models = { "H100" = 8 }   # per model: "H100", "A100-80GB", "nvidia/gpu/H100" ...
    }
    limit {
      gpu = 32
      gpu_models = { "nvidia/gpu/H100" = 16 }
    }
  }

  queue "team-a/train" {   # the parent is the name's prefix (team-a)
    guaranteed { gpu = 8 }
  }

In a limit, an unset or zero gpu, cpu or memory means no cap, while a model
listed in gpu_models is capped at its value (0 forbids it). A gpu_models key
counts every GPU whose model it names: "H100" counts an "NVIDIA H100 80GB
HBM3" (see a node's device aliases); MIG instances are not counted by queues. A JSON file
holds one api.Queue object, an array of them, or {"Queues": [...]}.`

// readQueues reads the queues of an HCL or JSON file; HCL problems are
// file:line:col: message.
func readQueues(path string) ([]*api.Queue, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read queue file: %w", err)
	}
	return parseQueues(path, src)
}

func parseQueues(path string, src []byte) ([]*api.Queue, error) {
	if len(src) > maxQueueFile {
		return nil, fmt.Errorf("%s: over the %d byte limit", path, maxQueueFile)
	}
	if t := bytes.TrimSpace(src); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return parseQueuesJSON(path, t)
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	root, diags := f.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "queue", LabelNames: []string{"name"}}}})
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	if len(root.Blocks) == 0 || len(root.Blocks) > maxQueueBlocks {
		return nil, fmt.Errorf("%s: want 1 to %d queue blocks, found %d", path, maxQueueBlocks, len(root.Blocks))
	}
	seen := map[string]*hcl.Block{}
	var out []*api.Queue
	for _, b := range root.Blocks {
		if prev := seen[b.Labels[0]]; prev != nil {
			return nil, fmt.Errorf("%s:%d:%d: queue %q is defined twice (first at line %d)",
				path, b.DefRange.Start.Line, b.DefRange.Start.Column, b.Labels[0], prev.DefRange.Start.Line)
		}
		seen[b.Labels[0]] = b
		q, diags := decodeQueueBlock(b)
		if diags.HasErrors() {
			return nil, diagErr(diags)
		}
		if q.Parent == "" {
			q.Parent = api.ParentOf(q.Name)
		}
		if err := q.Validate(); err != nil {
			return nil, fmt.Errorf("%s:%d:%d: %w", path, b.DefRange.Start.Line, b.DefRange.Start.Column, err)
		}
		out = append(out, q)
	}
	return out, nil
}

func decodeQueueBlock(b *hcl.Block) (*api.Queue, hcl.Diagnostics) {
	q := &api.Queue{Name: b.Labels[0]}
	c, diags := b.Body.Content(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "parent"}, {Name: "description"}, {Name: "weight"}, {Name: "priority"}, {Name: "idle_timeout"}, {Name: "idle_action"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "guaranteed"}, {Type: "limit"}},
	})
	for name, dst := range map[string]any{"parent": &q.Parent, "description": &q.Description, "weight": &q.Weight, "priority": &q.Priority,
		"idle_action": &q.IdleAction} {
		if a := c.Attributes[name]; a != nil {
			diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, dst)...)
		}
	}
	if a := c.Attributes["idle_timeout"]; a != nil {
		var s string
		if d := gohcl.DecodeExpression(a.Expr, nil, &s); d.HasErrors() {
			diags = append(diags, d...)
		} else if v, err := time.ParseDuration(s); err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid idle_timeout",
				Detail: fmt.Sprintf("idle_timeout %q: want a duration such as \"2h\"", s), Subject: a.Expr.Range().Ptr()})
		} else {
			q.IdleTimeout = v
		}
	}
	for _, rb := range c.Blocks {
		dst := &q.Guaranteed
		if rb.Type == "limit" {
			dst = &q.Limit
		}
		if *dst != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate " + rb.Type + " block",
				Detail: "a queue has at most one " + rb.Type + " block", Subject: rb.DefRange.Ptr()})
			continue
		}
		r, d := decodeQueueResources(rb)
		diags = append(diags, d...)
		*dst = r
	}
	return q, diags
}

func decodeQueueResources(b *hcl.Block) (*api.QueueResources, hcl.Diagnostics) {
	r := &api.QueueResources{}
	c, diags := b.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "gpu"}, {Name: "cpu"}, {Name: "memory"}, {Name: "gpu_models"}}})
	for name, dst := range map[string]any{"gpu": &r.GPUs, "cpu": &r.CPU, "memory": &r.MemoryMB, "gpu_models": &r.GPUsByModel} {
		if a := c.Attributes[name]; a != nil {
			diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, dst)...)
		}
	}
	return r, diags
}

func parseQueuesJSON(path string, src []byte) ([]*api.Queue, error) {
	var out []*api.Queue
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	var probe map[string]json.RawMessage
	_ = json.Unmarshal(src, &probe) // a syntax error is reported by the decode below
	_, batch := probe["Queues"]
	var err error
	switch {
	case src[0] == '[':
		err = dec.Decode(&out)
	case batch:
		var b api.QueueUpsertRequest
		err = dec.Decode(&b)
		out = b.Queues
	default:
		var q api.Queue
		err = dec.Decode(&q)
		out = []*api.Queue{&q}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 || len(out) > maxQueueBlocks {
		return nil, fmt.Errorf("%s: want 1 to %d queues, found %d", path, maxQueueBlocks, len(out))
	}
	for _, q := range out {
		if q == nil {
			return nil, fmt.Errorf("%s: null queue", path)
		}
		if q.Parent == "" {
			q.Parent = api.ParentOf(q.Name)
		}
		if err := q.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}
