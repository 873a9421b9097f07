package drivers

import "fmt"

// Helpers for drivers decoding a task's Config map, whose values arrive
// from HCL (int64, []any) or JSON (float64, []any).

// StringList converts a list of strings from any of its decoded forms.
func StringList(v any) ([]string, error) {
	switch l := v.(type) {
	case []string:
		return l, nil
	case []any:
		out := make([]string, len(l))
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("element %d must be a string, got %T", i, e)
			}
			out[i] = s
		}
		return out, nil
	default:
		return nil, fmt.Errorf("must be a list of strings, got %T", v)
	}
}

// Int converts a whole number from any of its decoded forms; ok is false
// for other types and for floats with a fraction.
func Int(v any) (n int64, ok bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		return int64(n), float64(int64(n)) == n
	}
	return 0, false
}
