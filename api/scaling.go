package api

import (
	"crypto/sha256"
	"fmt"
)

// Scaling policy types.
const (
	ScalingPolicyTypeHorizontal = "horizontal"
)

// ScalingPolicy is a group's scaling block: the bounds `job scale` keeps
// its count within and, in Policy, what an external autoscaler reads
// (Nomad's shape; GET /v1/scaling/policies).
type ScalingPolicy struct {
	ID        string `json:"ID,omitempty"`
	Namespace string `json:"Namespace,omitempty"`
	// Target names the group: Namespace, Job, Group.
	Target  map[string]string `json:"Target,omitempty"`
	Type    string            `json:"Type,omitempty"`
	Min     int64             `json:"Min"`
	Max     int64             `json:"Max"`
	Enabled bool              `json:"Enabled"`
	// Policy is the autoscaler's configuration, as written.
	Policy      map[string]any `json:"Policy,omitempty"`
	CreateIndex uint64         `json:"CreateIndex,omitempty"`
	ModifyIndex uint64         `json:"ModifyIndex,omitempty"`
}

// ScalingPolicyListStub is one row of GET /v1/scaling/policies.
type ScalingPolicyListStub struct {
	ID          string            `json:"ID"`
	Enabled     bool              `json:"Enabled"`
	Type        string            `json:"Type"`
	Target      map[string]string `json:"Target"`
	CreateIndex uint64            `json:"CreateIndex"`
	ModifyIndex uint64            `json:"ModifyIndex"`
}

// Stub is the policy's list row.
func (p *ScalingPolicy) Stub() *ScalingPolicyListStub {
	return &ScalingPolicyListStub{ID: p.ID, Enabled: p.Enabled, Type: p.Type, Target: p.Target,
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
}

// ScalingPolicyID is the stable ID of a group's policy: a UUID-shaped
// hash of namespace, job and group (the policy lives in the job).
func ScalingPolicyID(namespace, job, group string) string {
	h := sha256.Sum256([]byte(namespace + "\x00" + job + "\x00" + group))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// ScalingPolicies returns the job's group scaling policies, filled with
// their target, ID and the job's indexes.
func (j *Job) ScalingPolicies() []*ScalingPolicy {
	var out []*ScalingPolicy
	for _, tg := range j.TaskGroups {
		if tg == nil || tg.Scaling == nil {
			continue
		}
		p := *tg.Scaling
		p.Namespace = j.Namespace
		p.Target = map[string]string{"Namespace": j.Namespace, "Job": j.ID, "Group": tg.Name}
		p.ID = ScalingPolicyID(j.Namespace, j.ID, tg.Name)
		if p.Type == "" {
			p.Type = ScalingPolicyTypeHorizontal
		}
		p.CreateIndex, p.ModifyIndex = j.CreateIndex, j.JobModifyIndex
		out = append(out, &p)
	}
	return out
}

// scaling checks a group's scaling block against its count.
func (v *validator) scaling(p string, tg *TaskGroup) {
	s := tg.Scaling
	if s == nil {
		return
	}
	switch {
	case s.Min < 0:
		v.add(p, "scaling: min %d must not be negative", s.Min)
	case s.Max < s.Min:
		v.add(p, "scaling: max %d is below min %d", s.Max, s.Min)
	case int64(tg.Count) < s.Min || int64(tg.Count) > s.Max:
		v.add(p, "scaling: count %d is outside [min %d, max %d]", tg.Count, s.Min, s.Max)
	}
	if s.Type != "" && s.Type != ScalingPolicyTypeHorizontal {
		v.add(p, "scaling: type %q is not supported (want %q)", s.Type, ScalingPolicyTypeHorizontal)
	}
}
