package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

// newMonitorCmd is `drover monitor`: stream the agent's logs, as Nomad's.
func newMonitorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "monitor [flags]",
		Short: "Stream the logs of the agent at -address (until interrupted)",
		Args:  exactArgs(0),
	}
	level := cmd.Flags().String("log-level", "info", "lowest level shown: trace, debug, info, warn or error")
	asJSON := cmd.Flags().Bool("json", false, "print the records as JSON lines")
	nodeID := cmd.Flags().String("node-id", "", "the agent to monitor, by name (only the agent at -address is served)")
	serverID := cmd.Flags().String("server-id", "", "the server to monitor, by name (only the agent at -address is served)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		q := url.Values{"log_level": {*level}}
		if *asJSON {
			q.Set("log_json", "true")
		}
		if *nodeID != "" {
			q.Set("node_id", *nodeID)
		}
		if *serverID != "" {
			q.Set("server_id", *serverID)
		}
		return streamMonitor(cmd.Context(), cmd.OutOrStdout(), apiClient(cmd), q)
	}
	return cmd
}

// streamMonitor copies the agent's log frames to w until ctx ends (a
// clean exit) or the stream breaks.
func streamMonitor(ctx context.Context, w io.Writer, c *api.Client, q url.Values) error {
	resp, err := c.Raw(ctx, http.MethodGet, "/v1/agent/monitor", q, nil)
	if err != nil {
		return cmdErr("monitor: %w", err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var f api.StreamFrame
		if err := dec.Decode(&f); err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			return cmdErr("monitor: read stream: %w", err)
		}
		if _, err := w.Write(f.Data); err != nil {
			return cmdErr("monitor: %w", err)
		}
	}
}
