package glob

import "testing"

func TestMatch(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"dc1", "dc1", true}, {"dc*", "dc2", true}, {"*", "x", true}, {"*", "", true}, {"us-*-1", "us-east-1", true},
		{"us-*-1", "us-east-2", false}, {"dc1", "dc10", false}, {"*east*", "us-east-1", true},
		{"a*a", "a", false}, {"team-*", "team-", true}, {"team-*", "other", false},
	}
	for _, c := range cases {
		if got := Match(c.p, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}
