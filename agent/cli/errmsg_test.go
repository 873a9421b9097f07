package cli

import "testing"

func TestTidyMessage(t *testing.T) {
	for in, want := range map[string]string{
		`job "nope": job "nope": job not found`:                                        `job "nope": job not found`,
		`stop job "nope": deregister job "nope": job "nope": job not found`:            `stop job "nope": job not found`,
		`allocation "nope": no allocation with prefix "nope": allocation not found`:    `allocation "nope": allocation not found`,
		`job "nope" versions: job "nope": job not found`:                               `job "nope" versions: job not found`,
		`dispatch job "r": dispatch job "r": job "r": missing required meta: customer`: `dispatch job "r": missing required meta: customer`,
		// Segments that say more than the subject stay.
		`register job "web": job "web" group "api": count -1 must not be negative`: `register job "web": job "web" group "api": count -1 must not be negative`,
		`plan job "web": invalid job: group "g": task "t": driver "x" unknown`:     `plan job "web": invalid job: group "g": task "t": driver "x" unknown`,
		// A segment the next one repeats goes (issue 47: a CLI prefix
		// over the server's own).
		`acl bootstrap: acl bootstrap: ACL bootstrap already done`: `ACL bootstrap already done`,
		`stop job "web": stop job "web": job not found`:            `stop job "web": job not found`,
		`drain node "n1": Drain node "n1": node is down`:           `Drain node "n1": node is down`,
		`acl: acl bootstrapped`:                                    `acl: acl bootstrapped`,
		// The last segment is never dropped; quotes may hold ": ".
		`read "a: b": job "a: b"`: `read "a: b": job "a: b"`,
		`no colon here`:           `no colon here`,
	} {
		if got := tidyMessage(in); got != want {
			t.Errorf("tidyMessage(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}
