package policy

import (
	"fmt"
	"slices"
	"strings"

	"encoding/json"
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
	// different key approves with proxmox_approve).
	Approver string `json:"approver,omitempty"`
	// Message, for notify: shown to the caller with the result.
	Message string `json:"message,omitempty"`
}

// denyf is a fail-closed decision.
func denyf(policy, digest, format string, args ...any) Decision {
	return Decision{Effect: Deny, Reasons: []string{fmt.Sprintf(format, args...)}, Obligations: []Obligation{}, Policy: policy, Digest: digest}
}

// parseDecision checks the object a policy returned (as the rego package
// hands it over: JSON-like Go values). Anything unexpected is an error,
// which the engine turns into a deny.
func parseDecision(v any) (Decision, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return Decision{}, fmt.Errorf("decision is %s, want an object {effect, reasons, obligations}", kind(v))
	}
	var d Decision
	for key, val := range obj {
		switch key {
		case "effect":
			s, ok := val.(string)
			if !ok || !Effect(s).valid() {
				return Decision{}, fmt.Errorf("decision.effect %v is not one of allow, deny, confirm, dry_run, breakglass", jsonish(val))
			}
			d.Effect = Effect(s)
		case "reasons":
			arr, ok := val.([]any)
			if !ok {
				return Decision{}, fmt.Errorf("decision.reasons must be an array of strings")
			}
			d.Reasons = make([]string, 0, len(arr))
			for _, e := range arr {
				s, ok := e.(string)
				if !ok {
					return Decision{}, fmt.Errorf("decision.reasons must be an array of strings, not %s", jsonish(e))
				}
				d.Reasons = append(d.Reasons, s)
			}
		case "obligations":
			arr, ok := val.([]any)
			if !ok {
				return Decision{}, fmt.Errorf("decision.obligations must be an array of objects")
			}
			d.Obligations = make([]Obligation, 0, len(arr))
			for _, e := range arr {
				o, err := parseObligation(e)
				if err != nil {
					return Decision{}, err
				}
				d.Obligations = append(d.Obligations, o)
			}
		default:
			return Decision{}, fmt.Errorf("decision has an unknown field %q (want effect, reasons, obligations)", key)
		}
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

func parseObligation(v any) (Obligation, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return Obligation{}, fmt.Errorf("an obligation must be an object, not %s", jsonish(v))
	}
	var o Obligation
	for key, val := range obj {
		if key != "type" && key != "approver" && key != "message" {
			return Obligation{}, fmt.Errorf("obligation field %q is not known (type, approver, message)", key)
		}
		s, ok := val.(string)
		if !ok {
			return Obligation{}, fmt.Errorf("obligation field %q must be a string", key)
		}
		switch key {
		case "type":
			o.Type = s
		case "approver":
			o.Approver = s
		case "message":
			o.Message = s
		}
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

// kind names a JSON value's type.
func kind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a number"
}

// jsonish prints a value as JSON for an error message.
func jsonish(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
