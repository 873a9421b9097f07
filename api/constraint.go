package api

// Constraint operators (Nomad's set).
const (
	ConstraintDistinctHosts    = "distinct_hosts"
	ConstraintDistinctProperty = "distinct_property"
	ConstraintRegex            = "regexp"
	ConstraintVersion          = "version"
	ConstraintSemver           = "semver"
	ConstraintSetContains      = "set_contains"
	ConstraintSetContainsAll   = "set_contains_all"
	ConstraintSetContainsAny   = "set_contains_any"
	ConstraintAttributeIsSet   = "is_set"
	ConstraintAttributeNotSet  = "is_not_set"
)

// ConstraintOperators lists every operator accepted in a constraint.
var ConstraintOperators = []string{
	"=", "==", "is", "!=", "not", "<", "<=", ">", ">=",
	ConstraintRegex, ConstraintVersion, ConstraintSemver,
	ConstraintSetContains, ConstraintSetContainsAll, ConstraintSetContainsAny,
	ConstraintAttributeIsSet, ConstraintAttributeNotSet,
	ConstraintDistinctHosts, ConstraintDistinctProperty,
}

// Constraint filters nodes (or devices): LTarget Operand RTarget, where the
// targets may interpolate ${node.*}, ${attr.*}, ${meta.*}, ${device.*}.
type Constraint struct {
	LTarget string `json:"LTarget"`
	RTarget string `json:"RTarget"`
	Operand string `json:"Operand"`
}

func (c *Constraint) String() string {
	return c.LTarget + " " + c.Operand + " " + c.RTarget
}

// Affinity prefers (Weight > 0) or avoids (< 0) matching nodes; Weight is
// in [-100, 100].
type Affinity struct {
	LTarget string `json:"LTarget"`
	RTarget string `json:"RTarget"`
	Operand string `json:"Operand"`
	Weight  int8   `json:"Weight"`
}

func (a *Affinity) String() string {
	return a.LTarget + " " + a.Operand + " " + a.RTarget
}

// Spread distributes allocations over the values of a node attribute.
type Spread struct {
	Attribute    string          `json:"Attribute"`
	Weight       int8            `json:"Weight"`
	SpreadTarget []*SpreadTarget `json:"SpreadTarget,omitempty"`
}

// SpreadTarget is a desired percentage for one attribute value.
type SpreadTarget struct {
	Value   string `json:"Value"`
	Percent uint8  `json:"Percent"`
}
