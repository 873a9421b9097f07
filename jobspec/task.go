package jobspec

import (
	"github.com/dustin/go-humanize"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/drover/drover/api"
)

var (
	taskSchema = accept(schema("driver user kill_timeout max_run_duration kill_signal leader shutdown_delay kind meta env",
		"config", "constraint", "affinity", "env", "service", "resources", "restart", "meta",
		"logs", "artifact", "template", "dispatch_payload", "lifecycle", "volume_mount", "identity"),
		"", "vault", "consul", "csi_plugin", "scaling:name", "action:name", "schedule", "secret:name")
	resourcesSchema = accept(schema("cpu cores memory memory_max disk", "network", "device:name"), "iops secrets", "numa")
	deviceSchema    = schema("count", "constraint", "affinity", "share", "first_available")
	// firstSchema is one option of a device's first_available list.
	firstSchema     = schema("count", "constraint", "affinity")
	shareSchema     = schema("fraction memory mode limit")
	logsSchema      = schema("max_files max_file_size disabled enabled")
	lifecycleSchema = schema("hook sidecar")
	identitySchema  = accept(schema("name aud env file filepath ttl"), "change_mode change_signal")
	mountSchema     = accept(schema("volume destination read_only propagation_mode"), "selinux_label")
	templateSchema  = accept(schema("source destination data change_mode change_signal splay perms left_delimiter right_delimiter env"),
		"uid gid error_on_missing_key vault_grace once", "change_script", "wait")
	artifactSchema = accept(schema("source destination mode options headers", "options", "headers"), "chown")
	payloadSchema  = schema("file")
	serviceSchema  = accept(schema("name tags canary_tags port address_mode provider task on_update meta", "check", "meta", "check_restart"),
		"enable_tag_override address canary_meta tagged_addresses cluster weights kind",
		"connect", "identity", "canary_meta", "tagged_addresses", "weights")
	checkSchema = accept(schema("name type command args path protocol port method interval timeout task body tls_skip_verify tls_server_name "+
		"grpc_service grpc_use_tls success_before_passing failures_before_critical on_update", "header", "check_restart"),
		"address_mode expose initial_status failures_before_warning notes")
	checkRestartSchema = schema("limit grace ignore_warnings")
)

func (d *decoder) task(b *hcl.Block, tg *api.TaskGroup) *api.Task {
	t := &api.Task{Name: b.Labels[0]}
	d.checkName("task", b, api.CheckName)
	c := d.content(b.Body, taskSchema)
	if !d.str(c, "driver", &t.Driver) && c.Attributes["driver"] == nil {
		d.errorf(b.DefRange, "Missing driver: task %q needs a driver attribute (exec, raw_exec, containerd, qemu)", t.Name)
	} else if a := c.Attributes["driver"]; a != nil && t.Driver != "" {
		d.checkDriver(a, t.Name, t.Driver)
	}
	d.str(c, "user", &t.User)
	d.dur(c, "kill_timeout", &t.KillTimeout)
	d.dur(c, "max_run_duration", &t.MaxRunDuration)
	d.str(c, "kill_signal", &t.KillSignal)
	d.boolean(c, "leader", &t.Leader)
	d.dur(c, "shutdown_delay", &t.ShutdownDelay)
	d.str(c, "kind", &t.Kind)
	t.Meta = d.kvAttr(c, "meta", t.Meta)
	t.Env = d.kvAttr(c, "env", t.Env)
	var seen = map[string]bool{}
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "config", "resources", "restart", "logs", "lifecycle", "dispatch_payload":
			d.once(seen[blk.Type], blk)
			seen[blk.Type] = true
		}
		switch blk.Type {
		case "config":
			t.Config = d.config(blk)
		case "constraint":
			t.Constraints = append(t.Constraints, d.constraint(blk))
		case "affinity":
			t.Affinities = append(t.Affinities, d.affinity(blk))
		case "env":
			t.Env = d.mergeKV(t.Env, hcl.Blocks{blk})
		case "meta":
			t.Meta = d.mergeKV(t.Meta, hcl.Blocks{blk})
		case "service":
			s := d.service(blk)
			t.Services = append(t.Services, s)
		case "resources":
			t.Resources = d.resources(blk)
		case "restart":
			base := tg.RestartPolicy
			if base == nil {
				base = api.DefaultRestartPolicy(d.jobType)
			}
			t.RestartPolicy = d.restart(blk, base)
		case "logs":
			t.LogConfig = d.logs(blk)
		case "artifact":
			t.Artifacts = append(t.Artifacts, d.artifact(blk))
		case "template":
			t.Templates = append(t.Templates, d.template(blk))
		case "dispatch_payload":
			pc := d.content(blk.Body, payloadSchema)
			t.DispatchPayload = &api.DispatchPayloadConfig{}
			d.str(pc, "file", &t.DispatchPayload.File)
		case "lifecycle":
			t.Lifecycle = d.lifecycle(blk)
		case "volume_mount":
			t.VolumeMounts = append(t.VolumeMounts, d.volumeMount(blk))
		case "identity":
			w := d.identity(blk)
			if w.Name == "" || w.Name == api.DefaultIdentityName {
				d.once(t.Identity != nil, blk)
				w.Name = api.DefaultIdentityName
				t.Identity = w
			} else {
				t.Identities = append(t.Identities, w)
			}
		}
	}
	return t
}

func (d *decoder) resources(b *hcl.Block) *api.Resources {
	r := &api.Resources{}
	c := d.content(b.Body, resourcesSchema)
	d.integer(c, "cpu", &r.CPU, 1, anyInt)
	d.integer(c, "cores", &r.Cores, 1, anyInt)
	d.integer(c, "memory", &r.MemoryMB, 1, anyInt)
	if a := c.Attributes["memory_max"]; a != nil && d.integer(c, "memory_max", &r.MemoryMaxMB, -1, anyInt) && r.MemoryMaxMB == 0 {
		d.errorf(a.Expr.Range(), "Invalid value for \"memory_max\": 0 must be -1 (no limit) or at least 1")
	}
	d.integer(c, "disk", &r.DiskMB, 1, anyInt)
	if c.Attributes["cpu"] != nil && c.Attributes["cores"] != nil {
		d.errorf(c.Attributes["cores"].NameRange, "Conflicting resources: cpu and cores are mutually exclusive")
	}
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "network":
			r.Networks = append(r.Networks, d.network(blk))
		case "device":
			dev := &api.RequestedDevice{Name: blk.Labels[0], Count: 1}
			if dev.Name == "" {
				d.errorf(blk.LabelRanges[0], "Invalid device name: must not be empty")
			}
			dc := d.content(blk.Body, deviceSchema)
			var n int
			if d.integer(dc, "count", &n, 1, anyInt) {
				dev.Count = uint64(n)
			}
			for _, sub := range dc.Blocks {
				switch sub.Type {
				case "constraint":
					dev.Constraints = append(dev.Constraints, d.constraint(sub))
				case "affinity":
					dev.Affinities = append(dev.Affinities, d.affinity(sub))
				case "share":
					d.once(dev.Share != nil, sub)
					dev.Share = d.share(sub)
				}
			}
			d.firstAvailable(dc, dev)
			r.Devices = append(r.Devices, dev)
		}
	}
	return r
}

// firstAvailable reads a device's first_available options (Nomad asks
// for the first option a node can satisfy). drover places with the first
// option only: its count and constraints and affinities join the
// device's own, and a warning names the options it will not fall back to.
func (d *decoder) firstAvailable(dc *hcl.BodyContent, dev *api.RequestedDevice) {
	first := true
	for _, sub := range dc.Blocks {
		if sub.Type != "first_available" {
			continue
		}
		fc := d.content(sub.Body, firstSchema)
		if !first {
			d.warnf(sub.DefRange, "%q options after the first are not supported by drover yet: accepted and ignored", sub.Type)
			continue
		}
		first = false
		var n int
		if d.integer(fc, "count", &n, 1, anyInt) {
			if dc.Attributes["count"] != nil {
				d.errorf(fc.Attributes["count"].NameRange, "Conflicting device count: set count in the device block or in first_available, not both")
			}
			dev.Count = uint64(n)
		}
		for _, b := range fc.Blocks {
			switch b.Type {
			case "constraint":
				dev.Constraints = append(dev.Constraints, d.constraint(b))
			case "affinity":
				dev.Affinities = append(dev.Affinities, d.affinity(b))
			}
		}
	}
}

// share is a device block's share { fraction | memory, mode, limit }.
func (d *decoder) share(b *hcl.Block) *api.DeviceShare {
	sh := &api.DeviceShare{}
	c := d.content(b.Body, shareSchema)
	fr, mem := c.Attributes["fraction"], c.Attributes["memory"]
	switch {
	case fr != nil && mem != nil:
		d.errorf(mem.NameRange, "Conflicting share: fraction and memory are mutually exclusive")
	case fr == nil && mem == nil:
		d.errorf(b.DefRange, "Missing share size: share needs fraction (e.g. 0.25) or memory (e.g. \"10GiB\")")
	}
	if d.number(c, "fraction", &sh.Fraction) && (sh.Fraction <= 0 || sh.Fraction >= 1) {
		d.errorf(fr.Expr.Range(), "Invalid value for \"fraction\": %v must be above 0 and below 1 (ask a whole device without share)", sh.Fraction)
	}
	var size string
	if d.str(c, "memory", &size) {
		b, err := humanize.ParseBytes(size)
		if err != nil || b == 0 {
			d.errorf(mem.Expr.Range(), "Invalid value for \"memory\": %q is not a size such as \"10GiB\" or \"512MiB\"", size)
		} else {
			sh.MemoryMB = int64((b + 1<<20 - 1) >> 20)
		}
	}
	d.enum(c, "mode", "share mode", &sh.Mode, api.ShareModeTimeSlicing, api.ShareModeMPS)
	if lim := c.Attributes["limit"]; d.number(c, "limit", &sh.Limit) {
		if sh.Limit <= 0 || sh.Limit > 1 || (sh.Fraction > 0 && sh.Limit < sh.Fraction) {
			d.errorf(lim.Expr.Range(), "Invalid value for \"limit\": %v must be within [fraction, 1]", sh.Limit)
		}
	}
	return sh
}

func (d *decoder) logs(b *hcl.Block) *api.LogConfig {
	l := api.DefaultLogConfig()
	c := d.content(b.Body, logsSchema)
	d.integer(c, "max_files", &l.MaxFiles, 1, anyInt)
	d.integer(c, "max_file_size", &l.MaxFileSizeMB, 1, anyInt)
	d.boolean(c, "disabled", &l.Disabled)
	var enabled bool
	if d.boolean(c, "enabled", &enabled) {
		l.Disabled = !enabled
	}
	return l
}

func (d *decoder) lifecycle(b *hcl.Block) *api.TaskLifecycle {
	l := &api.TaskLifecycle{}
	c := d.content(b.Body, lifecycleSchema)
	if c.Attributes["hook"] == nil {
		d.errorf(b.DefRange, "Missing hook: lifecycle needs hook = prestart, poststart or poststop")
	} else {
		d.enum(c, "hook", "lifecycle hook", &l.Hook, api.TaskLifecycleHookPrestart, api.TaskLifecycleHookPoststart, api.TaskLifecycleHookPoststop)
	}
	d.boolean(c, "sidecar", &l.Sidecar)
	return l
}

func (d *decoder) template(b *hcl.Block) *api.Template {
	t := &api.Template{}
	c := d.content(b.Body, templateSchema)
	d.str(c, "source", &t.SourcePath)
	if !d.str(c, "destination", &t.DestPath) && c.Attributes["destination"] == nil {
		d.errorf(b.DefRange, "Missing destination: a template needs a destination")
	}
	d.str(c, "data", &t.EmbeddedTmpl)
	d.enum(c, "change_mode", "change_mode", &t.ChangeMode, "noop", "restart", "signal", "script")
	d.str(c, "change_signal", &t.ChangeSignal)
	d.dur(c, "splay", &t.Splay)
	d.str(c, "perms", &t.Perms)
	d.str(c, "left_delimiter", &t.LeftDelim)
	d.str(c, "right_delimiter", &t.RightDelim)
	d.boolean(c, "env", &t.Envvars)
	return t
}

func (d *decoder) artifact(b *hcl.Block) *api.TaskArtifact {
	a := &api.TaskArtifact{}
	c := d.content(b.Body, artifactSchema)
	if !d.str(c, "source", &a.GetterSource) && c.Attributes["source"] == nil {
		d.errorf(b.DefRange, "Missing source: an artifact needs a source")
	}
	d.str(c, "destination", &a.RelativeDest)
	d.str(c, "mode", &a.GetterMode)
	a.GetterOptions = d.kvAttr(c, "options", a.GetterOptions)
	a.GetterHeaders = d.kvAttr(c, "headers", a.GetterHeaders)
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "options":
			a.GetterOptions = d.mergeKV(a.GetterOptions, hcl.Blocks{blk})
		case "headers":
			a.GetterHeaders = d.mergeKV(a.GetterHeaders, hcl.Blocks{blk})
		}
	}
	return a
}

func (d *decoder) service(b *hcl.Block) *api.Service {
	s := &api.Service{}
	c := d.content(b.Body, serviceSchema)
	d.str(c, "name", &s.Name)
	d.strs(c, "tags", &s.Tags)
	d.strs(c, "canary_tags", &s.CanaryTags)
	d.str(c, "port", &s.PortLabel)
	d.str(c, "address_mode", &s.AddressMode)
	d.str(c, "provider", &s.Provider)
	d.str(c, "task", &s.TaskName)
	d.enum(c, "on_update", "on_update", &s.OnUpdate, api.OnUpdateRequireHealthy, api.OnUpdateIgnoreWarnings, api.OnUpdateIgnore)
	s.Meta = d.kvAttr(c, "meta", s.Meta)
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "meta":
			s.Meta = d.mergeKV(s.Meta, hcl.Blocks{blk})
		case "check":
			s.Checks = append(s.Checks, d.check(blk))
		case "check_restart":
			s.CheckRestart = d.checkRestart(d.once(s.CheckRestart != nil, blk))
		}
	}
	return s
}

func (d *decoder) checkRestart(b *hcl.Block) *api.CheckRestart {
	cr := &api.CheckRestart{}
	c := d.content(b.Body, checkRestartSchema)
	d.integer(c, "limit", &cr.Limit, 0, anyInt)
	d.dur(c, "grace", &cr.Grace)
	d.boolean(c, "ignore_warnings", &cr.IgnoreWarnings)
	return cr
}

func (d *decoder) check(b *hcl.Block) *api.ServiceCheck {
	ch := &api.ServiceCheck{}
	c := d.content(b.Body, checkSchema)
	d.str(c, "name", &ch.Name)
	d.enum(c, "type", "check type", &ch.Type, "http", "tcp", "script", "grpc")
	d.str(c, "command", &ch.Command)
	d.strs(c, "args", &ch.Args)
	d.str(c, "path", &ch.Path)
	d.str(c, "protocol", &ch.Protocol)
	d.str(c, "port", &ch.PortLabel)
	d.str(c, "method", &ch.Method)
	d.dur(c, "interval", &ch.Interval)
	d.dur(c, "timeout", &ch.Timeout)
	d.str(c, "task", &ch.TaskName)
	d.str(c, "body", &ch.Body)
	d.boolean(c, "tls_skip_verify", &ch.TLSSkipVerify)
	d.str(c, "tls_server_name", &ch.TLSServerName)
	d.str(c, "grpc_service", &ch.GRPCService)
	d.boolean(c, "grpc_use_tls", &ch.GRPCUseTLS)
	d.integer(c, "success_before_passing", &ch.SuccessBeforePassing, 0, anyInt)
	d.integer(c, "failures_before_critical", &ch.FailuresBeforeCritical, 0, anyInt)
	d.enum(c, "on_update", "on_update", &ch.OnUpdate, api.OnUpdateRequireHealthy, api.OnUpdateIgnoreWarnings, api.OnUpdateIgnore)
	for _, blk := range c.Blocks {
		if blk.Type == "check_restart" {
			ch.CheckRestart = d.checkRestart(d.once(ch.CheckRestart != nil, blk))
			continue
		}
		for name, a := range d.attrs(blk.Body) {
			v, ok := d.typed(a, cty.List(cty.String))
			if !ok {
				continue
			}
			if ch.Header == nil {
				ch.Header = map[string][]string{}
			}
			for it := v.ElementIterator(); it.Next(); {
				_, e := it.Element()
				if !e.IsNull() {
					ch.Header[name] = append(ch.Header[name], e.AsString())
				}
			}
		}
	}
	return ch
}

func (d *decoder) volumeMount(b *hcl.Block) *api.VolumeMount {
	m := &api.VolumeMount{}
	c := d.content(b.Body, mountSchema)
	if !d.str(c, "volume", &m.Volume) && c.Attributes["volume"] == nil {
		d.errorf(b.DefRange, "Missing volume: a volume_mount needs the group volume's name")
	}
	if !d.str(c, "destination", &m.Destination) && c.Attributes["destination"] == nil {
		d.errorf(b.DefRange, "Missing destination: a volume_mount needs a destination path")
	}
	d.boolean(c, "read_only", &m.ReadOnly)
	d.enum(c, "propagation_mode", "propagation_mode", &m.PropagationMode, "private", "host-to-task", "bidirectional")
	return m
}

func (d *decoder) identity(b *hcl.Block) *api.WorkloadIdentity {
	w := &api.WorkloadIdentity{}
	c := d.content(b.Body, identitySchema)
	d.str(c, "name", &w.Name)
	d.strs(c, "aud", &w.Audience)
	d.boolean(c, "env", &w.Env)
	d.boolean(c, "file", &w.File)
	d.str(c, "filepath", &w.Filepath)
	d.dur(c, "ttl", &w.TTL)
	return w
}
