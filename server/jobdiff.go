package server

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drover/drover/api"
)

// serverSetJobFields are ignored by diffs: they change on every register.
var serverSetJobFields = map[string]bool{
	"Status": true, "StatusDescription": true, "Stable": true, "Version": true, "SubmitTime": true,
	"CreateIndex": true, "ModifyIndex": true, "JobModifyIndex": true, "TaskGroups": true,
}

// jobDiff compares the registered job (old, may be nil) with a proposed
// one (new, may be nil). Fields are compared flattened to dotted paths
// ("Update.MaxParallel", "Meta.owner", "Config.args[0]"); groups and tasks
// are matched by name.
func jobDiff(old, new *api.Job) *api.JobDiff {
	d := &api.JobDiff{Type: api.DiffTypeNone}
	switch {
	case old == nil && new == nil:
		return d
	case old == nil:
		d.Type, d.ID = api.DiffTypeAdded, new.ID
	case new == nil:
		d.Type, d.ID = api.DiffTypeDeleted, old.ID
	default:
		d.ID = new.ID
	}
	d.Fields = fieldDiffs(flatten(old, serverSetJobFields), flatten(new, serverSetJobFields))
	if old == nil && new != nil {
		base := &api.Job{ID: new.ID}
		if new.Update != nil {
			base.Update = &api.UpdateStrategy{} // the block's fields it leaves out
		}
		base.Canonicalize()
		markDefaults(d.Fields, flatten(base, serverSetJobFields))
	}
	groups := map[string][2]*api.TaskGroup{}
	var names []string
	add := func(tg *api.TaskGroup, i int) {
		p, ok := groups[tg.Name]
		if !ok {
			names = append(names, tg.Name)
		}
		p[i] = tg
		groups[tg.Name] = p
	}
	if old != nil {
		for _, tg := range old.TaskGroups {
			add(tg, 0)
		}
	}
	if new != nil {
		for _, tg := range new.TaskGroups {
			add(tg, 1)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := groups[n]
		if gd := groupDiff(new, n, p[0], p[1]); gd.Type != api.DiffTypeNone {
			d.TaskGroups = append(d.TaskGroups, gd)
		}
	}
	if d.Type == api.DiffTypeNone && (len(d.Fields) > 0 || len(d.TaskGroups) > 0) {
		d.Type = api.DiffTypeEdited
	}
	return d
}

// groupDiff compares a group of the registered job (old) with one of the
// proposed job (new, in job).
func groupDiff(job *api.Job, name string, old, new *api.TaskGroup) *api.TaskGroupDiff {
	d := &api.TaskGroupDiff{Name: name, Type: diffType(old == nil, new == nil)}
	skip := map[string]bool{"Tasks": true}
	d.Fields = fieldDiffs(flatten(old, skip), flatten(new, skip))
	if old == nil && new != nil {
		markDefaults(d.Fields, flatten(defaultGroup(job, new, nil), skip))
	}
	tasks := map[string][2]*api.Task{}
	var names []string
	add := func(t *api.Task, i int) {
		p, ok := tasks[t.Name]
		if !ok {
			names = append(names, t.Name)
		}
		p[i] = t
		tasks[t.Name] = p
	}
	if old != nil {
		for _, t := range old.Tasks {
			add(t, 0)
		}
	}
	if new != nil {
		for _, t := range new.Tasks {
			add(t, 1)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := tasks[n]
		td := &api.TaskDiff{Name: n, Type: diffType(p[0] == nil, p[1] == nil)}
		td.Fields = fieldDiffs(flatten(p[0], nil), flatten(p[1], nil))
		if p[0] == nil && p[1] != nil {
			markDefaults(td.Fields, flatten(defaultGroup(job, new, p[1]).Tasks[0], nil))
		}
		if td.Type == api.DiffTypeNone && len(td.Fields) > 0 {
			td.Type = api.DiffTypeEdited
		}
		if td.Type != api.DiffTypeNone {
			d.Tasks = append(d.Tasks, td)
		}
	}
	if d.Type == api.DiffTypeNone && (len(d.Fields) > 0 || len(d.Tasks) > 0) {
		d.Type = api.DiffTypeEdited
	}
	return d
}

// defaultGroup is what Canonicalize makes of a group named as tg in a
// job of job's type and update strategy, with nothing else set but empty
// blocks where tg has them (whose omitted fields get defaults): the
// defaults a job file leaves tg to. With task set, the group has that
// one task, alike, and tg's restart policy (which a task inherits).
func defaultGroup(job *api.Job, tg *api.TaskGroup, task *api.Task) *api.TaskGroup {
	j := &api.Job{ID: job.ID, Type: job.Type}
	if job.Update != nil {
		u := *job.Update
		j.Update = &u
	}
	g := &api.TaskGroup{Name: tg.Name, Count: 1}
	if task == nil {
		if tg.Update != nil && job.Update == nil {
			g.Update = &api.UpdateStrategy{} // else it inherits the job's
		}
		if tg.Migrate != nil {
			g.Migrate = &api.MigrateStrategy{}
		}
		g.Services = emptyServices(tg.Services)
	} else {
		if tg.RestartPolicy != nil {
			rp := *tg.RestartPolicy
			g.RestartPolicy = &rp
		}
		t := &api.Task{Name: task.Name, Services: emptyServices(task.Services)}
		if task.Identity != nil {
			t.Identity = &api.WorkloadIdentity{}
		}
		for range task.Templates {
			t.Templates = append(t.Templates, &api.Template{})
		}
		g.Tasks = []*api.Task{t}
	}
	j.TaskGroups = []*api.TaskGroup{g}
	j.Canonicalize()
	return g
}

// emptyServices is ss with every service and check empty.
func emptyServices(ss []*api.Service) []*api.Service {
	out := make([]*api.Service, 0, len(ss))
	for _, s := range ss {
		e := &api.Service{}
		if s != nil {
			for range s.Checks {
				e.Checks = append(e.Checks, &api.ServiceCheck{})
			}
		}
		out = append(out, e)
	}
	return out
}

// markDefaults annotates the added fields whose value is the default
// (base: the defaults, flattened) with api.FieldDefault.
func markDefaults(fields []*api.FieldDiff, base map[string]string) {
	for _, f := range fields {
		if v, ok := base[f.Name]; ok && f.Type == api.DiffTypeAdded && v == f.New {
			f.Annotations = append(f.Annotations, api.FieldDefault)
		}
	}
}

func diffType(oldNil, newNil bool) string {
	switch {
	case oldNil && !newNil:
		return api.DiffTypeAdded
	case !oldNil && newNil:
		return api.DiffTypeDeleted
	}
	return api.DiffTypeNone
}

// fieldDiffs lists added, deleted and edited paths, sorted by name.
func fieldDiffs(old, new map[string]string) []*api.FieldDiff {
	var out []*api.FieldDiff
	for k, nv := range new {
		ov, ok := old[k]
		switch {
		case !ok:
			out = append(out, &api.FieldDiff{Type: api.DiffTypeAdded, Name: k, New: nv})
		case ov != nv:
			out = append(out, &api.FieldDiff{Type: api.DiffTypeEdited, Name: k, Old: ov, New: nv})
		}
	}
	for k, ov := range old {
		if _, ok := new[k]; !ok {
			out = append(out, &api.FieldDiff{Type: api.DiffTypeDeleted, Name: k, Old: ov})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// flatten renders v as dotted path -> scalar string (the paths use the
// JSON field names; fields omitted from the JSON form are left out), skipping
// the named top-level fields. Durations print as durations ("24h0m0s"),
// numbers in task config without exponents. A nil pointer flattens to
// nothing.
func flatten[T any](v *T, skip map[string]bool) map[string]string {
	out := map[string]string{}
	if v == nil {
		return out
	}
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		name, ok := jsonField(rv.Type().Field(i), rv.Field(i))
		if ok && !skip[name] {
			flattenInto(out, name, rv.Field(i))
		}
	}
	return out
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	timeType     = reflect.TypeFor[time.Time]()
)

// jsonField returns a struct field's JSON name, false when encoding/json
// would leave it out (unexported, "-", or empty with omitempty).
func jsonField(f reflect.StructField, v reflect.Value) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "-" && opts == "" {
		return "", false
	}
	if name == "" {
		name = f.Name
	}
	if strings.Contains(","+opts+",", ",omitempty,") && v.IsZero() {
		return "", false
	}
	return name, true
}

func flattenInto(out map[string]string, path string, v reflect.Value) {
	switch {
	case v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface:
		if !v.IsNil() {
			flattenInto(out, path, v.Elem())
		}
	case v.Type() == durationType:
		out[path] = time.Duration(v.Int()).String()
	case v.Type() == timeType:
		if t := v.Interface().(time.Time); !t.IsZero() {
			out[path] = t.UTC().Format(time.RFC3339)
		}
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if name, ok := jsonField(v.Type().Field(i), v.Field(i)); ok {
				flattenInto(out, path+"."+name, v.Field(i))
			}
		}
	case v.Kind() == reflect.Map:
		for _, k := range v.MapKeys() {
			flattenInto(out, path+"."+fmt.Sprint(k.Interface()), v.MapIndex(k))
		}
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		if v.Len() > 0 {
			out[path] = base64.StdEncoding.EncodeToString(v.Bytes())
		}
	case v.Kind() == reflect.Slice || v.Kind() == reflect.Array:
		for i := range v.Len() {
			flattenInto(out, fmt.Sprintf("%s[%d]", path, i), v.Index(i))
		}
	case v.Kind() == reflect.Float64 || v.Kind() == reflect.Float32:
		out[path] = strconv.FormatFloat(v.Float(), 'f', -1, 64)
	default:
		out[path] = fmt.Sprint(v.Interface())
	}
}
