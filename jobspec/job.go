package jobspec

import (
	"strings"

	"github.com/drover/drover/api"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/dynblock"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

var (
	jobSchema = accept(schema("id name region namespace type priority datacenters node_pool all_at_once meta preemptible min_runtime queue idle_timeout spot max_disruption",
		"group:name", "task:name", "constraint", "affinity", "spread", "update", "periodic", "parameterized",
		"meta", "reschedule", "migrate", "gang", "placement", "multiregion"),
		"vault_token vault_namespace consul_token consul_namespace", "vault", "consul", "ui")
	groupSchema = accept(schema("count shutdown_delay stop_after_client_disconnect max_client_disconnect meta idle_timeout spot min_runtime",
		"task:name", "constraint", "affinity", "spread", "restart", "reschedule", "ephemeral_disk",
		"update", "migrate", "network", "service", "meta", "gang", "disconnect", "scaling", "volume:name"),
		"prevent_reschedule_on_lost max_run_duration", "consul")
	volumeSchema     = accept(schema("type source read_only access_mode attachment_mode per_alloc sticky"), "", "mount_options")
	scalingSchema    = schema("enabled min max type", "policy")
	disconnectSchema = accept(schema("lost_after stop_on_client_after"), "replace reconcile")
	gangSchema       = schema("min timeout stale_grace", "topology")
	topologySchema   = schema("level mode")
	constraintSchema = schema("attribute operator value distinct_hosts distinct_property version semver regexp set_contains set_contains_all set_contains_any")
	affinitySchema   = schema("attribute operator value weight version semver regexp set_contains set_contains_all set_contains_any")
	spreadSchema     = schema("attribute weight", "target:value")
	targetSchema     = schema("percent")
	restartSchema    = schema("attempts interval delay mode render_templates")
	rescheduleSchema = schema("attempts interval delay delay_function max_delay unlimited")
	updateSchema     = schema("stagger max_parallel health_check min_healthy_time healthy_deadline progress_deadline canary auto_revert auto_promote")
	migrateSchema    = schema("max_parallel health_check min_healthy_time healthy_deadline")
	periodicSchema   = schema("cron crons prohibit_overlap time_zone enabled")
	paramSchema      = schema("payload meta_required meta_optional")
	diskSchema       = schema("sticky migrate size")
	networkSchema    = accept(schema("mode mbits hostname", "port:label", "dns"), "device cidr ip", "cni")
	portSchema       = accept(schema("static to host_network"), "ignore_collision")
	dnsSchema        = schema("servers searches options")
)

// job decodes the job block.
func (d *decoder) job(b *hcl.Block) *api.Job {
	root := b.Body
	if sb, ok := b.Body.(*hclsyntax.Body); ok {
		d.blocks = make(map[int]*hclsyntax.Block, 32)
		indexBlocks(sb, d.blocks)
	}
	body := root
	for _, sb := range d.blocks {
		if sb.Type == "dynamic" {
			// Only files that use dynamic blocks pay for expanding them.
			body = dynblock.Expand(root, d.ctx)
			break
		}
	}
	j := &api.Job{ID: b.Labels[0]}
	d.checkName("job", b, api.CheckJobID)
	c := d.content(body, jobSchema)
	// id = "..." names the job instead of the label, as in Nomad.
	if a := c.Attributes["id"]; a != nil && d.str(c, "id", &j.ID) {
		if err := api.CheckJobID(j.ID); err != nil {
			d.errorf(a.Expr.Range(), "Invalid job id: %v", err)
		}
	}
	if c.Attributes["id"] != nil && c.Attributes["name"] == nil {
		j.Name = b.Labels[0] // Nomad names the job after its label
	}
	if d.str(c, "name", &j.Name) {
		if err := api.CheckJobName(j.Name); err != nil {
			d.errorf(c.Attributes["name"].Expr.Range(), "Invalid job name: %v", err)
		}
	}
	d.str(c, "region", &j.Region)
	d.str(c, "namespace", &j.Namespace)
	d.enum(c, "type", "job type", &j.Type, api.JobTypeService, api.JobTypeBatch, api.JobTypeSystem, api.JobTypeSysBatch)
	d.jobType = j.Type
	if d.jobType == "" {
		d.jobType = api.JobTypeService
	}
	d.integer(c, "priority", &j.Priority, api.MinPriority, api.MaxPriority)
	d.strs(c, "datacenters", &j.Datacenters)
	d.str(c, "node_pool", &j.NodePool)
	if d.str(c, "queue", &j.Queue) && !api.ValidQueueName(j.Queue) {
		d.errorf(c.Attributes["queue"].Expr.Range(), "Invalid queue %q: want slash-separated parts of letters, digits, - or _", j.Queue)
	}
	d.boolean(c, "all_at_once", &j.AllAtOnce)
	var preemptible bool
	if d.boolean(c, "preemptible", &preemptible) {
		j.Preemptible = &preemptible
	}
	d.dur(c, "min_runtime", &j.MinRuntime)
	d.dur(c, "idle_timeout", &j.IdleTimeout)
	d.integer(c, "max_disruption", &j.MaxDisruption, 0, 10000)
	d.enum(c, "spot", "spot", &j.Spot, api.SpotAllow, api.SpotNever, api.SpotPrefer)
	j.Meta = d.kvAttr(c, "meta", j.Meta)

	var resched *api.ReschedulePolicy
	var migrate *api.MigrateStrategy
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "constraint":
			j.Constraints = append(j.Constraints, d.constraint(blk))
		case "affinity":
			j.Affinities = append(j.Affinities, d.affinity(blk))
		case "spread":
			j.Spreads = append(j.Spreads, d.spread(blk))
		case "update":
			j.Update = d.update(d.once(j.Update != nil, blk), api.DefaultUpdateStrategy())
		case "periodic":
			j.Periodic = d.periodic(d.once(j.Periodic != nil, blk))
		case "parameterized":
			j.ParameterizedJob = d.parameterized(d.once(j.ParameterizedJob != nil, blk))
		case "meta":
			j.Meta = d.mergeKV(j.Meta, hcl.Blocks{blk})
		case "reschedule":
			resched = d.reschedule(d.once(resched != nil, blk), api.DefaultReschedulePolicy(d.jobType))
		case "migrate":
			migrate = d.migrate(d.once(migrate != nil, blk))
		case "gang":
			j.Gang = d.gang(d.once(j.Gang != nil, blk))
		case "placement":
			j.Placement = d.placement(d.once(j.Placement != nil, blk))
		case "multiregion":
			j.Multiregion = d.multiregion(d.once(j.Multiregion != nil, blk))
		}
	}
	// A task written directly in the job is a group of its own name
	// holding only it (Nomad's rule); such groups come first.
	names := map[string]hcl.Range{}
	for _, typ := range []string{"task", "group"} {
		for _, blk := range c.Blocks {
			if blk.Type != typ {
				continue
			}
			name := blk.Labels[0]
			if prev, dup := names[name]; dup {
				d.errorf(blk.LabelRanges[0], "Duplicate group %q: already defined at %s", name, prev)
			}
			names[name] = blk.DefRange
			if typ == "task" {
				j.TaskGroups = append(j.TaskGroups, d.taskGroup(blk, resched, migrate))
			} else {
				j.TaskGroups = append(j.TaskGroups, d.group(blk, j, resched, migrate))
			}
		}
	}
	if len(j.TaskGroups) == 0 {
		d.errorf(b.DefRange, "Missing group: job %q has no group block", j.ID)
	}
	return j
}

// checkName reports a job, group or task label that check refuses (these
// names become path elements on clients and in URLs), at the label.
func (d *decoder) checkName(what string, b *hcl.Block, check func(string) error) {
	if err := check(b.Labels[0]); err != nil {
		d.errorf(b.LabelRanges[0], "Invalid %s name: %v", what, err)
	}
}

// once reports a repeated singleton block and returns b.
func (d *decoder) once(seen bool, b *hcl.Block) *hcl.Block {
	if seen {
		d.errorf(b.DefRange, "Duplicate %s block: only one is allowed here", b.Type)
	}
	return b
}

// taskGroup wraps a task written directly in the job in a group of the
// task's name and count 1, with the job's reschedule and migrate.
func (d *decoder) taskGroup(b *hcl.Block, resched *api.ReschedulePolicy, migrate *api.MigrateStrategy) *api.TaskGroup {
	tg := &api.TaskGroup{Name: b.Labels[0], Count: 1}
	inherit(tg, resched, migrate)
	tg.Tasks = []*api.Task{d.task(b, tg)}
	return tg
}

// inherit gives a group copies of the job's reschedule and migrate.
func inherit(tg *api.TaskGroup, resched *api.ReschedulePolicy, migrate *api.MigrateStrategy) {
	if resched != nil {
		r := *resched
		tg.ReschedulePolicy = &r
	}
	if migrate != nil {
		m := *migrate
		tg.Migrate = &m
	}
}

func (d *decoder) group(b *hcl.Block, j *api.Job, resched *api.ReschedulePolicy, migrate *api.MigrateStrategy) *api.TaskGroup {
	tg := &api.TaskGroup{Name: b.Labels[0], Count: 1}
	d.checkName("group", b, api.CheckName)
	c := d.content(b.Body, groupSchema)
	hasCount := d.integer(c, "count", &tg.Count, 0, anyInt)
	d.dur(c, "shutdown_delay", &tg.ShutdownDelay)
	d.dur(c, "stop_after_client_disconnect", &tg.StopAfterClientDisconnect)
	d.dur(c, "max_client_disconnect", &tg.MaxClientDisconnect)
	d.dur(c, "idle_timeout", &tg.IdleTimeout)
	d.dur(c, "min_runtime", &tg.MinRuntime)
	d.enum(c, "spot", "spot", &tg.Spot, api.SpotAllow, api.SpotNever, api.SpotPrefer)
	tg.Meta = d.kvAttr(c, "meta", tg.Meta)
	inherit(tg, resched, migrate)
	var hasRestart, hasResched, hasMigrate, hasUpdate, hasDisk, hasDisconnect bool
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "constraint":
			tg.Constraints = append(tg.Constraints, d.constraint(blk))
		case "affinity":
			tg.Affinities = append(tg.Affinities, d.affinity(blk))
		case "spread":
			tg.Spreads = append(tg.Spreads, d.spread(blk))
		case "restart":
			tg.RestartPolicy = d.restart(d.once(hasRestart, blk), api.DefaultRestartPolicy(d.jobType))
			hasRestart = true
		case "reschedule":
			base := tg.ReschedulePolicy
			if base == nil {
				base = api.DefaultReschedulePolicy(d.jobType)
			}
			tg.ReschedulePolicy = d.reschedule(d.once(hasResched, blk), base)
			hasResched = true
		case "ephemeral_disk":
			tg.EphemeralDisk = d.disk(d.once(hasDisk, blk))
			hasDisk = true
		case "update":
			base := j.Update
			if base == nil {
				base = api.DefaultUpdateStrategy()
			}
			tg.Update = d.update(d.once(hasUpdate, blk), base)
			hasUpdate = true
		case "migrate":
			tg.Migrate = d.migrate(d.once(hasMigrate, blk))
			hasMigrate = true
		case "network":
			tg.Networks = append(tg.Networks, d.network(blk))
		case "service":
			tg.Services = append(tg.Services, d.service(blk))
		case "meta":
			tg.Meta = d.mergeKV(tg.Meta, hcl.Blocks{blk})
		case "gang":
			tg.Gang = d.gang(d.once(tg.Gang != nil, blk))
		case "disconnect":
			d.disconnect(d.once(hasDisconnect, blk), tg, c)
			hasDisconnect = true
		case "scaling":
			tg.Scaling = d.scaling(d.once(tg.Scaling != nil, blk), tg)
		case "volume":
			d.volume(blk, tg)
		}
	}
	// A group that leaves count out but scales starts at scaling's min
	// (Nomad's rule; min itself defaults to the count, 1).
	if !hasCount && c.Attributes["count"] == nil && tg.Scaling != nil {
		tg.Count = int(tg.Scaling.Min)
	}
	names := map[string]hcl.Range{}
	for _, blk := range c.Blocks {
		if blk.Type != "task" {
			continue
		}
		name := blk.Labels[0]
		if prev, dup := names[name]; dup {
			d.errorf(blk.LabelRanges[0], "Duplicate task %q in group %q: already defined at %s", name, tg.Name, prev)
		}
		names[name] = blk.DefRange
		tg.Tasks = append(tg.Tasks, d.task(blk, tg))
	}
	if len(tg.Tasks) == 0 {
		d.errorf(b.DefRange, "Missing task: group %q has no task block", tg.Name)
	}
	return tg
}

// disconnect decodes Nomad 1.8's disconnect block into the group's
// disconnect settings; the older group attributes can't be mixed with it.
func (d *decoder) disconnect(b *hcl.Block, tg *api.TaskGroup, group *hcl.BodyContent) {
	for _, old := range []string{"max_client_disconnect", "stop_after_client_disconnect"} {
		if a := group.Attributes[old]; a != nil {
			d.errorf(a.NameRange, "Conflicting disconnect settings: %s and the disconnect block exclude each other", old)
		}
	}
	c := d.content(b.Body, disconnectSchema)
	d.dur(c, "lost_after", &tg.MaxClientDisconnect)
	d.dur(c, "stop_on_client_after", &tg.StopAfterClientDisconnect)
}

// scaling decodes a group's scaling block: enabled (default true), min
// (default the group's count), max (required), type and the autoscaler's
// policy {} as written.
func (d *decoder) scaling(b *hcl.Block, tg *api.TaskGroup) *api.ScalingPolicy {
	p := &api.ScalingPolicy{Enabled: true, Min: int64(tg.Count)}
	c := d.content(b.Body, scalingSchema)
	d.boolean(c, "enabled", &p.Enabled)
	var n int
	if d.integer(c, "min", &n, 0, anyInt) {
		p.Min = int64(n)
	}
	if a := c.Attributes["max"]; a == nil {
		d.errorf(b.DefRange, "Missing max: a scaling block needs max")
	} else if d.integer(c, "max", &n, 0, anyInt) {
		p.Max = int64(n)
	}
	d.enum(c, "type", "scaling type", &p.Type, api.ScalingPolicyTypeHorizontal)
	for _, blk := range c.Blocks {
		p.Policy = d.config(d.once(p.Policy != nil, blk))
	}
	return p
}

// gang decodes a gang block: gang { min = 4  timeout = "10m"
// topology { level = "rack"  mode = "required" } }.
func (d *decoder) gang(b *hcl.Block) *api.Gang {
	g := &api.Gang{}
	c := d.content(b.Body, gangSchema)
	d.integer(c, "min", &g.Min, 0, anyInt)
	d.dur(c, "timeout", &g.Timeout)
	d.dur(c, "stale_grace", &g.StaleGrace)
	for _, blk := range c.Blocks {
		t := &api.Topology{}
		tc := d.content(d.once(g.Topology != nil, blk).Body, topologySchema)
		if !d.str(tc, "level", &t.Level) || t.Level == "" {
			d.errorf(blk.DefRange, "Missing level: topology needs a level such as \"rack\" (node meta topology.<level>)")
		}
		d.enum(tc, "mode", "topology mode", &t.Mode, api.TopologyRequired, api.TopologyPreferred)
		g.Topology = t
	}
	return g
}

// operand applies the constraint shorthands (distinct_hosts = true,
// version = "...", ...) and checks the operator.
func (d *decoder) operand(c *hcl.BodyContent, op, rtarget *string) {
	if a := c.Attributes["operator"]; a != nil && d.str(c, "operator", op) {
		if !api.ValidConstraintOperator(*op) {
			d.errorf(a.Expr.Range(), "Invalid operator %q: want one of %s", *op, strings.Join(api.ConstraintOperators, ", "))
		}
	}
	for _, short := range []string{api.ConstraintVersion, api.ConstraintSemver, api.ConstraintRegex,
		api.ConstraintSetContains, api.ConstraintSetContainsAll, api.ConstraintSetContainsAny} {
		if d.str(c, short, rtarget) {
			*op = short
		}
	}
	if *op == "" {
		*op = "="
	}
}

func (d *decoder) constraint(b *hcl.Block) *api.Constraint {
	c := d.content(b.Body, constraintSchema)
	con := &api.Constraint{}
	d.str(c, "attribute", &con.LTarget)
	d.str(c, "value", &con.RTarget)
	d.operand(c, &con.Operand, &con.RTarget)
	var distinct bool
	if d.boolean(c, "distinct_hosts", &distinct) && distinct {
		con.Operand = api.ConstraintDistinctHosts
	}
	if a := c.Attributes["distinct_property"]; a != nil && d.str(c, "distinct_property", &con.LTarget) {
		con.Operand = api.ConstraintDistinctProperty
	}
	return con
}

func (d *decoder) affinity(b *hcl.Block) *api.Affinity {
	c := d.content(b.Body, affinitySchema)
	a := &api.Affinity{Weight: api.DefaultAffinityWeight}
	d.str(c, "attribute", &a.LTarget)
	d.str(c, "value", &a.RTarget)
	d.operand(c, &a.Operand, &a.RTarget)
	var w int
	if d.integer(c, "weight", &w, -100, 100) {
		if w == 0 {
			d.errorf(c.Attributes["weight"].Expr.Range(), "Invalid value for \"weight\": must be non-zero")
		}
		a.Weight = int8(w)
	}
	return a
}

func (d *decoder) spread(b *hcl.Block) *api.Spread {
	c := d.content(b.Body, spreadSchema)
	s := &api.Spread{}
	d.str(c, "attribute", &s.Attribute)
	var w int
	if d.integer(c, "weight", &w, 0, 100) {
		s.Weight = int8(w)
	}
	for _, blk := range c.Blocks {
		tc := d.content(blk.Body, targetSchema)
		t := &api.SpreadTarget{Value: blk.Labels[0]}
		var pct int
		if d.integer(tc, "percent", &pct, 0, 100) {
			t.Percent = uint8(pct)
		}
		s.SpreadTarget = append(s.SpreadTarget, t)
	}
	return s
}

func (d *decoder) restart(b *hcl.Block, base *api.RestartPolicy) *api.RestartPolicy {
	r := *base
	c := d.content(b.Body, restartSchema)
	d.integer(c, "attempts", &r.Attempts, 0, anyInt)
	d.dur(c, "interval", &r.Interval)
	d.dur(c, "delay", &r.Delay)
	if d.str(c, "mode", &r.Mode) && r.Mode != api.RestartModeFail && r.Mode != api.RestartModeDelay {
		d.errorf(c.Attributes["mode"].Expr.Range(), "Invalid restart mode %q: want fail or delay", r.Mode)
	}
	d.boolean(c, "render_templates", &r.RenderTemplates)
	return &r
}

func (d *decoder) reschedule(b *hcl.Block, base *api.ReschedulePolicy) *api.ReschedulePolicy {
	var r api.ReschedulePolicy
	if base != nil {
		r = *base
	}
	c := d.content(b.Body, rescheduleSchema)
	d.integer(c, "attempts", &r.Attempts, 0, anyInt)
	d.dur(c, "interval", &r.Interval)
	d.dur(c, "delay", &r.Delay)
	d.enum(c, "delay_function", "delay_function", &r.DelayFunction, "constant", "exponential", "fibonacci")
	d.dur(c, "max_delay", &r.MaxDelay)
	d.boolean(c, "unlimited", &r.Unlimited)
	return &r
}

func (d *decoder) update(b *hcl.Block, base *api.UpdateStrategy) *api.UpdateStrategy {
	u := *base
	c := d.content(b.Body, updateSchema)
	d.dur(c, "stagger", &u.Stagger)
	d.integer(c, "max_parallel", &u.MaxParallel, 0, anyInt)
	d.str(c, "health_check", &u.HealthCheck)
	d.dur(c, "min_healthy_time", &u.MinHealthyTime)
	d.dur(c, "healthy_deadline", &u.HealthyDeadline)
	d.dur(c, "progress_deadline", &u.ProgressDeadline)
	d.integer(c, "canary", &u.Canary, 0, anyInt)
	d.boolean(c, "auto_revert", &u.AutoRevert)
	d.boolean(c, "auto_promote", &u.AutoPromote)
	return &u
}

func (d *decoder) migrate(b *hcl.Block) *api.MigrateStrategy {
	m := api.DefaultMigrateStrategy()
	c := d.content(b.Body, migrateSchema)
	d.integer(c, "max_parallel", &m.MaxParallel, 0, anyInt)
	d.str(c, "health_check", &m.HealthCheck)
	d.dur(c, "min_healthy_time", &m.MinHealthyTime)
	d.dur(c, "healthy_deadline", &m.HealthyDeadline)
	return m
}

func (d *decoder) periodic(b *hcl.Block) *api.PeriodicConfig {
	p := &api.PeriodicConfig{Enabled: true, SpecType: "cron"}
	c := d.content(b.Body, periodicSchema)
	d.str(c, "cron", &p.Spec)
	d.strs(c, "crons", &p.Specs)
	d.boolean(c, "prohibit_overlap", &p.ProhibitOverlap)
	d.str(c, "time_zone", &p.TimeZone)
	d.boolean(c, "enabled", &p.Enabled)
	if p.Spec == "" && len(p.Specs) == 0 {
		d.errorf(b.DefRange, "Missing cron: a periodic block needs cron or crons")
	}
	return p
}

func (d *decoder) parameterized(b *hcl.Block) *api.ParameterizedJobConfig {
	p := &api.ParameterizedJobConfig{}
	c := d.content(b.Body, paramSchema)
	d.enum(c, "payload", "payload", &p.Payload, "optional", "required", "forbidden")
	d.strs(c, "meta_required", &p.MetaRequired)
	d.strs(c, "meta_optional", &p.MetaOptional)
	return p
}

func (d *decoder) disk(b *hcl.Block) *api.EphemeralDisk {
	e := &api.EphemeralDisk{SizeMB: api.DefaultDiskMB}
	c := d.content(b.Body, diskSchema)
	d.boolean(c, "sticky", &e.Sticky)
	d.boolean(c, "migrate", &e.Migrate)
	d.integer(c, "size", &e.SizeMB, 1, anyInt)
	return e
}

func (d *decoder) network(b *hcl.Block) *api.NetworkResource {
	n := &api.NetworkResource{}
	c := d.content(b.Body, networkSchema)
	d.str(c, "mode", &n.Mode)
	d.integer(c, "mbits", &n.MBits, 0, anyInt)
	d.str(c, "hostname", &n.Hostname)
	labels := map[string]bool{}
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "port":
			pc := d.content(blk.Body, portSchema)
			p := api.Port{Label: blk.Labels[0]}
			if labels[p.Label] {
				d.errorf(blk.LabelRanges[0], "Duplicate port %q", p.Label)
			}
			labels[p.Label] = true
			d.integer(pc, "to", &p.To, -1, 65535)
			d.str(pc, "host_network", &p.HostNetwork)
			if d.integer(pc, "static", &p.Value, 1, 65535) {
				n.ReservedPorts = append(n.ReservedPorts, p)
			} else {
				n.DynamicPorts = append(n.DynamicPorts, p)
			}
		case "dns":
			dc := d.content(blk.Body, dnsSchema)
			n.DNS = &api.DNSConfig{}
			d.strs(dc, "servers", &n.DNS.Servers)
			d.strs(dc, "searches", &n.DNS.Searches)
			d.strs(dc, "options", &n.DNS.Options)
		}
	}
	return n
}

// volume decodes a group's volume block.
func (d *decoder) volume(b *hcl.Block, tg *api.TaskGroup) {
	v := &api.VolumeRequest{Name: b.Labels[0]}
	if _, dup := tg.Volumes[v.Name]; dup {
		d.errorf(b.LabelRanges[0], "Duplicate volume %q in group %q", v.Name, tg.Name)
	}
	c := d.content(b.Body, volumeSchema)
	if c.Attributes["type"] == nil {
		d.errorf(b.DefRange, "Missing type: volume %q needs type = \"host\"", v.Name)
	} else {
		d.enum(c, "type", "volume type", &v.Type, api.VolumeTypeHost, api.VolumeTypeCSI)
	}
	if !d.str(c, "source", &v.Source) && c.Attributes["source"] == nil {
		d.errorf(b.DefRange, "Missing source: volume %q needs the source host volume's name", v.Name)
	}
	d.boolean(c, "read_only", &v.ReadOnly)
	d.str(c, "access_mode", &v.AccessMode)
	d.str(c, "attachment_mode", &v.AttachmentMode)
	d.boolean(c, "per_alloc", &v.PerAlloc)
	if tg.Volumes == nil {
		tg.Volumes = map[string]*api.VolumeRequest{}
	}
	tg.Volumes[v.Name] = v
}
