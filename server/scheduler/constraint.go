package scheduler

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
	version "github.com/hashicorp/go-version"
)

// resolveNode resolves a constraint target against a node: ${node.*},
// ${attr.*} and ${meta.*} interpolations, anything else is a literal.
func resolveNode(t string, n *api.Node) (string, bool) {
	if !strings.HasPrefix(t, "${") || !strings.HasSuffix(t, "}") {
		return t, true
	}
	key := t[2 : len(t)-1]
	switch key {
	case "node.unique.id":
		return n.ID, true
	case "node.datacenter":
		return n.Datacenter, true
	case "node.unique.name":
		return n.Name, true
	case "node.class":
		return n.NodeClass, n.NodeClass != ""
	case "node.pool":
		if n.NodePool == "" {
			return api.DefaultNodePool, true
		}
		return n.NodePool, true
	}
	if k, ok := strings.CutPrefix(key, "attr."); ok {
		v, ok := n.Attributes[k]
		return v, ok
	}
	if k, ok := strings.CutPrefix(key, "meta."); ok {
		v, ok := n.Meta[k]
		return v, ok
	}
	return "", false
}

// uniqueTarget reports whether a target reads per-node (unique) data, so a
// check on it cannot be cached per computed class.
func uniqueTarget(t string) bool {
	return strings.Contains(t, "unique.")
}

// matcher evaluates operators, caching compiled regexps and version
// constraints for one scheduling pass.
type matcher struct {
	re  map[string]*regexp.Regexp
	ver map[string]version.Constraints
}

// check evaluates "l op r"; lok/rok report whether each side resolved.
func (m *matcher) check(op, l string, lok bool, r string, rok bool) bool {
	switch op {
	case api.ConstraintAttributeIsSet:
		return lok
	case api.ConstraintAttributeNotSet:
		return !lok
	case api.ConstraintDistinctHosts, api.ConstraintDistinctProperty:
		return true // handled by the placement loop
	}
	if !lok || !rok {
		return false
	}
	switch op {
	case "=", "==", "is", "":
		return l == r
	case "!=", "not":
		return l != r
	case "<", "<=", ">", ">=":
		return compareOrdered(op, l, r)
	case api.ConstraintRegex:
		return m.regexp(r, l)
	case api.ConstraintVersion:
		return m.version(r, l, false)
	case api.ConstraintSemver:
		return m.version(r, l, true)
	case api.ConstraintSetContains, api.ConstraintSetContainsAll:
		have := splitSet(l)
		for _, w := range strings.Split(r, ",") {
			if _, ok := have[strings.TrimSpace(w)]; !ok {
				return false
			}
		}
		return true
	case api.ConstraintSetContainsAny:
		have := splitSet(l)
		for _, w := range strings.Split(r, ",") {
			if _, ok := have[strings.TrimSpace(w)]; ok {
				return true
			}
		}
		return false
	}
	return false
}

func splitSet(s string) map[string]struct{} {
	out := map[string]struct{}{}
	for _, p := range strings.Split(s, ",") {
		out[strings.TrimSpace(p)] = struct{}{}
	}
	return out
}

// compareOrdered compares numerically when both sides parse as numbers,
// else lexically.
func compareOrdered(op, l, r string) bool {
	lf, err1 := strconv.ParseFloat(l, 64)
	rf, err2 := strconv.ParseFloat(r, 64)
	if err1 == nil && err2 == nil {
		return cmpResult(op, cmpFloat(lf, rf))
	}
	return cmpResult(op, strings.Compare(l, r))
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpResult(op string, c int) bool {
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	case "=", "==", "is", "":
		return c == 0
	case "!=", "not":
		return c != 0
	}
	return false
}

func (m *matcher) regexp(pattern, s string) bool {
	re, ok := m.re[pattern]
	if !ok {
		re, _ = regexp.Compile(pattern) // a bad pattern matches nothing
		if m.re == nil {
			m.re = map[string]*regexp.Regexp{}
		}
		m.re[pattern] = re
	}
	return re != nil && re.MatchString(s)
}

func (m *matcher) version(constraint, v string, semver bool) bool {
	key := constraint
	if semver {
		key = "semver:" + constraint
	}
	c, ok := m.ver[key]
	if !ok {
		c, _ = version.NewConstraint(constraint)
		if m.ver == nil {
			m.ver = map[string]version.Constraints{}
		}
		m.ver[key] = c
	}
	if c == nil {
		return false
	}
	var ver *version.Version
	var err error
	if semver {
		ver, err = version.NewSemver(v)
	} else {
		ver, err = version.NewVersion(v)
	}
	return err == nil && c.Check(ver)
}

// Device attribute comparison with units.

// unitScale maps a unit to its factor in the unit family's base.
var unitScale = map[string]float64{
	"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"Hz": 1, "KHz": 1e3, "kHz": 1e3, "MHz": 1e6, "GHz": 1e9,
	"mW": 1e-3, "W": 1, "kW": 1e3,
	"MB/s": 1e6, "GB/s": 1e9, "MiB/s": 1 << 20, "GiB/s": 1 << 30,
}

// parseQuantity parses "40 GiB", "40GiB" or "40" into a value scaled to
// the unit family's base; unit reports the unit found ("" when none).
func parseQuantity(s string) (v float64, unit string, ok bool) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] == '.' || s[i] == '-' || s[i] == '+' || (s[i] >= '0' && s[i] <= '9')) {
		i++
	}
	f, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, "", false
	}
	unit = strings.TrimSpace(s[i:])
	if unit == "" {
		return f, "", true
	}
	sc, known := unitScale[unit]
	if !known {
		return 0, "", false
	}
	return f * sc, unit, true
}

// checkDeviceAttr compares a typed device attribute with a constraint's
// right-hand side. Numbers compare with units ("40 GiB" against a MiB
// attribute); strings that look like versions ("8.0") compare as versions.
func (m *matcher) checkDeviceAttr(op string, a *api.Attribute, r string) bool {
	if a == nil {
		return m.check(op, "", false, r, true)
	}
	switch op {
	case api.ConstraintAttributeIsSet:
		return true
	case api.ConstraintAttributeNotSet:
		return false
	}
	var num float64
	isNum := false
	switch {
	case a.IntVal != nil:
		num, isNum = float64(*a.IntVal), true
	case a.FloatVal != nil:
		num, isNum = *a.FloatVal, true
	}
	if isNum {
		if a.Unit != "" {
			num *= unitScale[a.Unit]
		}
		rv, runit, ok := parseQuantity(r)
		if ok && (runit == "" && a.Unit != "") {
			rv *= unitScale[a.Unit] // bare number: same unit as the attribute
		}
		if ok && isOrderOp(op) {
			return cmpResult(op, cmpFloatEps(num, rv))
		}
		return m.check(op, strconv.FormatFloat(num, 'f', -1, 64), true, r, true)
	}
	if a.BoolVal != nil {
		return m.check(op, strconv.FormatBool(*a.BoolVal), true, r, true)
	}
	s := ""
	if a.StringVal != nil {
		s = *a.StringVal
	}
	if isOrderOp(op) {
		lv, err1 := version.NewVersion(s)
		rv, err2 := version.NewVersion(r)
		if err1 == nil && err2 == nil {
			return cmpResult(op, lv.Compare(rv))
		}
	}
	return m.check(op, s, true, r, true)
}

func isOrderOp(op string) bool {
	switch op {
	case "<", "<=", ">", ">=", "=", "==", "is", "!=", "not":
		return true
	}
	return false
}

func cmpFloatEps(a, b float64) int {
	if math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) {
		return 0
	}
	return cmpFloat(a, b)
}
