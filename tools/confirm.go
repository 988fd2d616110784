package tools

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/plan"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// confirmTTL is how long a confirmation token stays valid.
const confirmTTL = 5 * time.Minute

// confirmations issues and redeems tokens bound to one exact call: the key,
// the method, the path and every argument. A token is used once.
type confirmations struct {
	key []byte
	now func() time.Time

	mu      sync.Mutex
	used    map[string]time.Time    // token -> expiry, for single use
	pending map[string]*pendingCall // token -> call waiting for another principal
}

func newConfirmations(key []byte, now func() time.Time) *confirmations {
	return &confirmations{key: key, now: now, used: map[string]time.Time{}, pending: map[string]*pendingCall{}}
}

// callDigest is a canonical digest of the call a token confirms.
func callDigest(c Caller, ep *schema.Endpoint, wire url.Values) string {
	keys := make([]string, 0, len(wire))
	for k := range wire {
		if k != "digest" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", c.Principal.KeyID, ep.Method, ep.Path)
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\x00", k, strings.Join(wire[k], "\x01"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (cf *confirmations) mac(digest string, expiry int64) string {
	m := hmac.New(sha256.New, cf.key)
	fmt.Fprintf(m, "%s.%d", digest, expiry)
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// issue returns a token for the call, valid for confirmTTL.
func (cf *confirmations) issue(c Caller, ep *schema.Endpoint, wire url.Values) (string, time.Time) {
	expiry := cf.now().Add(confirmTTL)
	digest := callDigest(c, ep, wire)
	return fmt.Sprintf("pmcf_%d_%s", expiry.Unix(), cf.mac(digest, expiry.Unix())), expiry
}

// redeem checks a token against the call and uses it up. With approver
// "other" the token must also have been approved by a different principal.
func (cf *confirmations) redeem(token string, c Caller, ep *schema.Endpoint, wire url.Values, approver string) error {
	rest, ok := strings.CutPrefix(token, "pmcf_")
	expText, mac, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 {
		return errors.New("not a confirmation token")
	}
	exp, err := strconv.ParseInt(expText, 10, 64)
	if err != nil {
		return errors.New("not a confirmation token")
	}
	if !hmac.Equal([]byte(mac), []byte(cf.mac(callDigest(c, ep, wire), exp))) {
		return errors.New("the token was issued for a different call (key, method, path or arguments differ)")
	}
	now := cf.now()
	if now.Unix() > exp {
		return errors.New("the token has expired; ask again")
	}
	cf.mu.Lock()
	defer cf.mu.Unlock()
	for t, e := range cf.used {
		if now.After(e) {
			delete(cf.used, t)
		}
	}
	if _, dup := cf.used[token]; dup {
		return errors.New("the token was already used")
	}
	if approver != "self" {
		if err := cf.takeApproved(token); err != nil {
			return err
		}
	}
	cf.used[token] = time.Unix(exp, 0)
	return nil
}

// askConfirmation answers a call the policy wants confirmed: nothing is
// sent, and the answer carries a token bound to this exact call.
func (s *Server) askConfirmation(ctx context.Context, audit AuditCall, c Caller, p *plan.Plan) *mcp.CallToolResult {
	ep, d := p.Endpoint, p.Decision
	approver := approverOf(d)
	content := map[string]any{
		"status": "confirmation_required", "method": ep.Method, "path": p.Path, "tool": ep.Tool,
		"risk": p.Risk.String(), "params": flatten(p.Checked.Wire), "reasons": d.Reasons, "approver": approver,
	}
	text := fmt.Sprintf("Confirmation required before %s %s (%s). Nothing was sent.\n%s", ep.Method, p.Path, p.Risk, reasonsText(d))
	var token string
	var expiry time.Time
	if approver == "self" {
		token, expiry = s.confirm.issue(c, ep, p.Checked.Wire)
		text += "\nTo go ahead, make the same call again with confirm set to the token below, within 5 minutes."
	} else {
		pc := &pendingCall{requester: c, plan: p}
		var err error
		if token, err = s.confirm.hold(pc); err != nil {
			return s.refuse(ctx, audit, journal.OutcomeError, "Confirmation could not be asked for: "+err.Error()+". Nothing was sent.")
		}
		expiry = pc.expiry
		content["status"] = "approval_required"
		text += "\nA different principal must approve it: they call " + s.approveHint() + " below (their own policy must allow the call). " +
			"Then make the same call again with confirm set to the token, within 5 minutes."
	}
	content["confirm"] = token
	content["expires_at"] = expiry.UTC().Format(time.RFC3339)
	if r := p.Input.ReachesHost; len(r) > 0 {
		content["reaches_host"] = r
	}
	out := AuditOutcome{Outcome: journal.OutcomeConfirm, Duration: s.opts.Now().Sub(audit.Time)}
	if err := s.audit.Record(journalContext(ctx), audit, out); err != nil {
		return errorResult("the journal refused the record; nothing was sent: " + err.Error())
	}
	return structured(text, content)
}
