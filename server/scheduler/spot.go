package scheduler

import "github.com/drover/drover/api"

// migrateDescription is the desired description of an alloc a drain
// migrates off node n: the drain's reason when it has one (a spot
// interruption says so, and the client maps it to the task's stop
// reason).
func migrateDescription(n *api.Node) string {
	if n != nil && n.DrainStrategy != nil && n.DrainStrategy.Reason != "" {
		return "alloc is being migrated: " + n.DrainStrategy.Reason
	}
	return "alloc is being migrated"
}

// spotWeight is the affinity weight of spot = "prefer".
const spotWeight = 50

// spotRules are the constraint and affinity a group's spot choice adds:
// "never" keeps it off nodes whose meta drover.spot is set (only spot
// nodes carry it), "prefer" ranks nodes with drover.spot = "true" first.
// Both show in why pending and the scores like the user's own.
func spotRules(job *api.Job, tg *api.TaskGroup) ([]*api.Constraint, []*api.Affinity) {
	target := "${meta." + api.NodeMetaSpot + "}"
	switch job.SpotChoice(tg) {
	case api.SpotNever:
		return []*api.Constraint{{LTarget: target, Operand: api.ConstraintAttributeNotSet}}, nil
	case api.SpotPrefer:
		return nil, []*api.Affinity{{LTarget: target, Operand: "=", RTarget: "true", Weight: spotWeight}}
	}
	return nil, nil
}
