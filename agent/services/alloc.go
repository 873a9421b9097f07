package services

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/internal/clock"
)

// AllocConfig is what an Alloc needs from its alloc runner.
type AllocConfig struct {
	Alloc     *api.Allocation
	Node      *api.Node
	Registrar *Registrar
	// Exec returns the driver and task ID to run a script check in.
	Exec func(task string) (drivers.Execer, string, error)
	// Restart restarts a task (check_restart); task "" is every running
	// task of the alloc (a group service's check naming no task).
	Restart func(ctx context.Context, task, reason string) error
	// Interpolate expands ${...} in service names and tags.
	Interpolate func(string) string
	Logger      *slog.Logger
	// Clock gives check results their time and check_restart its grace
	// (clock.Real when nil).
	Clock clock.Clock
}

// Alloc runs the services of one allocation.
type Alloc struct {
	cfg AllocConfig
	log *slog.Logger

	mu        sync.Mutex
	instances []*instance
	stopped   bool
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// instance is one service of the group or of a task.
type instance struct {
	svc    *api.Service
	task   string // owning task; "" for a group service
	id     string
	reg    api.ServiceRegistration
	checks []*checkState
	active bool
	cancel context.CancelFunc
}

type checkState struct {
	inst *instance
	c    *api.ServiceCheck
	id   string
	// under Alloc.mu:
	res          api.CheckResult
	health       string // counted status (thresholds applied); "" until the first result
	okRun, badRn int    // consecutive passing / failing results
	unhealthy    int    // consecutive unhealthy results for check_restart
	graceUntil   time.Time
}

// NewAlloc builds the services of an alloc; nothing runs until Update
// sees a task running.
func NewAlloc(cfg AllocConfig) *Alloc {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Interpolate == nil {
		cfg.Interpolate = func(s string) string { return s }
	}
	s := &Alloc{cfg: cfg, log: cfg.Logger.With("component", "services", "alloc_id", cfg.Alloc.ID)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	a := cfg.Alloc
	var tg *api.TaskGroup
	if a.Job != nil {
		tg = a.Job.LookupTaskGroup(a.TaskGroup)
	}
	if tg == nil {
		return s
	}
	add := func(svc *api.Service, task string) {
		if svc == nil || (svc.Provider != "" && svc.Provider != api.ServiceProviderNomad && svc.Provider != "drover") {
			return
		}
		name := cfg.Interpolate(api.ServiceName(svc, a.JobID, tg.Name, task))
		inst := &instance{svc: svc, task: task, id: api.ServiceRegistrationID(a.ID, tg.Name, task, name, svc.PortLabel)}
		addr, port := s.address(svc.PortLabel, task)
		tags := make([]string, 0, len(svc.Tags))
		for _, t := range svc.Tags {
			tags = append(tags, cfg.Interpolate(t))
		}
		inst.reg = api.ServiceRegistration{ID: inst.id, ServiceName: name, Namespace: a.Namespace, NodeID: a.NodeID, JobID: a.JobID,
			AllocID: a.ID, Tags: tags, Address: addr, Port: port}
		if cfg.Node != nil {
			inst.reg.Datacenter = cfg.Node.Datacenter
		}
		for i, c := range svc.Checks {
			if c == nil {
				continue
			}
			cname := c.Name
			if cname == "" {
				cname = fmt.Sprintf("service: %q check", name)
			}
			id := inst.id + "-check-" + strconv.Itoa(i)
			cs := &checkState{inst: inst, c: c, id: id}
			cs.res = api.CheckResult{ID: id, Mode: "healthiness", Status: api.CheckPending, Health: api.ServiceHealthCritical,
				Group: tg.Name, Task: checkTask(c, svc, task), Service: name, Check: cname}
			inst.checks = append(inst.checks, cs)
		}
		if len(inst.checks) > 0 {
			inst.reg.Health = api.ServiceHealthCritical // until the checks pass
		}
		s.instances = append(s.instances, inst)
	}
	for _, svc := range tg.Services {
		add(svc, "")
	}
	for _, t := range tg.Tasks {
		for _, svc := range t.Services {
			add(svc, t.Name)
		}
	}
	return s
}

func checkTask(c *api.ServiceCheck, svc *api.Service, task string) string {
	switch {
	case c.TaskName != "":
		return c.TaskName
	case task != "":
		return task
	}
	return svc.TaskName
}

// address resolves a port label to the address and port to advertise: a
// label of the alloc's ports (its host IP, or the node's address), or a
// literal port number.
func (s *Alloc) address(label, task string) (string, int) {
	ip := ""
	if n := s.cfg.Node; n != nil {
		ip = n.Attributes["unique.network.ip-address"]
	}
	if ip == "" {
		ip = "127.0.0.1"
	}
	if label == "" {
		return ip, 0
	}
	if ar := s.cfg.Alloc.AllocatedResources; ar != nil {
		for _, p := range ar.Shared.Ports {
			if p.Label == label {
				if p.HostIP != "" {
					ip = p.HostIP
				}
				return ip, p.Value
			}
		}
		for name, tr := range ar.Tasks {
			if task != "" && name != task || tr == nil {
				continue
			}
			for _, nw := range tr.Networks {
				for _, p := range append(slices.Clone(nw.ReservedPorts), nw.DynamicPorts...) {
					if p.Label == label {
						if nw.IP != "" {
							ip = nw.IP
						}
						return ip, p.Value
					}
				}
			}
		}
	}
	if n, err := strconv.Atoi(label); err == nil {
		return ip, n
	}
	return ip, 0
}

// Update registers the services whose tasks run and deregisters those
// whose tasks stopped; a group service is up while any task of the alloc
// runs. running is the set of running task names; startedAt their start.
func (s *Alloc) Update(running map[string]time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	changed := false
	for _, inst := range s.instances {
		var up bool
		var since time.Time
		if inst.task == "" {
			up = len(running) > 0
			for _, t := range running {
				if t.After(since) {
					since = t
				}
			}
		} else {
			since, up = running[inst.task]
		}
		switch {
		case up && !inst.active:
			s.startLocked(inst, since)
			changed = true
		case !up && inst.active:
			s.stopLocked(inst)
			changed = true
		}
	}
	if changed {
		s.publishLocked()
	}
}

// Deregister removes every registration at once (the alloc is stopping:
// traffic must leave it before shutdown_delay and the kill) and stops the
// checks. Update does nothing afterwards.
func (s *Alloc) Deregister() {
	if s.stop() && len(s.instances) > 0 && s.cfg.Registrar != nil {
		s.cfg.Registrar.RemoveAlloc(s.cfg.Alloc.ID)
	}
	s.wg.Wait()
}

// Close stops the checks and leaves the registrations as they are (the
// agent shuts down; its tasks keep running for a later agent).
func (s *Alloc) Close() {
	s.stop()
	s.wg.Wait()
}

// stop ends Update's work and the checks; false when already stopped.
func (s *Alloc) stop() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.stopped = true
	for _, inst := range s.instances {
		if inst.active {
			s.stopLocked(inst)
		}
	}
	s.cancel()
	return true
}

// HasServices reports whether the alloc registers any service.
func (s *Alloc) HasServices() bool { return len(s.instances) > 0 }

// Checks returns the latest result of every check, by check ID.
func (s *Alloc) Checks() map[string]*api.CheckResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]*api.CheckResult{}
	for _, inst := range s.instances {
		for _, cs := range inst.checks {
			r := cs.res
			out[cs.id] = &r
		}
	}
	return out
}

func (s *Alloc) startLocked(inst *instance, since time.Time) {
	inst.active = true
	now := s.cfg.Clock.Now()
	for _, cs := range inst.checks {
		cs.health, cs.okRun, cs.badRn, cs.unhealthy = "", 0, 0, 0
		cs.res.Status, cs.res.Health, cs.res.Output = api.CheckPending, api.ServiceHealthCritical, ""
		cs.graceUntil = time.Time{}
		if cr := cs.c.CheckRestart; cr != nil {
			cs.graceUntil = maxTime(since, now).Add(cr.Grace)
		}
	}
	if len(inst.checks) > 0 {
		inst.reg.Health, inst.reg.HealthTime = api.ServiceHealthCritical, now.UnixNano()
	}
	ctx, cancel := context.WithCancel(s.ctx)
	inst.cancel = cancel
	for _, cs := range inst.checks {
		s.wg.Add(1)
		go s.runLoop(ctx, cs)
	}
}

func (s *Alloc) stopLocked(inst *instance) {
	inst.active = false
	if inst.cancel != nil {
		inst.cancel()
		inst.cancel = nil
	}
}

// publishLocked hands the registrations of the active instances to the
// registrar.
func (s *Alloc) publishLocked() {
	if s.cfg.Registrar == nil || len(s.instances) == 0 {
		return
	}
	var regs []*api.ServiceRegistration
	for _, inst := range s.instances {
		if inst.active {
			r := inst.reg
			regs = append(regs, &r)
		}
	}
	s.cfg.Registrar.SetAlloc(s.cfg.Alloc.ID, regs)
}

func (s *Alloc) runLoop(ctx context.Context, cs *checkState) {
	defer s.wg.Done()
	interval := cs.c.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	t := target{exec: func() (drivers.Execer, string, error) {
		if s.cfg.Exec == nil {
			return nil, "", fmt.Errorf("script check: %w", drivers.ErrNotSupported)
		}
		return s.cfg.Exec(cs.res.Task)
	}}
	label := cs.c.PortLabel
	if label == "" {
		label = cs.inst.svc.PortLabel
	}
	addr, port := s.address(label, cs.inst.task)
	t.addr = net.JoinHostPort(addr, strconv.Itoa(port))
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		r := runCheck(ctx, cs.c, t)
		if ctx.Err() != nil {
			return
		}
		if restart, reason := s.record(cs, r); restart {
			task := cs.res.Task
			s.log.Info("restarting after unhealthy checks", "task", task, "check", cs.res.Check)
			if err := s.cfg.Restart(ctx, task, reason); err != nil && ctx.Err() == nil {
				s.log.Warn("check_restart failed", "task", task, "error", err)
			}
		}
		timer.Reset(interval)
	}
}

// record stores a result, applies the thresholds, updates the service's
// health and says whether check_restart asks for a restart.
func (s *Alloc) record(cs *checkState, r result) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !cs.inst.active {
		return false, ""
	}
	now := s.cfg.Clock.Now()
	cs.res.StatusCode, cs.res.Output, cs.res.Timestamp = r.code, r.output, now.Unix()
	if r.health == api.ServiceHealthPassing {
		cs.okRun, cs.badRn = cs.okRun+1, 0
	} else {
		cs.okRun, cs.badRn = 0, cs.badRn+1
	}
	switch {
	case r.health == api.ServiceHealthPassing && (cs.health == api.ServiceHealthPassing || cs.okRun >= max(cs.c.SuccessBeforePassing, 1)):
		cs.health = api.ServiceHealthPassing
	case r.health != api.ServiceHealthPassing && (cs.health != api.ServiceHealthPassing || cs.badRn >= max(cs.c.FailuresBeforeCritical, 1)):
		cs.health = r.health
	case cs.health == "":
		cs.health = api.ServiceHealthCritical // passing, but not yet success_before_passing times
	}
	cs.res.Health = cs.health
	cs.res.Status = api.CheckFailure
	if cs.health == api.ServiceHealthPassing {
		cs.res.Status = api.CheckSuccess
	}
	restart, reason := false, ""
	if cr := cs.c.CheckRestart; cr != nil && cr.Limit > 0 && !now.Before(cs.graceUntil) {
		bad := cs.health == api.ServiceHealthCritical || (cs.health == api.ServiceHealthWarning && !cr.IgnoreWarnings)
		if bad {
			cs.unhealthy++
		} else {
			cs.unhealthy = 0
		}
		if cs.unhealthy >= cr.Limit {
			restart = true
			reason = fmt.Sprintf("check %q unhealthy %d times", cs.res.Check, cs.unhealthy)
			cs.unhealthy = 0
			cs.graceUntil = now.Add(cr.Grace)
		}
	}
	if h := instanceHealth(cs.inst); h != cs.inst.reg.Health {
		cs.inst.reg.Health, cs.inst.reg.HealthTime = h, now.UnixNano()
		s.publishLocked()
	}
	return restart, reason
}

// instanceHealth is the worst counted status of the service's checks.
func instanceHealth(inst *instance) string {
	worst := api.ServiceHealthPassing
	for _, cs := range inst.checks {
		switch cs.health {
		case api.ServiceHealthPassing:
		case api.ServiceHealthWarning:
			if worst == api.ServiceHealthPassing {
				worst = api.ServiceHealthWarning
			}
		default:
			return api.ServiceHealthCritical
		}
	}
	return worst
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Names lists the services of the alloc (for logs and tests).
func (s *Alloc) Names() []string {
	names := map[string]bool{}
	for _, inst := range s.instances {
		names[inst.reg.ServiceName] = true
	}
	return slices.Sorted(maps.Keys(names))
}
