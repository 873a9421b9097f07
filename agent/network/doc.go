// Package network builds the bridge networks of allocations (group
// network { mode = "bridge" }): a network namespace per alloc, joined to
// the host's "drover" bridge through the CNI reference plugins (bridge,
// host-local, firewall, portmap, via containerd/go-cni), with the group's
// ports mapped from their host port to their "to" port on the alloc's
// address. Tasks of exec and containerd run inside the namespace.
package network
