package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

// queueListAll is `queue list -region all`: every region's queues, a
// Region column first, and a line for each region that did not answer.
func queueListAll(cmd *cobra.Command, c *api.Client, prefix string) (answer, error) {
	all, err := get[*api.QueueStatusesAll](cmd, c, "queue list", "/v1/queues", &api.QueryOptions{Prefix: prefix})
	if err != nil {
		return answer{}, err
	}
	return answer{all, func(w io.Writer) error {
		listTable(w, all.Queues, "", "Region\tName\tGPUs\tCPU (MHz)\tMemory (MB)\tPending Jobs\tRunning Allocs", func(st *api.QueueStatus) string {
			q := st.Queue
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%d", st.Region, q.Name,
				triple(st.Allocated.GPUs, q.Guaranteed, q.Limit, func(r *api.QueueResources) float64 { return r.GPUs }),
				triple(float64(st.Allocated.CPU), q.Guaranteed, q.Limit, func(r *api.QueueResources) float64 { return float64(r.CPU) }),
				triple(float64(st.Allocated.MemoryMB), q.Guaranteed, q.Limit, func(r *api.QueueResources) float64 { return float64(r.MemoryMB) }),
				st.PendingJobs, st.RunningAllocs)
		})
		printPartial(w, all.Missing)
		return nil
	}}, nil
}
