// Package federation is how servers of different regions find each
// other: a second gossip pool (the WAN pool, agent/gossip on its own
// port, servers only, encrypted with the gossip key) whose members are
// named "name.region" and carry their region, datacenter, HTTP and Raft
// addresses and whether their API speaks TLS. It answers the region
// questions the rest of the agent asks: which regions exist (Regions,
// GET /v1/regions) and which live servers of a region a request for it
// can go to (RegionServers: the HTTP layer's cross-region forwarding and
// the ACL replication from the authoritative region use it).
//
// Each region keeps its own Raft cluster: nothing here touches Raft, and
// the agent's LAN pool refuses members of other regions (Accept), so
// servers of two regions never bootstrap or autopilot each other.
//
// Servers of one region join each other's WAN addresses on their own
// (JoinPeers, fed by the LAN pool's "wan_addr" tags), so one join per
// region pair (`drover server join ADDR`, or server_join.retry_join_wan)
// federates every server of both.
//
// Acting on another region is not this package's: a request with
// ?region= (api.Client.Region) sent to any agent's HTTP API is forwarded
// there by agent/http (region.go), which asks RegionServers where to; a
// server's own calls to other regions go through its own API the same way
// (the agent's regionAPI), so there is one path between regions.
//
// It imports agent/gossip only.
//
// Concurrency: every method of *Federation is safe for concurrent use.
// Federation owns the gossip pool's goroutines and the JoinPeers
// goroutine; Shutdown stops and waits for all of them.
package federation
