package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// DefaultTimeout bounds one evaluation. A decision takes tens of
// microseconds; the bound is there for a policy that loops, and is wide
// enough that a loaded host (or a test under the race detector) does not
// deny legitimate calls.
const DefaultTimeout = time.Second

// Decide evaluates the policy for one call. It never fails: an error, a
// timeout, an undefined or malformed decision is a deny whose reason says
// what went wrong. The protected-repository guard is applied after the
// policy, so no policy can allow what the guard protects.
func (c *Compiled) Decide(ctx context.Context, in *Input, timeout time.Duration) Decision {
	if in.Host != nil {
		return denyf(c.Name, c.Digest, "a host operation (%s) is decided by host_decision, not by decision", in.Host.Op)
	}
	return c.eval(ctx, &c.decide, "decision", in, timeout)
}

// DecideHost evaluates the policy's host_decision for one host operation
// of the root helper (in.Host set). A policy without host_decision denies
// every host operation: a custom policy written for API calls never
// allows one by accident (its decision may allow every read). The guard
// applies as for API calls.
func (c *Compiled) DecideHost(ctx context.Context, in *Input, timeout time.Duration) Decision {
	switch {
	case in.Host == nil:
		return denyf(c.Name, c.Digest, "policy %s: DecideHost without a host operation", c.Name)
	case c.host == nil:
		return denyf(c.Name, c.Digest, "policy %s decides no host operations (it has no host_decision rule), so %s is denied", c.Name, in.Host.Op)
	}
	return c.eval(ctx, c.host, hostRule, in, timeout)
}

// eval evaluates one prepared query of the policy; see Decide.
func (c *Compiled) eval(ctx context.Context, q *rego.PreparedEvalQuery, rule string, in *Input, timeout time.Duration) Decision {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	val, err := in.value(c.parts)
	if err != nil {
		return denyf(c.Name, c.Digest, "policy %s: %v", c.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return denyf(c.Name, c.Digest, "policy %s: %v", c.Name, err)
	}
	// Cancellation without a goroutine per evaluation (OPA starts one for a
	// context unless it is given its own Cancel): a timer for the timeout,
	// a context.AfterFunc for the caller's context.
	cancel := topdown.NewCancel()
	var timedOut atomic.Bool
	timer := time.AfterFunc(timeout, func() { timedOut.Store(true); cancel.Cancel() })
	stop := context.AfterFunc(ctx, cancel.Cancel)
	rs, err := q.Eval(ctx, rego.EvalParsedInput(val), rego.EvalExternalCancel(cancel), rego.EvalMetrics(metrics.NoOp()))
	timer.Stop()
	stop()
	if err != nil {
		if timedOut.Load() {
			return denyf(c.Name, c.Digest, "policy %s did not decide within %s", c.Name, timeout)
		}
		if ctx.Err() != nil {
			return denyf(c.Name, c.Digest, "policy %s: %v", c.Name, ctx.Err())
		}
		return denyf(c.Name, c.Digest, "policy %s failed: %s", c.Name, oneLine(err.Error()))
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		if in.Host != nil {
			return denyf(c.Name, c.Digest, "policy %s gave no %s for %s %s (undefined)", c.Name, rule, in.Host.Op, in.Host.Path)
		}
		return denyf(c.Name, c.Digest, "policy %s gave no decision for %s %s (undefined)", c.Name, in.Method, in.Path)
	}
	d, err := parseDecision(rs[0].Expressions[0].Value)
	if err != nil {
		return denyf(c.Name, c.Digest, "policy %s gave an invalid decision: %v", c.Name, err)
	}
	d.Policy, d.Digest = c.Name, c.Digest
	return applyGuard(applyHostReach(applyRunsOthers(d, in), in), in)
}

// applyRunsOthers enforces, over any policy, that a command which runs
// other programs or code (a shell, an interpreter, a launcher such as
// env, xargs, nsenter or systemd-run; in.Host.Command.Class) runs only
// when the policy names it: a decision that lets it run must name the
// executable's canonical path in one of its reasons, else it is denied.
// A policy that allows every command therefore still allows no shell.
func applyRunsOthers(d Decision, in *Input) Decision {
	if in.Host == nil || in.Host.Command == nil || in.Host.Command.Class == "" || d.Effect == Deny {
		return d
	}
	c := in.Host.Command
	if slices.ContainsFunc(d.Reasons, func(r string) bool { return namesPath(r, c.Path) }) {
		return d
	}
	return denyf(d.Policy, d.Digest, "%s is a %s: it runs other programs, so it runs only when a policy names it (a reason of the decision that allows it holding %s), and policy %s did not",
		c.Path, c.Class, c.Path, d.Policy)
}

// namesPath says whether reason holds p as a word of its own: not inside
// a longer name or path ("at" is not named by "confirmation", nor
// /usr/bin/bash by /usr/bin/bash5), though a sentence may end after it.
func namesPath(reason, p string) bool {
	if p == "" {
		return false
	}
	inName := func(b byte) bool {
		return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("._/-+@", b) >= 0
	}
	for i := 0; ; {
		j := strings.Index(reason[i:], p)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(p)
		before := start == 0 || !inName(reason[start-1])
		after := end == len(reason) || !inName(reason[end]) ||
			reason[end] == '.' && (end+1 == len(reason) || reason[end+1] == ' ')
		if before && after {
			return true
		}
		i = start + 1
	}
}

// applyHostReach enforces, over any policy, that a call which reaches the
// host from a guest (in.ReachesHost) runs only when a policy allows it
// explicitly and the caller then confirms it: an allow becomes a
// confirmation by the caller. Any other decision stands; its reasons name
// the items, with this reason added when the policy's do not.
func applyHostReach(d Decision, in *Input) Decision {
	if len(in.ReachesHost) == 0 {
		return d
	}
	items := reachText(in.ReachesHost)
	named := slices.ContainsFunc(d.Reasons, func(r string) bool { return strings.Contains(r, items) })
	var reason string
	switch {
	case d.Effect == Allow && named:
		reason = fmt.Sprintf("policy %s allows this call, which reaches the host from a guest: it runs only once confirmed", d.Policy)
	case d.Effect == Allow:
		reason = fmt.Sprintf("the call reaches the host from a guest (%s): policy %s allows it, and such a call runs only once confirmed", items, d.Policy)
	case named:
		return d
	case d.Effect == Deny:
		reason = fmt.Sprintf("the call reaches the host from a guest (%s); a policy must allow this explicitly", items)
	default:
		reason = fmt.Sprintf("the call reaches the host from a guest (%s)", items)
	}
	d.Reasons = append(slices.Clone(d.Reasons), reason)
	if d.Effect == Allow {
		d.Effect = Confirm
		d.Obligations = append(slices.Clone(d.Obligations), Obligation{Type: "confirm", Approver: "self"})
	}
	return d
}

// applyGuard enforces the protected-repository guard over any policy: a
// call that is not a read needs the guard to have run, and a call the
// guard flags is denied unless the policy asked for break-glass.
func applyGuard(d Decision, in *Input) Decision {
	if in.Risk == schema.RiskRead || d.Effect == Deny {
		return d
	}
	if !in.Guard.Evaluated {
		return denyf(d.Policy, d.Digest, "the protected-repository guard did not run for this call, so no change is allowed")
	}
	if len(in.Guard.Hits) > 0 && d.Effect != Breakglass {
		vals := make([]string, len(in.Guard.Hits))
		for i, h := range in.Guard.Hits {
			vals[i] = h.Value
		}
		return denyf(d.Policy, d.Digest, "the call touches the protected repository (%s); only break-glass can change it, and policy %s did not ask for it",
			strings.Join(vals, ", "), d.Policy)
	}
	return d
}

// callRisks lists the classes a call of ep can have: without the
// parameters that raise it, and with each of them.
func callRisks(ep *schema.Endpoint) []schema.Risk {
	risks := []schema.Risk{ep.CallRisk(nil)}
	for _, c := range ep.RiskConditions() {
		if !slices.Contains(risks, c.Risk) {
			risks = append(risks, c.Risk)
		}
	}
	return risks
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
