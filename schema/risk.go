package schema

import (
	_ "embed"
	"fmt"
	"strings"
)

// Risk classifies what a call can do to the host and its guests.
type Risk uint8

// Risk classes, ordered: a higher class includes the lower ones.
const (
	// RiskRead calls only read state.
	RiskRead Risk = iota
	// RiskWrite calls change state in a way that can be undone or that does
	// not destroy data or availability.
	RiskWrite
	// RiskDestructive calls can destroy data, take guests or the host down,
	// or are hard to undo.
	RiskDestructive
)

// String returns read, write or destructive.
func (r Risk) String() string {
	switch r {
	case RiskRead:
		return "read"
	case RiskWrite:
		return "write"
	case RiskDestructive:
		return "destructive"
	}
	return fmt.Sprintf("risk(%d)", uint8(r))
}

// MarshalText encodes the class by name.
func (r Risk) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText decodes a class name.
func (r *Risk) UnmarshalText(b []byte) error {
	v, err := ParseRisk(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParseRisk parses read, write or destructive.
func ParseRisk(s string) (Risk, error) {
	switch s {
	case "read":
		return RiskRead, nil
	case "write":
		return RiskWrite, nil
	case "destructive":
		return RiskDestructive, nil
	}
	return 0, fmt.Errorf("risk class %q is not read, write or destructive", s)
}

// riskTable is the reviewed rule table; see docs/schema.md.
//
//go:embed risk.rules
var riskTable string

// riskRule is one line of the table.
type riskRule struct {
	line   int
	method string   // GET, POST, PUT, DELETE or *
	segs   []string // literal, {var}, * or a final **
	risk   Risk
	when   string // parameter that must be set for the rule to apply, or ""
	reason string
}

type riskRules []*riskRule

func defaultRiskRules() (riskRules, error) { return parseRiskRules(riskTable) }

// parseRiskRules reads lines of the form
//
//	METHOD /path/pattern CLASS [when PARAM] -- reason
func parseRiskRules(text string) (riskRules, error) {
	var rules riskRules
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rule, err := parseRiskRule(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		rule.line = i + 1
		rules = append(rules, rule)
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("no rules")
	}
	last := rules[len(rules)-1]
	if last.method != "*" || strings.Join(last.segs, "/") != "**" || last.when != "" {
		return nil, fmt.Errorf("the last rule must be the catch-all '* /** CLASS'")
	}
	return rules, nil
}

func parseRiskRule(line string) (*riskRule, error) {
	spec, reason, ok := strings.Cut(line, " -- ")
	if !ok || strings.TrimSpace(reason) == "" {
		return nil, fmt.Errorf("rule needs a reason after ' -- '")
	}
	f := strings.Fields(spec)
	if len(f) != 3 && !(len(f) == 5 && f[3] == "when") {
		return nil, fmt.Errorf("want 'METHOD PATH CLASS [when PARAM]', got %q", spec)
	}
	rule := &riskRule{method: f[0], reason: strings.TrimSpace(reason)}
	switch rule.method {
	case "GET", "POST", "PUT", "DELETE", "*":
	default:
		return nil, fmt.Errorf("method %q is not GET, POST, PUT, DELETE or *", rule.method)
	}
	if !strings.HasPrefix(f[1], "/") {
		return nil, fmt.Errorf("path pattern %q must start with '/'", f[1])
	}
	rule.segs = strings.Split(strings.TrimPrefix(f[1], "/"), "/")
	for i, s := range rule.segs {
		if s == "**" && i != len(rule.segs)-1 {
			return nil, fmt.Errorf("'**' may only end a path pattern")
		}
		if s == "" {
			return nil, fmt.Errorf("path pattern %q has an empty segment", f[1])
		}
	}
	risk, err := ParseRisk(f[2])
	if err != nil {
		return nil, err
	}
	rule.risk = risk
	if len(f) == 5 {
		rule.when = f[4]
	}
	return rule, nil
}

// matches reports whether the rule's method and path pattern cover an
// endpoint. Pattern segments compare with template segments: a literal or
// {var} must be equal, * takes any one segment, a final ** any rest.
func (r *riskRule) matches(method, path string) bool {
	return r.matchesSegs(method, strings.Split(strings.TrimPrefix(path, "/"), "/"))
}

func (r *riskRule) matchesSegs(method string, segs []string) bool {
	if r.method != "*" && r.method != method {
		return false
	}
	for i, p := range r.segs {
		if p == "**" {
			return true
		}
		if i >= len(segs) {
			return false
		}
		if p != "*" && p != segs[i] {
			return false
		}
	}
	return len(segs) == len(r.segs)
}

// candidates returns the rules that can decide a call of the endpoint: all
// matching rules up to and including the first one without a condition.
func (rules riskRules) candidates(method, path string) []*riskRule {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var out []*riskRule
	for _, r := range rules {
		if !r.matchesSegs(method, segs) {
			continue
		}
		out = append(out, r)
		if r.when == "" {
			break
		}
	}
	return out
}

// maxRisk is the highest class among the candidate rules: the class an
// endpoint can reach with some arguments.
func maxRisk(rules []*riskRule) Risk {
	var r Risk
	for _, rule := range rules {
		r = max(r, rule.risk)
	}
	return r
}

// CallRisk is the class of one call with the given arguments: the first
// candidate rule whose condition holds decides. A condition holds when the
// named argument is present and not false, 0, "0" or empty.
func (e *Endpoint) CallRisk(args map[string]any) Risk {
	for _, rule := range e.rules {
		if rule.when == "" || truthy(args[rule.when]) {
			return rule.risk
		}
	}
	return e.Risk
}

// RiskReason explains, for the given arguments, which rule decided the class.
func (e *Endpoint) RiskReason(args map[string]any) string {
	for _, rule := range e.rules {
		if rule.when == "" || truthy(args[rule.when]) {
			return rule.reason
		}
	}
	return ""
}

// RiskConditions lists the parameters that raise this endpoint's class when
// set, with the class they raise it to, in rule order.
func (e *Endpoint) RiskConditions() []RiskCondition {
	var out []RiskCondition
	for _, rule := range e.rules {
		if rule.when != "" {
			out = append(out, RiskCondition{Param: rule.when, Risk: rule.risk, Reason: rule.reason})
		}
	}
	return out
}

// RiskCondition says that setting Param makes a call Risk.
type RiskCondition struct {
	Param  string `json:"param"`
	Risk   Risk   `json:"risk"`
	Reason string `json:"reason"`
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != "" && x != "0"
	case float64:
		return x != 0
	case int:
		return x != 0
	case int64:
		return x != 0
	case []any:
		return len(x) > 0
	case fmt.Stringer: // json.Number and friends
		return truthy(x.String())
	default:
		return true
	}
}
