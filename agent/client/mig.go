package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drover/drover/agent/allocrunner"
	"github.com/drover/drover/api"
)

// MIGApplier is a DeviceSource that can change its GPUs' MIG layout
// (agent/fingerprint/nvidia's Fingerprinter). GPUs are the physical GPUs
// for the node (api.Node.GPUs); ApplyMIG applies layouts and reads the
// devices again, so Devices and GPUs say what the GPUs are now.
type MIGApplier interface {
	GPUs() []*api.NodeGPU
	ApplyMIG(ctx context.Context, layouts []api.MIGLayout) error
}

// migCapable reports whether the device source can change a MIG layout
// and has a GPU that takes one.
func migCapable(ds DeviceSource) (MIGApplier, bool) {
	m, ok := ds.(MIGApplier)
	if !ok {
		return nil, false
	}
	return m, slices.ContainsFunc(m.GPUs(), func(g *api.NodeGPU) bool { return g.MIGCapable })
}

// migLoop long-polls this node's MIG change (a blocking query on the
// node: GET /v1/node/{id}/client-mig) and applies each pending one once
// (applyMIG). A change still pending after an agent restart is applied
// again: a layout applied twice is the same layout.
func (c *Client) migLoop(ctx context.Context) {
	mig, _ := migCapable(c.devices)
	select {
	case <-c.registeredCh:
	case <-ctx.Done():
		return
	}
	var index uint64
	retry := serverBackoff()
	stale := true // as watchLoop: any server answers, the leader after one behind us did
	done := ""    // the last change applied
	for ctx.Err() == nil {
		var resp *api.NodeClientMIGResponse
		var meta *api.QueryMeta
		err := c.servers.do(ctx, func(cl *api.Client) error {
			qctx, cancel := context.WithTimeout(ctx, c.cfg.AllocWaitTime+30*time.Second)
			defer cancel()
			var err error
			resp, meta, err = cl.NodeClientMIG(qctx, node(c).ID, &api.QueryOptions{WaitIndex: index, WaitTime: c.cfg.AllocWaitTime, AllowStale: stale})
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			stale = false
			d := retry.Next()
			c.log.Warn("watch MIG changes failed", "error", err, "retry_in", d)
			if !c.sleep(ctx, d) {
				return
			}
			continue
		}
		retry.Reset()
		if stale && meta.LastIndex < index {
			stale = false // a server behind what this loop saw
			continue
		}
		stale = true
		if meta.LastIndex == 0 && !c.sleep(ctx, time.Second) { // a server that cannot block
			return
		}
		index = meta.LastIndex
		if ch := resp.Change; ch.Pending() && ch.ID != done {
			done = ch.ID
			c.applyMIG(ctx, mig, ch)
		}
	}
}

// applyMIG applies a pending MIG change once no task of this client uses
// the GPUs it changes (waitGPUsFree), then puts the devices as they are
// now and the outcome (applied, or failed and why) on the node and
// registers it again: the servers end the change with that registration.
func (c *Client) applyMIG(ctx context.Context, mig MIGApplier, ch *api.NodeMIGChange) {
	log := c.log.With("mig_change", ch.ID)
	devs := map[string]bool{}
	for _, l := range ch.Layouts {
		devs[l.GPU] = true
		for _, g := range mig.GPUs() {
			if g.UUID == l.GPU {
				for _, id := range g.DeviceIDs() {
					devs[id] = true
				}
			}
		}
	}
	log.Info("applying MIG layout change", "gpus", len(ch.Layouts))
	err := c.waitGPUsFree(ctx, devs)
	if err == nil {
		err = mig.ApplyMIG(ctx, ch.Layouts)
	}
	if ctx.Err() != nil {
		return // shutting down: the change stays pending for the next agent
	}
	report := &api.NodeMIGChange{ID: ch.ID, Status: api.MIGChangeApplied, UpdateTime: c.cfg.Clock.Now().UnixNano()}
	if err != nil {
		report.Status, report.Error = api.MIGChangeFailed, err.Error()
		log.Warn("MIG layout change failed", "error", err)
	} else {
		log.Info("MIG layout change applied")
	}
	devices, gpus := c.devices.Devices(), mig.GPUs()
	c.mu.Lock()
	n := c.node.Copy()
	n.NodeResources.Devices = devices
	n.GPUs = gpus
	n.MIGChange = report
	c.node = n
	c.mu.Unlock()
	c.reregister()
}

// errGPUsBusy: a task this client runs still uses a GPU to change.
var errGPUsBusy = errors.New("GPUs in use")

// waitGPUsFree waits until no alloc runner of this client holds one of
// devs: those being stopped are waited for; one the servers still want
// running fails the change (a placement the servers committed before
// they took the change; this check is the last word, on the machine).
func (c *Client) waitGPUsFree(ctx context.Context, devs map[string]bool) error {
	for {
		c.mu.Lock()
		runners := make([]*allocrunner.AllocRunner, 0, len(c.runners))
		for _, ar := range c.runners {
			runners = append(runners, ar)
		}
		c.mu.Unlock()
		var stopping []<-chan struct{}
		var running []string
		for _, ar := range runners {
			select {
			case <-ar.WaitCh():
				continue // finished
			default:
			}
			a := ar.Alloc()
			if a.ClientTerminalStatus() || !api.AllocHolds(a, devs) {
				continue
			}
			if a.DesiredStatus == api.AllocDesiredStatusRun || a.DesiredStatus == "" {
				running = append(running, fmt.Sprintf("%s (job %q)", shortAlloc(a.ID), a.JobID))
				continue
			}
			stopping = append(stopping, ar.WaitCh())
		}
		if len(running) > 0 {
			slices.Sort(running)
			return fmt.Errorf("%w: allocations %s run on them", errGPUsBusy, strings.Join(running, ", "))
		}
		if len(stopping) == 0 {
			return nil
		}
		for _, ch := range stopping {
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

func shortAlloc(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
