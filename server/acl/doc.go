// Package acl turns ACL policies (Nomad's HCL rule language, plus a queue
// block) into an ACL: the capabilities a token holds in each namespace
// and its level on nodes, agents, the operator API and queues. It is pure:
// no state, no I/O.
package acl
