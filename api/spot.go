package api

// Spot capacity choices of a job or group (Job.Spot, TaskGroup.Spot; the
// group's wins): "allow" (the default) places on any node, "never" keeps
// off nodes of spot capacity (serving), "prefer" ranks them first
// (training that checkpoints).
const (
	SpotAllow  = "allow"
	SpotNever  = "never"
	SpotPrefer = "prefer"
)

// NodeMetaSpot is the node meta key that marks spot (preemptible)
// capacity: "true" on such nodes (the autoscaler sets it from the node
// shape; operators may set it on a client's meta).
const NodeMetaSpot = "drover.spot"

// SpotChoice is the spot choice of a group of j: the group's, else the
// job's, else SpotAllow.
func (j *Job) SpotChoice(tg *TaskGroup) string {
	if tg != nil && tg.Spot != "" {
		return tg.Spot
	}
	if j != nil && j.Spot != "" {
		return j.Spot
	}
	return SpotAllow
}

func validSpot(s string) bool { return s == "" || s == SpotAllow || s == SpotNever || s == SpotPrefer }
