package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
	"github.com/proxmox-mcp/proxmox-mcp/transport"
)

// refusalAudit journals what the HTTP listeners refuse before any tool
// runs: a wrong Host or Origin, a missing or unknown key, a body over the
// limit, a rate limit, the session caps, a session that is not the
// caller's. Each source (an IPv6 client by its /64) gets a few rows a
// second at most; beyond that refusals are counted and the count goes into
// the source's next row, so a flood of bad requests cannot turn into a
// flood of fsyncs. The request's method and path are recorded as sent,
// control characters included: the journal stores them escaped.
type refusalAudit struct {
	j       *journal.Journal
	log     *slog.Logger
	limiter *transport.Limiter

	mu         sync.Mutex
	suppressed map[string]int
}

func newRefusalAudit(j *journal.Journal, log *slog.Logger) *refusalAudit {
	return &refusalAudit{j: j, log: log, limiter: transport.NewLimiter(1, 20, 0, nil), suppressed: map[string]int{}}
}

// record writes the row of one refusal on a listener.
func (a *refusalAudit) record(listenerName string, r *http.Request, status int, reason string) {
	src, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		src = r.RemoteAddr
	}
	limitAs := transport.SourceKey(r.RemoteAddr)
	a.mu.Lock()
	if ok, _ := a.limiter.Allow(limitAs); !ok {
		a.suppressed[limitAs]++
		a.mu.Unlock()
		return
	}
	if n := a.suppressed[limitAs]; n > 0 {
		reason += fmt.Sprintf(" (and %d earlier refusals from this source, not recorded one by one)", n)
		delete(a.suppressed, limitAs)
	}
	a.mu.Unlock()
	call := journal.Call{Time: time.Now(), Tool: "http " + r.Method + " " + r.URL.Path, Principal: refusedPrincipal(listenerName, src, r)}
	res := journal.Result{Outcome: journal.OutcomeDenied, Status: status, Error: reason}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := a.j.Record(ctx, call, res); err != nil {
		a.log.Warn("daemon: the journal refused the row of an HTTP refusal", "listener", listenerName, "source", src, "status", status, "err", err)
	}
}

// refusedPrincipal is who a refused request came from: the caller its key
// made, once the key was accepted (a session refusal, a quota); before
// that, the key's id when the request carried a well-formed key, its
// public half, whether or not the key exists (the secret is never
// recorded).
func refusedPrincipal(listenerName, src string, r *http.Request) journal.Principal {
	if c, ok := tools.CallerFrom(r.Context()); ok {
		p := c.Principal
		jp := journal.Principal{KeyID: p.KeyID, KeyName: p.Name, Profile: p.Profile, Policy: p.Policy, Transport: listenerName, Source: src}
		if p.Tailnet != nil {
			jp.TailnetUser, jp.TailnetNode = p.Tailnet.User, p.Tailnet.Node
		}
		return jp
	}
	p := journal.Principal{KeyName: "(no key)", Transport: listenerName, Source: src}
	if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		p.KeyName = "(malformed key)"
		if tok, err := keys.ParseToken(strings.TrimSpace(key)); err == nil {
			p.KeyID, p.KeyName = tok.ID, ""
		}
	}
	return p
}
