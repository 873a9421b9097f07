package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	sched := &cobra.Command{Use: "scheduler", Short: "Read and change the cluster's scheduler configuration"}
	sched.AddCommand(newSchedulerGetConfigCmd(), newSchedulerSetConfigCmd())
	operatorCmd.AddCommand(sched)
}

func newSchedulerGetConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "get-config", Short: "Show the scheduler configuration", Args: exactArgs(0)}
	jsonOut := addJSONFlag(cmd)
	stale := cmd.Flags().Bool("stale", false, "let any server answer from its own (possibly stale) state")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		resp, _, err := apiClient(cmd).SchedulerGetConfiguration(cmd.Context(), &api.QueryOptions{AllowStale: *stale})
		if err != nil {
			return cmdErr("get scheduler configuration: %w", err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, resp)
		}
		c := resp.SchedulerConfig
		if c == nil {
			c = api.DefaultSchedulerConfiguration()
		}
		b := strconv.FormatBool
		kv(out, "Scheduler Algorithm", c.Algorithm(),
			"Memory Oversubscription", b(c.MemoryOversubscriptionEnabled),
			"Reject Job Registration", b(c.RejectJobRegistration),
			"Pause Eval Broker", b(c.PauseEvalBroker),
			"Usage Retention Hours", strconv.Itoa(usageRetention(c)),
			"Modify Index", strconv.FormatUint(c.ModifyIndex, 10))
		fmt.Fprintln(out, "\nPreemption Config")
		p := c.PreemptionConfig
		kv(out, "System Scheduler Enabled", b(p.SystemSchedulerEnabled),
			"SysBatch Scheduler Enabled", b(p.SysBatchSchedulerEnabled),
			"Service Scheduler Enabled", b(p.ServiceSchedulerEnabled),
			"Batch Scheduler Enabled", b(p.BatchSchedulerEnabled))
		return nil
	}
	return cmd
}

// newSchedulerSetConfigCmd changes only the settings whose flags are
// given, on top of the current configuration (like Nomad's set-config).
func newSchedulerSetConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "set-config", Short: "Change the scheduler configuration (only the settings given)", Args: exactArgs(0)}
	f := cmd.Flags()
	algorithm := f.String("scheduler-algorithm", "", `placement algorithm: "binpack" or "spread"`)
	system := f.Bool("preempt-system-scheduler", false, "let system jobs preempt lower-priority allocs")
	sysbatch := f.Bool("preempt-sysbatch-scheduler", false, "let sysbatch jobs preempt lower-priority allocs")
	batch := f.Bool("preempt-batch-scheduler", false, "let batch jobs preempt lower-priority allocs")
	service := f.Bool("preempt-service-scheduler", false, "let service jobs preempt lower-priority allocs")
	retention := f.Int("usage-retention-hours", 0, "hours of hourly buckets the usage ledger keeps (0: 90 days)")
	checkIndex := f.Uint64("check-index", 0, "write only if the configuration's ModifyIndex is still this (check-and-set)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("scheduler-algorithm") {
			switch *algorithm {
			case api.SchedulerAlgorithmBinpack, api.SchedulerAlgorithmSpread:
			default:
				return usageErr("-scheduler-algorithm %q: want %q or %q", *algorithm, api.SchedulerAlgorithmBinpack, api.SchedulerAlgorithmSpread)
			}
		}
		client := apiClient(cmd)
		cur, _, err := client.SchedulerGetConfiguration(cmd.Context(), nil)
		if err != nil {
			return cmdErr("get scheduler configuration: %w", err)
		}
		c := cur.SchedulerConfig.Copy()
		if c == nil {
			c = api.DefaultSchedulerConfiguration()
		}
		changed := cmd.Flags().Changed
		if changed("scheduler-algorithm") {
			c.SchedulerAlgorithm = *algorithm
		}
		if changed("usage-retention-hours") {
			c.UsageRetentionHours = *retention
		}
		for _, p := range []struct {
			flag string
			val  *bool
			dst  *bool
		}{
			{"preempt-system-scheduler", system, &c.PreemptionConfig.SystemSchedulerEnabled},
			{"preempt-sysbatch-scheduler", sysbatch, &c.PreemptionConfig.SysBatchSchedulerEnabled},
			{"preempt-batch-scheduler", batch, &c.PreemptionConfig.BatchSchedulerEnabled},
			{"preempt-service-scheduler", service, &c.PreemptionConfig.ServiceSchedulerEnabled},
		} {
			if changed(p.flag) {
				*p.dst = *p.val
			}
		}
		var resp *api.SchedulerSetConfigurationResponse
		if changed("check-index") {
			resp, err = client.SchedulerCASConfiguration(cmd.Context(), c, *checkIndex)
		} else {
			resp, err = client.SchedulerSetConfiguration(cmd.Context(), c)
		}
		if err != nil {
			return cmdErr("set scheduler configuration: %w", err)
		}
		if !resp.Updated {
			return cmdErr("scheduler configuration not updated: its ModifyIndex is no longer %d (read it again with get-config)", *checkIndex)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Scheduler configuration updated (index %d)\n", resp.Index)
		return nil
	}
	return cmd
}

// usageRetention is the ledger's effective retention in hours.
func usageRetention(c *api.SchedulerConfiguration) int {
	if c.UsageRetentionHours > 0 {
		return c.UsageRetentionHours
	}
	return api.DefaultUsageRetentionHours
}
