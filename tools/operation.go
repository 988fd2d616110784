package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Ledger is the journal as the change contract reads it and adds to it
// (journal.Journal): the rows of an operation, the operation a key's
// operation key names, the history of a configuration, and the rows it
// adds of its own (observations, resolutions, plans).
type Ledger interface {
	CallEvents(ctx context.Context, callID string) ([]journal.Event, error)
	OperationByKey(ctx context.Context, keyID, key string) (callID, requestDigest string, ok bool, err error)
	Observe(ctx context.Context, o journal.Observation) (journal.Event, error)
	Resolve(ctx context.Context, r journal.Resolution) (journal.Event, error)
	KeepPlan(ctx context.Context, p journal.Plan) (journal.Event, error)
	PathEvents(ctx context.Context, path string, afterID int64, limit int) ([]journal.Event, error)
	KeyEvents(ctx context.Context, keyID string, n int) ([]journal.Event, error)
	ChangeEvents(ctx context.Context, keyID, change string) ([]journal.Event, error)
}

// requestDigest is the SHA-256 of a write as validated: method, template,
// canonical path and every wire parameter, sorted. Two requests with the
// same digest send the same thing to PVE.
func requestDigest(p *plan.Plan) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", p.Endpoint.Method, p.Endpoint.Path, p.Path)
	keys := make([]string, 0, len(p.Checked.Wire))
	for k := range p.Checked.Wire {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\x00", k, strings.Join(p.Checked.Wire[k], "\x01"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// configChanges lists the fields that differ between two configurations
// (digest aside), with their values before and after; nil is absent.
func configChanges(before, after map[string]any) map[string]journal.FieldChange {
	out := map[string]journal.FieldChange{}
	for k, a := range after {
		if k == "digest" {
			continue
		}
		b, ok := before[k]
		if !ok {
			out[k] = journal.FieldChange{Before: nil, After: a}
			continue
		}
		if !sameValue(a, b) {
			out[k] = journal.FieldChange{Before: b, After: a}
		}
	}
	for k, b := range before {
		if _, ok := after[k]; !ok && k != "digest" {
			out[k] = journal.FieldChange{Before: b, After: nil}
		}
	}
	return out
}

// sameValue compares two configuration values as PVE writes them: 1 and
// "1" are one value.
func sameValue(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	as, aok := scalarText(a)
	bs, bok := scalarText(b)
	return aok && bok && as == bs
}

// changesForAnswer is the changes as the caller is told them: a secret
// field's values are not repeated.
func changesForAnswer(ep *schema.Endpoint, ch map[string]journal.FieldChange) map[string]any {
	out := make(map[string]any, len(ch))
	for k, v := range ch {
		if ep.Secret(k) || v.Redacted {
			out[k] = map[string]any{"changed": true, "secret": true}
			continue
		}
		out[k] = map[string]any{"before": v.Before, "after": v.After}
	}
	return out
}

// afterEvidence reads a configuration after an edit and records what
// changed: the receipt's detail, and the answer's evidence.
func (s *Server) afterEvidence(ctx context.Context, client *pve.Client, p *plan.Plan, audit *AuditCall, out *AuditOutcome, ev map[string]any) {
	var conf map[string]any
	if err := client.Get(context.WithoutCancel(ctx), p.Path, nil, &conf); err != nil {
		ev["after_error"] = "the configuration could not be read after the edit: " + err.Error()
		return
	}
	digest, _ := conf["digest"].(string)
	d := &journal.Detail{Scope: p.Endpoint.Path, Digest: digest, Config: conf}
	if audit.Detail != nil {
		d.OperationKey, d.RequestDigest, d.Change, d.UndoOf = audit.Detail.OperationKey, audit.Detail.RequestDigest, audit.Detail.Change, audit.Detail.UndoOf
	}
	ev["digest_after"] = digest
	if p, _ := scalarText(conf["protection"]); p == "1" {
		// PVE's own protection flag: the guest cannot be removed (nor its
		// disks) until someone turns it off, which is itself a change.
		ev["protection"] = true
	}
	if audit.PriorConfig != nil {
		d.Changes = configChanges(audit.PriorConfig, conf)
		ev["changes"] = changesForAnswer(p.Endpoint, d.Changes)
	}
	out.Detail = d
}

// replay answers a write whose operation key was used before: the same
// request gets the recorded operation and nothing is sent again; another
// request is refused.
func (s *Server) replay(ctx context.Context, audit AuditCall, p *plan.Plan, ke *journal.OperationKeyError) *mcp.CallToolResult {
	if !ke.Same {
		return s.refuse(ctx, audit, journal.OutcomeInvalid, fmt.Sprintf(
			"argument operation_key: %q was used by your key for a different request (operation %s); a key names one request. Nothing was sent: choose a new key, or look at that operation with %s.",
			ke.Key, ke.CallID, ToolOperation))
	}
	view, err := s.operationView(ctx, ke.CallID)
	if err != nil {
		return s.refuse(ctx, audit, journal.OutcomeError, "operation "+ke.CallID+" exists but could not be read: "+err.Error()+". Nothing was sent.")
	}
	view["replayed"] = true
	out := AuditOutcome{Outcome: journal.OutcomeOK, Duration: s.opts.Now().Sub(audit.Time)}
	audit.Detail = &journal.Detail{OperationKey: ke.Key, RequestDigest: ke.RequestDigest}
	if err := s.audit.Record(journalContext(ctx), audit, out); err != nil {
		return errorResult("the journal refused the record; nothing was sent: " + err.Error())
	}
	return structured(fmt.Sprintf("Operation key %q: this request was made before as operation %s (%s); nothing was sent again.", ke.Key, ke.CallID, view["state"]), view)
}

// operationView is what the journal knows of an operation: its request,
// state, receipt and evidence.
func (s *Server) operationView(ctx context.Context, callID string) (map[string]any, error) {
	if s.opts.Ledger == nil {
		return nil, errors.New("this daemon keeps no journal of operations")
	}
	evs, err := s.opts.Ledger.CallEvents(ctx, callID)
	if err != nil {
		return nil, err
	}
	op, err := operationOf(evs)
	if err != nil {
		return nil, err
	}
	return op.view(), nil
}

// operation is an operation's rows, read back.
type operation struct {
	intent      journal.Event
	intentD     journal.Detail
	receipt     *journal.Event
	receiptD    journal.Detail
	resolutions []journal.Event
	observed    []journal.Event
}

var errNotAnOperation = errors.New("no operation has this id (a write's operation id; reads and refusals are not operations)")

func operationOf(evs []journal.Event) (*operation, error) {
	op := &operation{}
	found := false
	for _, ev := range evs {
		switch ev.Kind {
		case journal.KindIntent:
			op.intent, found = ev, true
			d, err := ev.DetailOf()
			if err != nil {
				return nil, err
			}
			op.intentD = d
		case journal.KindReceipt:
			e := ev
			op.receipt = &e
			d, err := ev.DetailOf()
			if err != nil {
				return nil, err
			}
			op.receiptD = d
		case journal.KindResolution:
			op.resolutions = append(op.resolutions, ev)
		case journal.KindObservation:
			op.observed = append(op.observed, ev)
		}
	}
	if !found {
		return nil, errNotAnOperation
	}
	return op, nil
}

// state is the operation's outcome: the last resolution's verdict when a
// resolution settled it, else the receipt's outcome, else pending.
func (op *operation) state() string {
	for i := len(op.resolutions) - 1; i >= 0; i-- {
		if d, err := op.resolutions[i].DetailOf(); err == nil && d.State != "" {
			return d.State
		}
	}
	if op.receipt == nil {
		return "pending"
	}
	return string(op.receipt.Outcome)
}

func (op *operation) view() map[string]any {
	in := op.intent
	v := map[string]any{
		"operation": in.CallID, "state": op.state(), "time": in.Time.UTC().Format(time.RFC3339),
		"by":      map[string]any{"key_id": in.Principal.KeyID, "name": in.Principal.KeyName},
		"request": map[string]any{"method": in.Method, "path": in.Path, "template": in.PathTemplate, "args": json.RawMessage(in.Args)},
		"journal": []int64{in.ID},
	}
	if k := op.intentD.OperationKey; k != "" {
		v["operation_key"] = k
	}
	if op.intentD.UndoOf != "" {
		v["undo_of"] = op.intentD.UndoOf
	}
	if in.PriorDigest != "" {
		v["digest_before"] = in.PriorDigest
	}
	rows := []int64{in.ID}
	if r := op.receipt; r != nil {
		rows = append(rows, r.ID)
		rc := map[string]any{"outcome": r.Outcome, "time": r.Time.UTC().Format(time.RFC3339)}
		if r.Error != "" {
			rc["error"] = r.Error
		}
		if r.UPID != "" {
			rc["upid"] = r.UPID
		}
		v["receipt"] = rc
		if op.receiptD.Digest != "" {
			v["digest_after"] = op.receiptD.Digest
		}
		if op.receiptD.Changes != nil {
			ch := map[string]any{}
			for k, c := range op.receiptD.Changes {
				if c.Redacted {
					ch[k] = map[string]any{"changed": true, "secret": true}
				} else {
					ch[k] = map[string]any{"before": c.Before, "after": c.After}
				}
			}
			v["changes"] = ch
		}
	}
	var evidence []any
	for _, res := range op.resolutions {
		rows = append(rows, res.ID)
		d, _ := res.DetailOf()
		evidence = append(evidence, map[string]any{"state": d.State, "reason": d.Reason, "evidence": d.Evidence,
			"by": res.Principal.KeyName, "time": res.Time.UTC().Format(time.RFC3339)})
	}
	if evidence != nil {
		v["resolutions"] = evidence
	}
	v["journal"] = rows
	return v
}
