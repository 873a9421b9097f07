package server

import "github.com/drover/drover/api"

// Regions reaches the servers of the other regions of a federation (the
// agent implements it over the WAN gossip pool and its API forwarding;
// nil when the agent is not federated). Multiregion jobs and spill-over
// use it; a region's own state is never written through it.
type Regions interface {
	// Known lists the regions the WAN pool knows, this one included,
	// sorted.
	Known() []string
	// Client is an API client whose requests go to a live server of
	// region (mTLS with this server's certificate when TLS is on), sending
	// token as the ACL token ("" for none: the request runs with the
	// server's own identity where the remote allows it). An unknown or
	// unreachable region is an api error with code unknown_region or
	// region_unavailable.
	Client(region, token string) (*api.Client, error)
}
