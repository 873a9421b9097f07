// Package gossip is the servers' membership layer: a thin wrapper around
// hashicorp/memberlist that gives every member a set of tags (role,
// region, datacenter, raft address, HTTP address, version ...), tracks
// each member's status (alive, failed, left) until it is reaped, reconnects
// to failed members so a healed partition merges again, and manages the
// gossip encryption keyring cluster-wide (install, use, remove, list)
// so keys rotate without members flapping. Config.Accept keeps members
// out of the pool (the agent's LAN pool takes servers of its own region
// only; agent/federation's WAN pool, a second Gossip with WAN timings,
// takes WAN servers only), so a join to the wrong port fails instead of
// merging two pools.
//
// It imports no drover package: the agent adapts Members to what the
// server needs (server.Member), so the server never depends on gossip.
//
// Concurrency: every method of *Gossip is safe for concurrent use.
// memberlist's callbacks only update the member table under a mutex and
// signal change channels without blocking. Gossip owns two goroutines
// (the maintenance loop and the key-message worker) and a retry-join
// goroutine per RetryJoin call; Shutdown stops and waits for all of them.
package gossip
