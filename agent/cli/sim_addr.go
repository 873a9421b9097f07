package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

// simReachTimeout bounds the check that a server answers before the
// simulator registers its nodes.
const simReachTimeout = 5 * time.Second

// simServers is the servers drover sim talks to: -servers, else the
// CLI's address (-address, $DROVER_ADDR, $NOMAD_ADDR, the default). At
// least one must answer HTTP now: otherwise the command fails at once
// saying where it looked, instead of retrying registrations for half a
// minute.
func simServers(ctx context.Context, cmd *cobra.Command, servers []string) ([]string, error) {
	if len(servers) == 0 {
		servers = []string{apiClient(cmd).Address}
	}
	var errs []string
	for _, s := range servers {
		c := api.NewClient(s)
		rctx, cancel := context.WithTimeout(ctx, simReachTimeout)
		_, err := c.Leader(rctx)
		cancel()
		var ae *api.Error
		if err == nil || errors.As(err, &ae) { // an HTTP answer, even an error: a server is there
			return servers, nil
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		errs = append(errs, fmt.Sprintf("%s (%v)", c.Address, err))
	}
	return nil, cmdErr("no drover server answers at %s: start one (drover agent -dev) or give its address with -servers, -address or DROVER_ADDR",
		strings.Join(errs, ", "))
}
