package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Effect is what the decision lets the call do.
type Effect string

// Effects.
const (
	// Allow: the call runs.
	Allow Effect = "allow"
	// Deny: the call does not run; the reasons say why.
	Deny Effect = "deny"
	// Confirm: the call runs once a server-issued confirmation bound to this
	// exact call is given (see the confirm obligation).
	Confirm Effect = "confirm"
	// DryRun: only a dry run (a plan of what would change) may run.
	DryRun Effect = "dry_run"
	// Breakglass: only the break-glass protocol can perform the call.
	Breakglass Effect = "breakglass"
)

func (e Effect) valid() bool {
	switch e {
	case Allow, Deny, Confirm, DryRun, Breakglass:
		return true
	}
	return false
}

// Decision is a policy's answer.
type Decision struct {
	Effect      Effect       `json:"effect"`
	Reasons     []string     `json:"reasons"`
	Obligations []Obligation `json:"obligations"`
	// Policy names what decided: a profile, or a custom policy id@version.
	Policy string `json:"policy"`
	// Digest is the sha256 of the deciding policy's source.
	Digest string `json:"digest"`
}

// Obligation is a duty the daemon takes on with the decision. An
// obligation the daemon does not know makes the decision a deny: it cannot
// promise what it cannot keep.
type Obligation struct {
	// Type is confirm, audit_arguments or notify.
	Type string `json:"type"`
	// Approver, for confirm: "self" (the same key confirms) or "other" (a
	// different principal or the host CLI must confirm).
	Approver string `json:"approver,omitempty"`
	// Message, for notify: shown to the caller with the result.
	Message string `json:"message,omitempty"`
}

// denyf is a fail-closed decision.
func denyf(policy, digest, format string, args ...any) Decision {
	return Decision{Effect: Deny, Reasons: []string{fmt.Sprintf(format, args...)}, Obligations: []Obligation{}, Policy: policy, Digest: digest}
}

// parseDecision checks the object a policy returned. Anything unexpected
// is an error, which the engine turns into a deny.
func parseDecision(v ast.Value) (Decision, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return Decision{}, fmt.Errorf("decision is a %s, want an object {effect, reasons, obligations}", ast.ValueName(v))
	}
	var d Decision
	var bad error
	obj.Foreach(func(k, val *ast.Term) {
		if bad != nil {
			return
		}
		key, ok := k.Value.(ast.String)
		if !ok {
			bad = fmt.Errorf("decision has a non-string key %v", k)
			return
		}
		switch string(key) {
		case "effect":
			s, ok := val.Value.(ast.String)
			if !ok || !Effect(s).valid() {
				bad = fmt.Errorf("decision.effect %v is not one of allow, deny, confirm, dry_run, breakglass", val)
				return
			}
			d.Effect = Effect(s)
		case "reasons":
			arr, ok := val.Value.(*ast.Array)
			if !ok {
				bad = fmt.Errorf("decision.reasons must be an array of strings")
				return
			}
			arr.Foreach(func(t *ast.Term) {
				if s, ok := t.Value.(ast.String); ok {
					d.Reasons = append(d.Reasons, string(s))
				} else if bad == nil {
					bad = fmt.Errorf("decision.reasons must be an array of strings, not %v", t)
				}
			})
		case "obligations":
			arr, ok := val.Value.(*ast.Array)
			if !ok {
				bad = fmt.Errorf("decision.obligations must be an array of objects")
				return
			}
			arr.Foreach(func(t *ast.Term) {
				if bad != nil {
					return
				}
				o, err := parseObligation(t.Value)
				if err != nil {
					bad = err
					return
				}
				d.Obligations = append(d.Obligations, o)
			})
		default:
			bad = fmt.Errorf("decision has an unknown field %v (want effect, reasons, obligations)", k)
		}
	})
	if bad != nil {
		return Decision{}, bad
	}
	if d.Effect == "" {
		return Decision{}, fmt.Errorf("decision.effect is missing")
	}
	if d.Reasons == nil {
		d.Reasons = []string{}
	}
	if d.Obligations == nil {
		d.Obligations = []Obligation{}
	}
	hasConfirm := slices.ContainsFunc(d.Obligations, func(o Obligation) bool { return o.Type == "confirm" })
	switch {
	case hasConfirm && d.Effect != Confirm:
		return Decision{}, fmt.Errorf("a confirm obligation needs effect confirm, not %s", d.Effect)
	case d.Effect == Confirm && !hasConfirm:
		d.Obligations = append(d.Obligations, Obligation{Type: "confirm", Approver: "self"})
	}
	return d, nil
}

func parseObligation(v ast.Value) (Obligation, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return Obligation{}, fmt.Errorf("an obligation must be an object, not %v", v)
	}
	var o Obligation
	var bad error
	str := func(k, t *ast.Term) string {
		s, ok := t.Value.(ast.String)
		if !ok && bad == nil {
			bad = fmt.Errorf("obligation field %v must be a string", k)
		}
		return string(s)
	}
	obj.Foreach(func(k, val *ast.Term) {
		key, _ := k.Value.(ast.String)
		switch string(key) {
		case "type":
			o.Type = str(k, val)
		case "approver":
			o.Approver = str(k, val)
		case "message":
			o.Message = str(k, val)
		default:
			if bad == nil {
				bad = fmt.Errorf("obligation field %v is not known (type, approver, message)", k)
			}
		}
	})
	if bad != nil {
		return Obligation{}, bad
	}
	switch o.Type {
	case "confirm":
		if o.Approver == "" {
			o.Approver = "self"
		}
		if o.Approver != "self" && o.Approver != "other" {
			return Obligation{}, fmt.Errorf("confirm obligation: approver %q is not self or other", o.Approver)
		}
		if o.Message != "" {
			return Obligation{}, fmt.Errorf("confirm obligation takes no message")
		}
	case "audit_arguments":
		if o.Approver != "" || o.Message != "" {
			return Obligation{}, fmt.Errorf("audit_arguments obligation takes no fields")
		}
	case "notify":
		if strings.TrimSpace(o.Message) == "" || o.Approver != "" {
			return Obligation{}, fmt.Errorf("notify obligation needs a message and nothing else")
		}
	default:
		return Obligation{}, fmt.Errorf("obligation type %q is not known (confirm, audit_arguments, notify): the daemon cannot honour it", o.Type)
	}
	return o, nil
}
