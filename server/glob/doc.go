// Package glob is drover's one matcher of names against patterns where *
// matches any run of characters (an empty one included): job datacenters
// in the scheduler and the namespace and queue names of ACL rules
// (server/acl) use it, so both read a pattern the same way.
//
// Imports: the standard library only (enforced by layout_test.go).
//
// Concurrency: none; Match is a pure function.
package glob
