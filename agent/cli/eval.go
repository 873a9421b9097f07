package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	evalCmd.AddCommand(newEvalStatusCmd())
	serverCmd.AddCommand(newServerMembersCmd())
	rootCmd.AddCommand(newStatusCmd())
}

func newEvalStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [flags] ID",
		Short: "Show an evaluation and why its placements failed",
		Args:  exactArgs(1),
	}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		e, err := resolveEval(cmd.Context(), c, args[0])
		if err != nil {
			return answer{}, cmdErr("evaluation %q: %w", args[0], err)
		}
		return answer{e, func(out io.Writer) error {
			kv(out, "ID", e.ID, "Create Time", fmtUnixNano(e.CreateTime), "Modify Time", fmtUnixNano(e.ModifyTime),
				"Status", e.Status, "Status Description", e.StatusDescription, "Type", e.Type,
				"TriggeredBy", e.TriggeredBy, "Job ID", e.JobID, "Namespace", e.Namespace,
				"Priority", fmt.Sprint(e.Priority), "Placement Failures", fmt.Sprint(len(e.FailedTGAllocs) > 0),
				"Previous Eval", e.PreviousEval, "Next Eval", e.NextEval, "Blocked Eval", e.BlockedEval)
			if len(e.FailedTGAllocs) > 0 {
				fmt.Fprintln(out, "\nFailed Placements")
				job, _, _ := c.Job(cmd.Context(), e.JobID, &api.QueryOptions{Namespace: e.Namespace}) // for gang lines; nil is fine
				for _, l := range failureLines(e.FailedTGAllocs, job) {
					fmt.Fprintln(out, l)
				}
			}
			return nil
		}}, nil
	})
}

func newServerMembersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the servers of the cluster",
		Args:  exactArgs(0),
	}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		m, err := c.Members(cmd.Context())
		if err != nil {
			return answer{}, cmdErr("list members: %w", err)
		}
		leaders := regionLeaders(cmd.Context(), c, m.Members)
		return answer{m, func(out io.Writer) error {
			sort.Slice(m.Members, func(i, j int) bool { return m.Members[i].Name < m.Members[j].Name })
			perRegion := map[string]int{}
			for _, s := range m.Members {
				perRegion[s.Tags["region"]]++
			}
			listTable(out, m.Members, "", "Name\tAddress\tPort\tStatus\tLeader\tRaft Version\tBuild\tDatacenter\tRegion", func(s *api.AgentMember) string {
				// A lone server that knows a leader is it (dev mode's in-memory
				// Raft has no host:port address to compare).
				region := s.Tags["region"]
				leader := leaders[region]
				isLeader := leader != "" && (s.Tags["raft_addr"] == leader || perRegion[region] == 1)
				return fmt.Sprintf("%s\t%s\t%d\t%s\t%v\t%s\t%s\t%s\t%s", s.Name, s.Addr, s.Port, s.Status, isLeader,
					raftVersion, orDash(s.Tags["build"]), s.Tags["dc"], region)
			})
			return nil
		}}, nil
	})
}

// raftVersion is the Raft protocol version every drover server speaks
// (hashicorp/raft's protocol 3), Nomad's "Raft Version" column.
const raftVersion = "3"

// regionLeaders asks each region's servers (forwarded by region) who
// leads it; a region that does not answer has no leader shown.
func regionLeaders(ctx context.Context, c *api.Client, members []*api.AgentMember) map[string]string {
	out := map[string]string{}
	for _, s := range members {
		region := s.Tags["region"]
		if _, done := out[region]; done {
			continue
		}
		rc := *c
		rc.Region = region
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		out[region], _ = rc.Leader(lctx)
		cancel()
	}
	return out
}

func newStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [ID]",
		Short: "List jobs, or show the job, allocation, evaluation or node with this ID (prefix)",
		Args:  rangeArgs(0, 1),
	}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		ctx := cmd.Context()
		if len(args) == 0 {
			jobs, _, err := c.Jobs(ctx, &api.QueryOptions{Namespace: "*"})
			if err != nil {
				return answer{}, cmdErr("list jobs: %w", err)
			}
			return listAnswer(jobs, "No running jobs", "ID\tNamespace\tType\tPriority\tStatus", func(j *api.JobListStub) string {
				return fmt.Sprintf("%s\t%s\t%s\t%d\t%s", j.ID, j.Namespace, j.Type, j.Priority, j.Status)
			}), nil
		}
		id := args[0]
		if job, _, err := c.Job(ctx, id, nil); err == nil {
			return answer{job, func(out io.Writer) error {
				summary, _, _ := c.JobSummary(ctx, job.ID, nil)
				allocs, _, _ := c.JobAllocations(ctx, job.ID, nil)
				evals, _, _ := c.JobEvaluations(ctx, job.ID, nil)
				printJobStatus(out, job, summary, allocs, evals)
				return nil
			}}, nil
		}
		if a, err := resolveAlloc(ctx, c, id); err == nil {
			return answer{a, func(out io.Writer) error {
				printAlloc(out, a, false)
				return nil
			}}, nil
		}
		if n, err := resolveNode(ctx, c, id); err == nil {
			return answer{n, func(out io.Writer) error {
				printNode(out, n, nil, false)
				return nil
			}}, nil
		}
		if e, err := resolveEval(ctx, c, id); err == nil {
			return answer{e, func(out io.Writer) error {
				kv(out, "ID", e.ID, "Status", e.Status, "Job ID", e.JobID, "TriggeredBy", e.TriggeredBy)
				return nil
			}}, nil
		}
		return answer{}, cmdErr("no job, allocation, node or evaluation matches %q", id)
	})
}
