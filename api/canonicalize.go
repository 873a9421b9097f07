package api

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
)

// Template and artifact defaults, as Nomad documents them.
const (
	DefaultTemplateChangeMode = "restart"
	DefaultTemplateSplay      = 5 * time.Second
	DefaultTemplatePerms      = "0644"
	DefaultAffinityWeight     = 50
)

// Canonicalize fills every field a user may omit with its documented
// default, in place, so that jobs from HCL and from JSON look the same to
// the server. It is idempotent. Group Count is not touched: an omitted
// count is 1 at decode time (see TaskGroup.UnmarshalJSON), an explicit 0
// stays 0.
func (j *Job) Canonicalize() {
	if j == nil {
		return
	}
	if j.Namespace == "" {
		j.Namespace = DefaultNamespace
	}
	if j.Region == "" {
		j.Region = DefaultRegion
	}
	if j.Type == "" {
		j.Type = JobTypeService
	}
	if j.Priority == 0 {
		j.Priority = DefaultPriority
	}
	if len(j.Datacenters) == 0 {
		j.Datacenters = []string{"*"}
	}
	if j.NodePool == "" {
		j.NodePool = DefaultNodePool
	}
	if j.Name == "" {
		j.Name = j.ID
	}
	if j.Periodic != nil && j.Periodic.SpecType == "" && (j.Periodic.Spec != "" || len(j.Periodic.Specs) > 0) {
		j.Periodic.SpecType = "cron"
	}
	if j.Update != nil {
		fillUpdate(j.Update, DefaultUpdateStrategy())
	}
	canonAffinities(j.Affinities)
	for _, tg := range j.TaskGroups {
		if tg != nil {
			tg.canonicalize(j)
		}
	}
}

func (tg *TaskGroup) canonicalize(j *Job) {
	if tg.RestartPolicy == nil {
		tg.RestartPolicy = DefaultRestartPolicy(j.Type)
	}
	if tg.ReschedulePolicy == nil {
		tg.ReschedulePolicy = DefaultReschedulePolicy(j.Type)
	}
	if tg.EphemeralDisk == nil {
		tg.EphemeralDisk = &EphemeralDisk{}
	}
	if tg.EphemeralDisk.SizeMB == 0 {
		tg.EphemeralDisk.SizeMB = DefaultDiskMB
	}
	switch {
	case tg.Update == nil && j.Update != nil:
		u := *j.Update
		tg.Update = &u
	case tg.Update != nil && j.Update != nil:
		fillUpdate(tg.Update, j.Update)
	case tg.Update != nil:
		fillUpdate(tg.Update, DefaultUpdateStrategy())
	}
	if tg.Migrate != nil {
		d := DefaultMigrateStrategy()
		if tg.Migrate.HealthCheck == "" {
			tg.Migrate.HealthCheck = d.HealthCheck
		}
		if tg.Migrate.MinHealthyTime == 0 {
			tg.Migrate.MinHealthyTime = d.MinHealthyTime
		}
		if tg.Migrate.HealthyDeadline == 0 {
			tg.Migrate.HealthyDeadline = d.HealthyDeadline
		}
	}
	canonAffinities(tg.Affinities)
	canonServices(tg.Services)
	for name, v := range tg.Volumes {
		if v == nil {
			continue
		}
		if v.Name == "" {
			v.Name = name
		}
		if v.Type == "" {
			v.Type = VolumeTypeHost
		}
	}
	for _, t := range tg.Tasks {
		if t != nil {
			t.canonicalize(tg)
		}
	}
}

// canonServices gives each check its service's on_update and
// check_restart when it sets none (as Nomad merges them).
func canonServices(ss []*Service) {
	for _, s := range ss {
		if s == nil {
			continue
		}
		if s.OnUpdate == "" {
			s.OnUpdate = OnUpdateRequireHealthy
		}
		for _, c := range s.Checks {
			if c == nil {
				continue
			}
			if c.OnUpdate == "" {
				c.OnUpdate = s.OnUpdate
			}
			if c.CheckRestart == nil && s.CheckRestart != nil {
				cr := *s.CheckRestart
				c.CheckRestart = &cr
			}
		}
	}
}

func (t *Task) canonicalize(tg *TaskGroup) {
	canonServices(t.Services)
	if t.Identity != nil {
		if t.Identity.Name == "" {
			t.Identity.Name = DefaultIdentityName
		}
		if len(t.Identity.Audience) == 0 {
			t.Identity.Audience = []string{DefaultIdentityAudience}
		}
	}
	if t.Resources == nil {
		t.Resources = DefaultResources()
	}
	if t.Resources.CPU == 0 && t.Resources.Cores == 0 {
		t.Resources.CPU = DefaultCPU
	}
	if t.Resources.MemoryMB == 0 {
		t.Resources.MemoryMB = DefaultMemoryMB
	}
	for _, d := range t.Resources.Devices {
		if d != nil && d.Count == 0 {
			d.Count = 1
		}
		if d != nil {
			canonAffinities(d.Affinities)
		}
	}
	if t.KillTimeout == 0 {
		t.KillTimeout = DefaultKillTimeout
	}
	if t.LogConfig == nil {
		t.LogConfig = DefaultLogConfig()
	}
	if t.LogConfig.MaxFiles == 0 {
		t.LogConfig.MaxFiles = DefaultLogConfig().MaxFiles
	}
	if t.LogConfig.MaxFileSizeMB == 0 {
		t.LogConfig.MaxFileSizeMB = DefaultLogConfig().MaxFileSizeMB
	}
	if t.RestartPolicy == nil && tg.RestartPolicy != nil {
		rp := *tg.RestartPolicy
		t.RestartPolicy = &rp
	}
	for _, tm := range t.Templates {
		if tm == nil {
			continue
		}
		if tm.ChangeMode == "" {
			tm.ChangeMode = DefaultTemplateChangeMode
		}
		if tm.Splay == 0 {
			tm.Splay = DefaultTemplateSplay
		}
		if tm.Perms == "" {
			tm.Perms = DefaultTemplatePerms
		}
		if tm.LeftDelim == "" {
			tm.LeftDelim = "{{"
		}
		if tm.RightDelim == "" {
			tm.RightDelim = "}}"
		}
	}
	for _, a := range t.Artifacts {
		if a != nil && a.GetterMode == "" {
			a.GetterMode = "any"
		}
	}
	canonAffinities(t.Affinities)
}

func canonAffinities(as []*Affinity) {
	for _, a := range as {
		if a != nil && a.Operand == "" {
			a.Operand = "="
		}
	}
}

// fillUpdate copies into u every zero field that d sets.
func fillUpdate(u, d *UpdateStrategy) {
	if u.Stagger == 0 {
		u.Stagger = d.Stagger
	}
	if u.HealthCheck == "" {
		u.HealthCheck = d.HealthCheck
	}
	if u.MinHealthyTime == 0 {
		u.MinHealthyTime = d.MinHealthyTime
	}
	if u.HealthyDeadline == 0 {
		u.HealthyDeadline = d.HealthyDeadline
	}
	if u.ProgressDeadline == 0 {
		u.ProgressDeadline = d.ProgressDeadline
	}
}

var (
	jobTypes          = []string{JobTypeService, JobTypeBatch, JobTypeSystem, JobTypeSysBatch}
	lifecycleHooks    = []string{TaskLifecycleHookPrestart, TaskLifecycleHookPoststart, TaskLifecycleHookPoststop}
	restartModes      = []string{RestartModeFail, RestartModeDelay}
	delayFunctions    = []string{"constant", "exponential", "fibonacci"}
	healthChecks      = []string{"checks", "task_states", "manual"}
	changeModes       = []string{"noop", "restart", "signal", "script"}
	payloadModes      = []string{"", "optional", "required", "forbidden"}
	getterModes       = []string{"", "any", "file", "dir"}
	checkTypes        = []string{"http", "tcp", "script", "grpc"}
	networkModes      = []string{"", "host", "bridge", "none"}
	addressModes      = []string{"", "auto", "host", "driver", "alloc"}
	serviceProviders  = []string{"", "nomad", "drover", "consul"}
	onUpdates         = []string{OnUpdateRequireHealthy, OnUpdateIgnoreWarnings, OnUpdateIgnore}
	maxPort           = 65535
	maxAffinityWeight = 100
)

// ValidConstraintOperator reports whether op is one of ConstraintOperators.
func ValidConstraintOperator(op string) bool { return slices.Contains(ConstraintOperators, op) }

// Validate checks a canonicalized job and returns every problem found, as
// errors joined with errors.Join; each wraps ErrInvalidJob, so
// errors.Is(err, ErrInvalidJob) holds. It returns nil for a valid job.
func (j *Job) Validate() error {
	if j == nil {
		return fmt.Errorf("%w: no job", ErrInvalidJob)
	}
	v := &validator{}
	if j.ID == "" {
		v.add("", "missing job ID")
	} else if err := CheckJobID(j.ID); err != nil {
		v.add("", "invalid job ID %q: %v", j.ID, err)
	}
	if err := CheckJobName(j.Name); err != nil {
		v.add("", "invalid job name %q: %v", j.Name, err)
	}
	if j.Type != "" && !slices.Contains(jobTypes, j.Type) {
		v.add("", "invalid job type %q (want one of %s)", j.Type, strings.Join(jobTypes, ", "))
	}
	if j.Priority < MinPriority || j.Priority > MaxPriority {
		v.add("", "priority %d out of range [%d, %d]", j.Priority, MinPriority, MaxPriority)
	}
	for _, dc := range j.Datacenters {
		if dc == "" {
			v.add("", "empty datacenter name")
		}
	}
	if len(j.TaskGroups) == 0 {
		v.add("", "job has no task groups")
	}
	v.constraints("", j.Constraints)
	v.affinities("", j.Affinities)
	v.spreads("", j.Spreads)
	v.update("", j.Update)
	if p := j.Periodic; p != nil && p.Enabled {
		if p.Spec == "" && len(p.Specs) == 0 {
			v.add("", "periodic: missing cron spec")
		}
		if p.SpecType != "" && p.SpecType != "cron" {
			v.add("", "periodic: unknown spec type %q", p.SpecType)
		}
		if p.TimeZone != "" {
			if _, err := time.LoadLocation(p.TimeZone); err != nil {
				v.add("", "periodic: invalid time zone %q", p.TimeZone)
			}
		}
		for _, sp := range p.allSpecs() {
			if _, err := parseCron(sp); err != nil {
				v.add("", "periodic: %v", err)
			}
		}
	}
	if pj := j.ParameterizedJob; pj != nil && !slices.Contains(payloadModes, pj.Payload) {
		v.add("", "parameterized: invalid payload %q (want optional, required or forbidden)", pj.Payload)
	}
	v.gangs(j)
	if j.Queue != "" && !ValidQueueName(j.Queue) {
		v.add("", "invalid queue %q: want slash-separated parts of letters, digits, - or _", j.Queue)
	}
	if j.MinRuntime < 0 {
		v.add("", "min_runtime must not be negative")
	}
	if j.IdleTimeout < 0 {
		v.add("", "idle_timeout must not be negative")
	}
	for _, tg := range j.TaskGroups {
		if tg != nil && tg.IdleTimeout < 0 {
			v.add("", "group %q: idle_timeout must not be negative", tg.Name)
		}
		if tg != nil && tg.MinRuntime < 0 {
			v.add("", "group %q: min_runtime must not be negative", tg.Name)
		}
	}
	if !validSpot(j.Spot) {
		v.add("", "spot %q: want allow, never or prefer", j.Spot)
	}
	if err := j.Placement.Validate(); err != nil {
		v.add("", "placement: %v", err)
	}
	if err := j.Multiregion.Validate(); err != nil {
		v.add("", "multiregion: %v", err)
	}
	groups := make(map[string]bool, len(j.TaskGroups))
	for i, tg := range j.TaskGroups {
		if tg == nil {
			v.add("", "task group %d is null", i)
			continue
		}
		p := fmt.Sprintf("group %q: ", tg.Name)
		if tg.Name == "" {
			p = fmt.Sprintf("group %d: ", i)
			v.add(p, "missing group name")
		} else if err := CheckName(tg.Name); err != nil {
			v.add(p, "invalid group name: %v", err)
		} else if groups[tg.Name] {
			v.add("", "duplicate group %q", tg.Name)
		}
		groups[tg.Name] = true
		v.group(p, j, tg)
	}
	if len(v.errs) == 0 {
		return nil
	}
	return errors.Join(v.errs...)
}

type validator struct{ errs []error }

// volumes checks a group's volume blocks: host volumes only (CSI needs a
// plugin system drover does not have), each naming its source.
func (v *validator) volumes(p string, vols map[string]*VolumeRequest) {
	for _, name := range slices.Sorted(maps.Keys(vols)) {
		r := vols[name]
		if r == nil {
			v.add(p, "volume %q is null", name)
			continue
		}
		switch {
		case r.Type == VolumeTypeCSI:
			v.add(p, "volume %q: type csi is not supported (drover runs host volumes)", name)
		case r.Type != VolumeTypeHost:
			v.add(p, "volume %q: invalid type %q (want host)", name, r.Type)
		case r.Source == "":
			v.add(p, "volume %q: missing source (the client's host_volume name)", name)
		case r.PerAlloc:
			v.add(p, "volume %q: per_alloc needs CSI volumes", name)
		}
	}
}

// identities checks a task's identity blocks: unique names of letters,
// digits, - and _, a token file inside the task dir, no negative TTL.
func (v *validator) identities(p string, t *Task) {
	if t.Identity != nil && t.Identity.Name != DefaultIdentityName {
		v.add(p, "identity: the default identity is named %q, not %q", DefaultIdentityName, t.Identity.Name)
	}
	names := map[string]bool{}
	for i, w := range t.TaskIdentities() {
		if w == nil {
			v.add(p, "identity %d is null", i)
			continue
		}
		switch {
		case i > 0 && (w.Name == "" || w.Name == DefaultIdentityName):
			v.add(p, "identity %d: a named identity needs a name other than %q (use the task's Identity)", i, DefaultIdentityName)
		case strings.Trim(w.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "":
			v.add(p, "identity %q: name may hold letters, digits, - and _ only", w.Name)
		case names[w.Name]:
			v.add(p, "duplicate identity %q", w.Name)
		}
		names[w.Name] = true
		if w.TTL < 0 {
			v.add(p, "identity %q: ttl must not be negative", w.Name)
		}
		if f := w.Filepath; f != "" && (path.IsAbs(f) || path.Clean(f) == ".." || strings.HasPrefix(path.Clean(f), "../")) {
			v.add(p, "identity %q: filepath %q must be relative to the task dir and stay inside it", w.Name, f)
		}
	}
}

// hostDrivers are drover's drivers that can neither bind-mount a volume
// into a task nor join a bridge network (exec and containerd can). A
// driver drover does not run (Nomad's docker, podman, java...) is no
// error here: Nomad accepts such a job and leaves the driver to the
// clients, where on drover it stays pending (jobspec warns).
var hostDrivers = []string{"raw_exec", "qemu"}

// volumeMounts checks a task's volume_mount blocks against the group's volumes.
func (v *validator) volumeMounts(p string, t *Task, vols map[string]*VolumeRequest) {
	dests := map[string]bool{}
	for i, m := range t.VolumeMounts {
		if m == nil {
			v.add(p, "volume_mount %d is null", i)
			continue
		}
		switch {
		case vols[m.Volume] == nil:
			v.add(p, "volume_mount: volume %q is not a volume of the group", m.Volume)
		case strings.HasPrefix(m.Destination, "${"):
			// ${NOMAD_TASK_DIR}/x and the like: the client interpolates
			// and checks it.
		case !strings.HasPrefix(m.Destination, "/") || slices.Contains(strings.Split(m.Destination, "/"), ".."):
			v.add(p, "volume_mount %q: destination %q must be an absolute path without ..", m.Volume, m.Destination)
		case dests[path.Clean(m.Destination)]:
			v.add(p, "volume_mount %q: destination %q is mounted twice", m.Volume, m.Destination)
		case slices.Contains(hostDrivers, t.Driver):
			v.add(p, "volume_mount %q: driver %s cannot mount volumes (exec and containerd can)", m.Volume, t.Driver)
		}
		dests[path.Clean(m.Destination)] = true
		if m.PropagationMode != "" && !slices.Contains([]string{"private", "host-to-task", "bidirectional"}, m.PropagationMode) {
			v.add(p, "volume_mount %q: invalid propagation_mode %q (want private, host-to-task or bidirectional)", m.Volume, m.PropagationMode)
		}
	}
}

func (v *validator) add(prefix, format string, a ...any) {
	v.errs = append(v.errs, fmt.Errorf("%w: %s%s", ErrInvalidJob, prefix, fmt.Sprintf(format, a...)))
}

func (v *validator) group(p string, j *Job, tg *TaskGroup) {
	if tg.Count < 0 {
		v.add(p, "count %d must not be negative", tg.Count)
	}
	if !validSpot(tg.Spot) {
		v.add(p, "spot %q: want allow, never or prefer", tg.Spot)
	}
	if len(tg.Tasks) == 0 {
		v.add(p, "group has no tasks")
	}
	v.constraints(p, tg.Constraints)
	v.affinities(p, tg.Affinities)
	v.spreads(p, tg.Spreads)
	v.scaling(p, tg)
	v.update(p, tg.Update)
	v.restart(p, tg.RestartPolicy)
	if rp := tg.ReschedulePolicy; rp != nil {
		if rp.Attempts < 0 || rp.Interval < 0 || rp.Delay < 0 || rp.MaxDelay < 0 {
			v.add(p, "reschedule: negative attempts, interval or delay")
		}
		if rp.DelayFunction != "" && !slices.Contains(delayFunctions, rp.DelayFunction) {
			v.add(p, "reschedule: invalid delay_function %q (want one of %s)", rp.DelayFunction, strings.Join(delayFunctions, ", "))
		}
	}
	if m := tg.Migrate; m != nil {
		if m.MaxParallel < 0 {
			v.add(p, "migrate: max_parallel must not be negative")
		}
		if m.HealthCheck != "" && !slices.Contains(healthChecks[:2], m.HealthCheck) {
			v.add(p, "migrate: invalid health_check %q", m.HealthCheck)
		}
	}
	if d := tg.EphemeralDisk; d != nil && d.SizeMB < 0 {
		v.add(p, "ephemeral_disk: size must not be negative")
	}
	labels := map[string]bool{}
	v.networks(p, tg.Networks, labels)
	v.services(p, tg.Services)
	tasks := make(map[string]bool, len(tg.Tasks))
	leaders := 0
	for i, t := range tg.Tasks {
		if t == nil {
			v.add(p, "task %d is null", i)
			continue
		}
		tp := fmt.Sprintf("%stask %q: ", p, t.Name)
		if t.Name == "" {
			tp = fmt.Sprintf("%stask %d: ", p, i)
			v.add(tp, "missing task name")
		} else if tasks[t.Name] {
			v.add(p, "duplicate task %q", t.Name)
		}
		tasks[t.Name] = true
		if t.Leader {
			leaders++
		}
		v.task(tp, t, labels)
		v.volumeMounts(tp, t, tg.Volumes)
	}
	v.volumes(p, tg.Volumes)
	for _, n := range tg.Networks {
		if n == nil || n.Mode != "bridge" {
			continue
		}
		for _, t := range tg.Tasks {
			if t != nil && slices.Contains(hostDrivers, t.Driver) {
				v.add(p, "task %q: driver %s cannot join a bridge network (exec and containerd can)", t.Name, t.Driver)
			}
		}
	}
	if leaders > 1 {
		v.add(p, "only one task may be leader, found %d", leaders)
	}
}

func (v *validator) task(p string, t *Task, labels map[string]bool) {
	if t.Driver == "" {
		v.add(p, "missing driver")
	}
	if err := CheckName(t.Name); err != nil && t.Name != "" {
		v.add(p, "invalid task name: %v", err)
	}
	if lc := t.Lifecycle; lc != nil && !slices.Contains(lifecycleHooks, lc.Hook) {
		v.add(p, "lifecycle: invalid hook %q (want one of %s)", lc.Hook, strings.Join(lifecycleHooks, ", "))
	}
	if t.KillTimeout < 0 || t.ShutdownDelay < 0 || t.MaxRunDuration < 0 {
		v.add(p, "kill_timeout, shutdown_delay and max_run_duration must not be negative")
	}
	v.constraints(p, t.Constraints)
	v.affinities(p, t.Affinities)
	v.restart(p, t.RestartPolicy)
	v.services(p, t.Services)
	v.identities(p, t)
	if r := t.Resources; r != nil {
		if r.CPU < 0 || r.Cores < 0 || r.MemoryMB < 0 || r.MemoryMaxMB < -1 || r.DiskMB < 0 {
			v.add(p, "resources: negative cpu, cores, memory or disk (memory_max may be -1: no limit)")
		}
		if r.MemoryMaxMB > 0 && r.MemoryMaxMB < r.MemoryMB {
			v.add(p, "resources: memory_max %d is below memory %d", r.MemoryMaxMB, r.MemoryMB)
		}
		if r.Cores > 0 && r.CPU > 0 {
			v.add(p, "resources: cpu and cores are mutually exclusive")
		}
		v.networks(p, r.Networks, labels)
		for _, d := range r.Devices {
			if d == nil {
				continue
			}
			dp := fmt.Sprintf("%sdevice %q: ", p, d.Name)
			if d.Name == "" {
				v.add(p, "device: missing name")
			}
			v.constraints(dp, d.Constraints)
			v.affinities(dp, d.Affinities)
			if d.Share != nil {
				if err := d.Share.Validate(); err != nil {
					v.add(dp, "%v", err)
				}
				if isMIGAsk(d.Name) {
					v.add(dp, "share: MIG instances are not shared; ask a smaller MIG profile instead")
				}
			}
		}
	}
	if lc := t.LogConfig; lc != nil && (lc.MaxFiles < 0 || lc.MaxFileSizeMB < 0) {
		v.add(p, "logs: negative max_files or max_file_size")
	}
	for _, tm := range t.Templates {
		if tm == nil {
			continue
		}
		if tm.DestPath == "" {
			v.add(p, "template: missing destination")
		}
		if tm.SourcePath == "" && tm.EmbeddedTmpl == "" {
			v.add(p, "template: one of source or data is required")
		}
		if tm.ChangeMode != "" && !slices.Contains(changeModes, tm.ChangeMode) {
			v.add(p, "template: invalid change_mode %q", tm.ChangeMode)
		}
		if tm.ChangeMode == "signal" && tm.ChangeSignal == "" {
			v.add(p, "template: change_mode signal needs change_signal")
		}
	}
	for _, a := range t.Artifacts {
		if a == nil {
			continue
		}
		if a.GetterSource == "" {
			v.add(p, "artifact: missing source")
		}
		if !slices.Contains(getterModes, a.GetterMode) {
			v.add(p, "artifact: invalid mode %q", a.GetterMode)
		}
	}
}

func (v *validator) restart(p string, rp *RestartPolicy) {
	if rp == nil {
		return
	}
	if !slices.Contains(restartModes, rp.Mode) {
		v.add(p, "restart: invalid mode %q (want fail or delay)", rp.Mode)
	}
	if rp.Attempts < 0 || rp.Interval < 0 || rp.Delay < 0 {
		v.add(p, "restart: negative attempts, interval or delay")
	}
}

func (v *validator) update(p string, u *UpdateStrategy) {
	if u == nil {
		return
	}
	if u.MaxParallel < 0 || u.Canary < 0 {
		v.add(p, "update: max_parallel and canary must not be negative")
	}
	if u.HealthCheck != "" && !slices.Contains(healthChecks, u.HealthCheck) {
		v.add(p, "update: invalid health_check %q (want one of %s)", u.HealthCheck, strings.Join(healthChecks, ", "))
	}
	if u.HealthyDeadline != 0 && u.MinHealthyTime >= u.HealthyDeadline {
		v.add(p, "update: min_healthy_time must be below healthy_deadline")
	}
	if u.ProgressDeadline != 0 && u.HealthyDeadline > u.ProgressDeadline {
		v.add(p, "update: healthy_deadline must not exceed progress_deadline")
	}
}

func (v *validator) constraints(p string, cs []*Constraint) {
	for _, c := range cs {
		if c == nil {
			continue
		}
		if !ValidConstraintOperator(c.Operand) {
			v.add(p, "constraint: invalid operator %q", c.Operand)
			continue
		}
		switch c.Operand {
		case ConstraintDistinctHosts:
		case ConstraintDistinctProperty, ConstraintAttributeIsSet, ConstraintAttributeNotSet:
			if c.LTarget == "" {
				v.add(p, "constraint: operator %q needs an attribute", c.Operand)
			}
		default:
			if c.LTarget == "" && c.RTarget == "" {
				v.add(p, "constraint: missing attribute and value")
			}
		}
	}
}

func (v *validator) affinities(p string, as []*Affinity) {
	for _, a := range as {
		if a == nil {
			continue
		}
		if !ValidConstraintOperator(a.Operand) || strings.HasPrefix(a.Operand, "distinct_") {
			v.add(p, "affinity: invalid operator %q", a.Operand)
		}
		if a.Weight == 0 || int(a.Weight) > maxAffinityWeight || int(a.Weight) < -maxAffinityWeight {
			v.add(p, "affinity: weight %d must be non-zero and within [-100, 100]", a.Weight)
		}
		if a.LTarget == "" {
			v.add(p, "affinity: missing attribute")
		}
	}
}

func (v *validator) spreads(p string, ss []*Spread) {
	for _, s := range ss {
		if s == nil {
			continue
		}
		if s.Attribute == "" {
			v.add(p, "spread: missing attribute")
		}
		if s.Weight < 0 || s.Weight > 100 {
			v.add(p, "spread: weight %d out of range [0, 100]", s.Weight)
		}
		sum := 0
		seen := map[string]bool{}
		for _, t := range s.SpreadTarget {
			if t == nil {
				continue
			}
			if seen[t.Value] {
				v.add(p, "spread: duplicate target %q", t.Value)
			}
			seen[t.Value] = true
			sum += int(t.Percent)
		}
		if sum > 100 {
			v.add(p, "spread: target percentages sum to %d, above 100", sum)
		}
	}
}

func (v *validator) networks(p string, ns []*NetworkResource, labels map[string]bool) {
	for _, n := range ns {
		if n == nil {
			continue
		}
		if !slices.Contains(networkModes, n.Mode) && !strings.HasPrefix(n.Mode, "cni/") {
			v.add(p, "network: invalid mode %q", n.Mode)
		}
		for _, ports := range [][]Port{n.ReservedPorts, n.DynamicPorts} {
			for _, port := range ports {
				if port.Label == "" {
					v.add(p, "network: port without a label")
				} else if labels[port.Label] {
					v.add(p, "network: duplicate port %q", port.Label)
				}
				labels[port.Label] = true
				if port.Value < 0 || port.Value > maxPort || port.To < -1 || port.To > maxPort {
					v.add(p, "network: port %q out of range", port.Label)
				}
			}
		}
	}
}

func (v *validator) services(p string, ss []*Service) {
	for _, s := range ss {
		if s == nil {
			continue
		}
		sp := fmt.Sprintf("%sservice %q: ", p, s.Name)
		if !slices.Contains(addressModes, s.AddressMode) {
			v.add(sp, "invalid address_mode %q", s.AddressMode)
		}
		if !slices.Contains(serviceProviders, s.Provider) {
			v.add(sp, "invalid provider %q", s.Provider)
		}
		if s.OnUpdate != "" && !slices.Contains(onUpdates, s.OnUpdate) {
			v.add(sp, "invalid on_update %q (want one of %s)", s.OnUpdate, strings.Join(onUpdates, ", "))
		}
		for _, c := range s.Checks {
			if c == nil {
				continue
			}
			if !slices.Contains(checkTypes, c.Type) {
				v.add(sp, "check %q: invalid type %q (want one of %s)", c.Name, c.Type, strings.Join(checkTypes, ", "))
			}
			if c.Interval <= 0 || c.Timeout <= 0 {
				v.add(sp, "check %q: interval and timeout must be positive", c.Name)
			}
			if c.Type == "http" && c.Path == "" {
				v.add(sp, "check %q: http check needs a path", c.Name)
			}
			if c.Type == "script" && c.Command == "" {
				v.add(sp, "check %q: script check needs a command", c.Name)
			}
			if c.OnUpdate != "" && !slices.Contains(onUpdates, c.OnUpdate) {
				v.add(sp, "check %q: invalid on_update %q (want one of %s)", c.Name, c.OnUpdate, strings.Join(onUpdates, ", "))
			}
			if c.SuccessBeforePassing < 0 || c.FailuresBeforeCritical < 0 {
				v.add(sp, "check %q: success_before_passing and failures_before_critical must not be negative", c.Name)
			}
			if cr := c.CheckRestart; cr != nil && (cr.Limit < 0 || cr.Grace < 0) {
				v.add(sp, "check %q: check_restart limit and grace must not be negative", c.Name)
			}
		}
	}
}
