package cli

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

var queueCmd = &cobra.Command{Use: "queue", Short: "Manage queues (shares of the cluster that jobs name)"}

func init() {
	queueCmd.AddCommand(newQueueApplyCmd(), newQueueListCmd(), newQueueStatusCmd(), newQueueDeleteCmd())
	rootCmd.AddCommand(queueCmd)
}

// queuePath is the API path of one queue (its slashes stay path separators).
func queuePath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/v1/queue/" + strings.Join(parts, "/")
}

func newQueueApplyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "apply [flags] FILE", Short: "Create or update queues from an HCL or JSON file",
		Long: "Create or update queues from an HCL or JSON file.\n\n" + queueFileHelp, Args: exactArgs(1)}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		queues, err := readQueues(args[0])
		if err != nil {
			return cmdErr("queue apply: %w", err)
		}
		var body any = queues[0]
		if len(queues) > 1 {
			body = &api.QueueUpsertRequest{Queues: queues}
		}
		var resp api.QueueUpsertResponse
		if err := apiClient(cmd).Write(cmd.Context(), "PUT", "/v1/queues", body, &resp, nil); err != nil {
			return cmdErr("queue apply: %w", err)
		}
		for _, q := range queues {
			fmt.Fprintf(cmd.OutOrStdout(), "Successfully applied queue %q!\n", q.Name)
		}
		if resp.Warnings != "" {
			fmt.Fprintf(cmd.OutOrStdout(), "\nQueue Warnings:\n%s\n", resp.Warnings)
		}
		return nil
	}
	return cmd
}

func newQueueListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list [flags]", Short: "List queues with what they hold (GPUs allocated/guaranteed/limit)", Args: exactArgs(0)}
	prefix := cmd.Flags().String("prefix", "", "only queues whose name starts with this")
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		if c.Region == api.RegionAll {
			return queueListAll(cmd, c, *prefix) // queue_all.go
		}
		list, err := get[[]*api.QueueStatus](cmd, c, "queue list", "/v1/queues", &api.QueryOptions{Prefix: *prefix})
		return listAnswer(list, "", "Name\tWeight\tPriority\tGPUs\tCPU (MHz)\tMemory (MB)\tPending Jobs\tRunning Allocs", func(st *api.QueueStatus) string {
			q := st.Queue
			return fmt.Sprintf("%s\t%d\t%d\t%s\t%s\t%s\t%d\t%d", q.Name, q.EffectiveWeight(), q.Priority,
				triple(st.Allocated.GPUs, q.Guaranteed, q.Limit, func(r *api.QueueResources) float64 { return r.GPUs }),
				triple(float64(st.Allocated.CPU), q.Guaranteed, q.Limit, func(r *api.QueueResources) float64 { return float64(r.CPU) }),
				triple(float64(st.Allocated.MemoryMB), q.Guaranteed, q.Limit, func(r *api.QueueResources) float64 { return float64(r.MemoryMB) }),
				st.PendingJobs, st.RunningAllocs)
		}), err
	})
}

// triple renders "allocated/guaranteed/limit" ("-" for none; a zero
// limit is no cap); GPUs keep their fractions ("2.25").
func triple(alloc float64, g, l *api.QueueResources, f func(*api.QueueResources) float64) string {
	gs, ls := "-", "-"
	if g != nil && f(g) > 0 {
		gs = api.FormatGPUs(f(g))
	}
	if l != nil && f(l) > 0 {
		ls = api.FormatGPUs(f(l))
	}
	return fmt.Sprintf("%s/%s/%s", api.FormatGPUs(alloc), gs, ls)
}

func newQueueStatusCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "status [flags] NAME", Short: "Show a queue: allocated vs guaranteed vs limit, pending jobs, running allocs", Args: exactArgs(1)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		st, err := get[*api.QueueStatus](cmd, c, "queue status", queuePath(args[0]), nil)
		return answer{st, func(out io.Writer) error {
			q := st.Queue
			parent := q.Parent
			if parent == "" {
				parent = "(none)"
			}
			kv(out, "Name", q.Name, "Parent", parent, "Description", q.Description,
				"Weight", strconv.Itoa(q.EffectiveWeight()), "Priority", strconv.Itoa(q.Priority),
				"Pending Jobs", strconv.Itoa(st.PendingJobs), "Running Allocs", strconv.Itoa(st.RunningAllocs))
			fmt.Fprintln(out, "\nResources (this queue and its children)")
			printQueueResources(out, st)
			if st.Allocated.GPUs > 0 {
				// Requested vs used (job_gpu.go has the job's).
				fmt.Fprintf(out, "\nGPU %s requested, %s used (avg util %.0f%%), %d allocs with idle GPUs\n",
					fmtAmount(st.Allocated.GPUs), fmtAmount(st.GPUsUsed), 100*st.GPUsUsed/st.Allocated.GPUs, st.GPUIdleAllocs)
			}
			return nil
		}}, err
	})
}

// printQueueResources is a table of each resource (GPUs, each model, CPU,
// memory): allocated, guaranteed, limit and fair share ("-": none set;
// GPUs keep their fractions).
func printQueueResources(w io.Writer, st *api.QueueStatus) {
	type row struct {
		name string
		get  func(*api.QueueResources) (float64, bool)
	}
	nonZero := func(f func(*api.QueueResources) float64) func(*api.QueueResources) (float64, bool) {
		return func(r *api.QueueResources) (float64, bool) { v := f(r); return v, v != 0 }
	}
	rows := []row{
		{"gpu", nonZero(func(r *api.QueueResources) float64 { return r.GPUs })},
		{"cpu (MHz)", nonZero(func(r *api.QueueResources) float64 { return float64(r.CPU) })},
		{"memory (MB)", nonZero(func(r *api.QueueResources) float64 { return float64(r.MemoryMB) })},
	}
	q := st.Queue
	all := []*api.QueueResources{&st.Allocated, q.Guaranteed, q.Limit, st.FairShare}
	models := map[string]bool{}
	for _, r := range all {
		if r != nil {
			for m := range r.GPUsByModel {
				models[m] = true
			}
		}
	}
	for _, m := range sortedKeys(models) {
		rows = append(rows, row{"gpu " + m, func(r *api.QueueResources) (float64, bool) {
			if r == &st.Allocated { // what the key counts: a limit's "H100" holds every H100 model
				return r.ModelGPUs(m), true
			}
			v, ok := r.GPUsByModel[m]
			return v, ok
		}})
	}
	lines := make([]string, 0, len(rows))
	for _, rw := range rows {
		cells := []string{rw.name}
		for i, r := range all {
			v, ok := 0.0, false
			if r != nil {
				v, ok = rw.get(r)
			}
			if ok || i == 0 { // allocated: always a number
				cells = append(cells, api.FormatGPUs(v))
			} else {
				cells = append(cells, "-")
			}
		}
		lines = append(lines, strings.Join(cells, "\t"))
	}
	table(w, "Resource\tAllocated\tGuaranteed\tLimit\tFair Share", lines)
}

func newQueueDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "delete [flags] NAME", Short: "Delete a queue (it must have no child queues and no live jobs)", Args: exactArgs(1)}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := apiClient(cmd).Write(cmd.Context(), "DELETE", queuePath(args[0]), nil, nil, nil); err != nil {
			return cmdErr("queue delete: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Successfully deleted queue %q!\n", args[0])
		return nil
	}
	return cmd
}
