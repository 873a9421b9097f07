package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/agent/hugepages"
	"github.com/drover/drover/agent/sim"
)

func init() { rootCmd.AddCommand(newSimCmd()) }

// newSimCmd is `drover sim`: simulated client nodes against real servers
// (agent/sim), for scale tests.
func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate thousands of client nodes against drover servers (scale testing)",
		Long: `Runs -nodes simulated clients in this process over the real client protocol
(register, heartbeat, blocking allocation reads, batched status updates). They
run nothing: an allocation reads running after -run-delay and, with
-complete-after, complete (or failed, with probability -fail-rate) after that.
They join node pool "sim" (-node-pool), so that only jobs that ask for them
(node_pool = "sim") are placed on them, never work meant for real nodes.
Counters are printed every -report interval until interrupted.`,
		Args: cobra.NoArgs,
	}
	servers := cmd.Flags().String("servers", "", "comma-separated server HTTP addresses (default -address, $DROVER_ADDR, $NOMAD_ADDR or http://127.0.0.1:4646)")
	nodes := cmd.Flags().Int("nodes", 1000, "how many nodes to simulate")
	gpus := cmd.Flags().String("gpus", "", "simulated GPU server shape each node has (dgxa100, dgxh100, dgxh200, dgxb200; :mig for MIG)")
	dcs := cmd.Flags().String("datacenters", "dc1", "comma-separated datacenters, assigned round-robin")
	pool := cmd.Flags().String("node-pool", "", "node pool of every node (default \"sim\", created if missing: only jobs with node_pool = \"sim\" land on simulated nodes)")
	class := cmd.Flags().String("node-class", "", "node class of every node")
	prefix := cmd.Flags().String("name-prefix", "sim-", "node name prefix")
	runDelay := cmd.Flags().Duration("run-delay", 2*time.Second, "how long an allocation takes to start")
	completeAfter := cmd.Flags().Duration("complete-after", 0, "end each running allocation after this long (0: run until stopped)")
	failRate := cmd.Flags().Float64("fail-rate", 0, "share of allocations that fail (0 to 1)")
	seed := cmd.Flags().Uint64("seed", 1, "seed of node IDs, jitter and failures (same seed: same nodes)")
	workers := cmd.Flags().Int("workers", 64, "requests in flight for registers and status updates")
	http1 := cmd.Flags().Bool("http1", false, "use HTTP/1.1 (a connection per node) instead of cleartext HTTP/2")
	report := cmd.Flags().Duration("report", 5*time.Second, "how often to print the counters")
	logLevel := cmd.Flags().String("log-level", "warn", "log level: debug, info, warn or error")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		level, err := parseLevel(*logLevel)
		if err != nil {
			return usageErr("%v", err)
		}
		if *report <= 0 {
			return usageErr("-report %v: want a positive interval", *report)
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		addrs, err := simServers(ctx, cmd, splitList(*servers))
		if err != nil {
			return err
		}
		cfg := sim.Config{Servers: addrs, Nodes: *nodes, GPUs: *gpus, Datacenters: splitList(*dcs),
			NodePool: *pool, NodeClass: *class, NamePrefix: *prefix, RunDelay: *runDelay, CompleteAfter: *completeAfter,
			FailRate: *failRate, Seed: *seed, Workers: *workers, HTTP1: *http1,
			Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))}
		defer hugepages.StartFromEnv(cfg.Logger).Stop()
		out := cmd.OutOrStdout()
		start := time.Now()
		s, err := sim.Start(ctx, cfg)
		if err != nil {
			return cmdErr("start simulator: %w", err)
		}
		defer s.Stop()
		fmt.Fprintf(out, "==> %d simulated nodes registered in %v\n", *nodes, time.Since(start).Round(time.Millisecond))
		t := time.NewTicker(*report)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				printSimStats(cmd, s.Stats())
				return nil
			case <-t.C:
				printSimStats(cmd, s.Stats())
			}
		}
	}
	return cmd
}

func printSimStats(cmd *cobra.Command, st sim.Stats) {
	fmt.Fprintf(cmd.OutOrStdout(), "%s nodes=%d running=%d started=%d complete=%d failed=%d heartbeats=%d hb_errors=%d hb_missed=%d reads=%d updates=%d update_errors=%d\n",
		time.Now().Format(time.TimeOnly), st.Registered, st.Running, st.Started, st.Completed, st.Failed,
		st.Heartbeats, st.HeartbeatErrors, st.MissedHeartbeats, st.AllocReads, st.UpdateBatches, st.UpdateErrors)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
