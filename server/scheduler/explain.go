package scheduler

import (
	"sort"
	"strings"

	"github.com/drover/drover/api"
)

// ExplainFailure turns a failed group's metric into one human line for
// `job plan` and `job status`, e.g.
//
//	web: 3 allocs unplaced; 5 nodes evaluated: 2 filtered (${attr.kernel.name} = windows: 2), 3 exhausted (devices: nvidia/gpu: 3)
func ExplainFailure(group string, m *api.AllocMetric) string {
	if m == nil {
		return group + ": no placement data"
	}
	var b strings.Builder
	b.WriteString(group)
	b.WriteString(": ")
	if n := 1 + m.CoalescedFailures; n == 1 {
		b.WriteString("1 alloc unplaced")
	} else {
		b.WriteString(itoa(n) + " allocs unplaced")
	}
	if m.GangFailure != "" {
		b.WriteString("; " + m.GangFailure)
		if m.NodesEvaluated == 0 {
			return b.String()
		}
	}
	for _, q := range m.QuotaExhausted {
		b.WriteString("; " + q) // "queue team-a: gpu 16 of 16 used, 1 more asked"
	}
	if m.NodesEvaluated == 0 {
		if len(m.QuotaExhausted) > 0 {
			return b.String() // refused on a queue limit before any node was looked at
		}
		b.WriteString("; no ready nodes in the job's datacenters and node pool")
		return b.String()
	}
	b.WriteString("; " + itoa(m.NodesEvaluated) + " nodes evaluated")
	sep := ": "
	if m.NodesFiltered > 0 {
		b.WriteString(sep + itoa(m.NodesFiltered) + " filtered (" + countList(m.ConstraintFiltered) + ")")
		sep = ", "
	}
	if m.NodesExhausted > 0 {
		b.WriteString(sep + itoa(m.NodesExhausted) + " exhausted (" + countList(m.DimensionExhausted) + ")")
	}
	return b.String()
}

// ExplainGroup is ExplainFailure with what the group asks for inserted
// after the group name, e.g. "train: needs 4 nvidia/gpu with memory >= 40
// GiB; 1 alloc unplaced; 3 nodes evaluated: 3 exhausted (devices:
// nvidia/gpu: 3)".
func ExplainGroup(tg *api.TaskGroup, m *api.AllocMetric) string {
	var asks []string
	for _, t := range tg.Tasks {
		if t.Resources == nil {
			continue
		}
		for _, d := range t.Resources.Devices {
			asks = append(asks, describeAsk(d))
		}
	}
	out := ExplainFailure(tg.Name, m)
	if len(asks) == 0 {
		return out
	}
	return tg.Name + ": needs " + strings.Join(asks, " and ") + "; " + strings.TrimPrefix(out, tg.Name+": ")
}

func countList(m map[string]int) string {
	keys := sortedKeys(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + itoa(m[k])
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
