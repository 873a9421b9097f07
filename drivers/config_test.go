package drivers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStringList(t *testing.T) {
	for _, tc := range []struct {
		in      any
		want    []string
		wantErr bool
	}{
		{[]string{"a"}, []string{"a"}, false},
		{[]any{"a", "b"}, []string{"a", "b"}, false},
		{[]any{"a", 1}, nil, true},
		{"a", nil, true},
	} {
		got, err := StringList(tc.in)
		if (err != nil) != tc.wantErr || !cmp.Equal(got, tc.want) {
			t.Errorf("StringList(%#v) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestInt(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want int64
		ok   bool
	}{{3, 3, true}, {int64(4), 4, true}, {5.0, 5, true}, {5.5, 5, false}, {"5", 0, false}} {
		got, ok := Int(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Int(%#v) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
