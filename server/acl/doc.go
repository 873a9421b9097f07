// Package acl turns ACL policies (Nomad's HCL rule language, plus a queue
// block) into an ACL: the capabilities a token holds in each namespace,
// on the namespace's variables by path, and its level on nodes, agents,
// the operator API and queues; and the ACLs of a node's secret and of a
// task's workload identity (its own variables). It is pure: no state, no
// I/O.
package acl
