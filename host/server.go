package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// ServerOptions are what the helper trusts: its own tree, root's copy of
// the keys and policies, its own journal.
type ServerOptions struct {
	Tree *Tree
	// Keys verifies the caller's key against root's copy of the keys
	// (package authority), never the daemon's.
	Keys *keys.Verifier
	// Policies decides with root's copy of the policies.
	Policies *policy.Engine
	// Journal is the helper's own journal, in a directory only root can
	// write.
	Journal *journal.Journal
	// PeerUIDs may connect: the daemon's user and root.
	PeerUIDs []int
	// Protected are the protected repository's paths: a write at or
	// beneath one is a guard hit (break-glass).
	Protected []string
	// Services reaches systemd for the service operations and commands;
	// nil refuses them.
	Services *Services
	// ProtectedDevices are the protected repository's block devices and
	// LVs (vg/lv): with every device beneath them, inaccessible to
	// commands.
	ProtectedDevices []string
	// Socket is the helper's own socket, inaccessible to commands.
	Socket string
	// RefuseWrites, when set, refuses every write with this reason: the
	// configuration's switches (read_only, allow_mutations off,
	// preview_writes), which the helper applies itself.
	RefuseWrites string
	// Breakglass keeps the break-glass protocol's records and signs
	// (docs/breakglass.md); nil refuses its steps.
	Breakglass *breakglass.Service
	// Lineage is a key's lineage, the first key of its rotations (the
	// key itself when nil): two keys of one lineage are one principal.
	Lineage func(keyID string) string
	// ReadTimeout bounds reading a request (5 s).
	ReadTimeout time.Duration
	// MaxConns bounds the connections served at once (8).
	MaxConns int
	Logger   *slog.Logger
}

// Server is the root helper's service: one request per connection.
type Server struct {
	opts     ServerOptions
	sem      chan struct{}
	confirms *confirmations
}

// NewServer checks opts.
func NewServer(opts ServerOptions) (*Server, error) {
	switch {
	case opts.Tree == nil, opts.Keys == nil, opts.Policies == nil, opts.Journal == nil:
		return nil, errors.New("host: a server needs its tree, key verifier, policy engine and journal")
	case len(opts.PeerUIDs) == 0:
		return nil, errors.New("host: a server needs the uids that may connect")
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = 5 * time.Second
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 8
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cf, err := newConfirmations(time.Now)
	if err != nil {
		return nil, err
	}
	return &Server{opts: opts, sem: make(chan struct{}, opts.MaxConns), confirms: cf}, nil
}

// Serve answers connections on l until ctx ends or, when idle is not
// zero, no connection has come for that long (socket activation starts
// the helper again on the next one). It waits for the connections it
// serves.
func (s *Server) Serve(ctx context.Context, l *net.UnixListener, idle time.Duration) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	// The end of ctx (SIGTERM from systemd) wakes a waiting Accept at
	// once: without it the helper would wait out its idle time first.
	stop := context.AfterFunc(ctx, func() { l.SetDeadline(time.Unix(1, 0)) }) //nolint:errcheck // a closed listener ends Accept too
	defer stop()
	for {
		if ctx.Err() != nil {
			return nil
		}
		deadline := time.Time{}
		if idle > 0 {
			deadline = time.Now().Add(idle)
		}
		if err := l.SetDeadline(deadline); err != nil {
			return fmt.Errorf("host: %w", err)
		}
		c, err := l.AcceptUnix()
		if ctx.Err() != nil {
			if c != nil {
				c.Close()
			}
			return nil
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			if s.confirms.waiting() {
				// A confirmation token it gave is still valid: exiting
				// would void it.
				continue
			}
			s.opts.Logger.Info("helper: idle, exiting", "idle", idle)
			return nil
		}
		if err != nil {
			return fmt.Errorf("host: accept: %w", err)
		}
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			c.Close()
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-s.sem }()
			s.serveConn(ctx, c)
		}()
	}
}

func (s *Server) serveConn(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	peer, err := PeerOf(c)
	if err != nil {
		s.opts.Logger.Warn("helper: no peer credentials; connection closed", "err", err)
		return
	}
	c.SetReadDeadline(time.Now().Add(s.opts.ReadTimeout)) //nolint:errcheck // a failed deadline only loses the bound
	body, err := ReadFrame(c, MaxFrame)
	var resp Response
	if err != nil {
		resp = s.refuse(ctx, peer, Request{}, &WireError{Code: "bad_request", Message: err.Error()})
	} else {
		// The caller sends nothing after its request: a read that ends
		// means it hung up, which stops a running command.
		gone, hungUp := context.WithCancelCause(ctx)
		defer hungUp(nil)
		c.SetReadDeadline(time.Time{}) //nolint:errcheck // as above
		go func() {
			var b [1]byte
			c.Read(b[:]) //nolint:errcheck // any end of the read is a hang-up
			hungUp(errors.New("the caller hung up"))
		}()
		var mu sync.Mutex
		resp = s.HandleStream(ctx, peer, body, Stream{Gone: gone, Progress: func(p ExecProgress) {
			mu.Lock()
			defer mu.Unlock()
			c.SetWriteDeadline(time.Now().Add(s.opts.ReadTimeout)) //nolint:errcheck // as above
			WriteFrame(c, Response{ID: "progress", Progress: &p})  //nolint:errcheck // progress is best effort
		}})
		mu.Lock()
		defer mu.Unlock()
	}
	c.SetWriteDeadline(time.Now().Add(s.opts.ReadTimeout)) //nolint:errcheck // as above
	if err := WriteFrame(c, resp); err != nil {
		s.opts.Logger.Warn("helper: the answer was not delivered", "id", resp.ID, "err", err)
	}
}

// Handle answers one request from peer. Everything is checked here, in
// this order, whatever the daemon claims: the peer, the envelope, the
// key (against root's copy), the arguments, the path (canonical, beneath
// an allowed root, not refused), the caller's policy on the operation as
// canonicalized, then the operation; every answer is journaled.
func (s *Server) Handle(ctx context.Context, peer Peer, body []byte) Response {
	return s.HandleStream(ctx, peer, body, Stream{})
}

// Stream is what a long operation (a command) has of its connection: a
// context that ends when the caller hangs up, and where its progress goes.
type Stream struct {
	Gone     context.Context
	Progress func(ExecProgress)
}

// HandleStream is Handle for a connection that takes progress frames.
func (s *Server) HandleStream(ctx context.Context, peer Peer, body []byte, st Stream) Response {
	if !slices.Contains(s.opts.PeerUIDs, peer.UID) {
		return s.refuse(ctx, peer, Request{}, &WireError{Code: "refused",
			Message: fmt.Sprintf("uid %d may not use the helper (only the daemon's user and root)", peer.UID)})
	}
	req, err := DecodeRequest(body)
	if err != nil {
		return s.refuse(ctx, peer, Request{}, asWire(err))
	}
	pr, err := s.opts.Keys.Verify(ctx, req.Key, "helper")
	if err != nil {
		return s.refuse(ctx, peer, req, &WireError{Code: "unauthenticated", Field: "key",
			Message: "the key is not one root's copy of the keys holds, or it is revoked or expired: " + err.Error()})
	}
	op, err := parseOp(req.Op, req.Args)
	if err != nil {
		return s.answer(ctx, peer, req, pr, nil, policy.Decision{}, asWire(err))
	}
	switch e := op.(type) {
	case *execOp:
		e.stream = st
	case *guestExecOp:
		e.stream = st
	case *writeOp:
		e.keyID = pr.KeyID
	case breakglassStep:
		e.bind(s.principalOf(pr), s.opts.Breakglass)
	}
	if op.writes() && s.opts.RefuseWrites != "" {
		return s.answer(ctx, peer, req, pr, op, policy.Decision{}, &WireError{Code: "refused", Message: s.opts.RefuseWrites})
	}
	target, err := op.prepare(ctx, s)
	if err != nil {
		return s.answer(ctx, peer, req, pr, op, policy.Decision{}, asWire(err))
	}
	d := s.opts.Policies.DecideHost(ctx, policy.Binding{Profile: pr.Profile, Policy: pr.Policy}, s.input(req, pr, op, target))
	if step, ok := op.(breakglassStep); ok {
		// A break-glass step runs on the one effect it needs.
		if d.Effect != step.wants() {
			return s.answer(ctx, peer, req, pr, op, d, &WireError{Code: "denied", Message: stepRefusal(d, step.wants())})
		}
		return s.run(ctx, peer, req, pr, op, d)
	}
	switch d.Effect {
	case policy.Allow:
	case policy.Confirm:
		if we := s.confirmed(req, pr, op, target, &d); we != nil {
			return s.answer(ctx, peer, req, pr, op, d, we)
		}
	default:
		return s.answer(ctx, peer, req, pr, op, d, &WireError{Code: "denied", Message: decisionText(d)})
	}
	return s.run(ctx, peer, req, pr, op, d)
}

// confirmed checks a decision that asks the caller to confirm: without a
// token the answer is one (code confirm), bound to this key and this
// exact operation; with one, it must be that token, unused and unexpired.
// A confirmation by another principal is not taken yet. nil lets the
// operation run, its decision saying it was confirmed.
func (s *Server) confirmed(req Request, pr keys.Principal, op hostOp, target policy.HostOp, d *policy.Decision) *WireError {
	for _, o := range d.Obligations {
		if o.Approver != "" && o.Approver != "self" {
			return &WireError{Code: "denied", Message: decisionText(*d) + " (it needs another principal's approval, which host operations do not take yet: nothing was done)"}
		}
	}
	digest, err := opDigest(pr.KeyID, req.Op, target, op.journalArgs())
	if err != nil {
		return asWire(err)
	}
	if req.Confirm == "" {
		token, exp := s.confirms.issue(digest)
		return &WireError{Code: "confirm", Field: "confirm", Token: token, Expires: exp,
			Message: fmt.Sprintf("%s asks for confirmation: %s", d.Policy, strings.Join(d.Reasons, "; "))}
	}
	if err := s.confirms.redeem(req.Confirm, digest); err != nil {
		return &WireError{Code: "denied", Field: "confirm", Message: err.Error() + "; nothing was done"}
	}
	d.Reasons = append(slices.Clone(d.Reasons), "confirmed by the caller")
	return nil
}

// input is the policy's input for an operation's canonical target.
func (s *Server) input(req Request, pr keys.Principal, op hostOp, target policy.HostOp) *policy.Input {
	p := policy.Principal{KeyID: pr.KeyID, Name: pr.Name, Profile: pr.Profile, Policy: pr.Policy, Transport: "helper", Source: req.Source}
	if b, ok := op.(interface {
		policyInput(policy.Principal, string) *policy.Input
	}); ok {
		return b.policyInput(p, op.tool())
	}
	// The guard in the host's view: the protected paths and every other
	// name the mount table gives them (bind mounts), read only for what
	// can write (a read needs no guard).
	protected := s.opts.Protected
	if target.Op == "file.write" || target.Command != nil && len(target.Command.Writable) > 0 {
		protected = ProtectedPaths(protected)
	}
	return PolicyInput(p, target, protected)
}

// Ops are the operations the helper knows, with their tools.
var Ops = map[string]string{
	"file.stat":       "proxmox_host_file_stat",
	"file.list":       "proxmox_host_file_list",
	"file.read":       "proxmox_host_file_read",
	"file.write":      "proxmox_host_file_write",
	"service.status":  "proxmox_host_service",
	"service.control": "proxmox_host_service_control",
	"command.exec":    "proxmox_host_exec",
	"guest.exec":      "proxmox_guest_exec",

	OpBreakglassStage:    "proxmox_breakglass_stage",
	OpBreakglassRequest:  "proxmox_breakglass_request",
	"breakglass.confirm": "proxmox_breakglass_confirm",
	OpBreakglassApprove:  "proxmox_breakglass_approve",
	"breakglass.deny":    "proxmox_breakglass_deny",
	OpBreakglassStatus:   "proxmox_breakglass_status",
}

// Risk is an operation's risk class: reads, a file write, and of the
// service actions those that take a service away (stop, restart,
// disable) destructive.
func Risk(h policy.HostOp) schema.Risk {
	switch h.Op {
	case "file.write":
		return schema.RiskWrite
	case "service.control":
		if h.Action == "stop" || h.Action == "restart" || h.Action == "disable" {
			return schema.RiskDestructive
		}
		return schema.RiskWrite
	case "command.exec", "guest.exec":
		// A command may do anything its sandbox lets it.
		return schema.RiskDestructive
	case OpBreakglassRequest, OpBreakglassApprove:
		// The protected repository's files and volumes, deleted or
		// replaced.
		return schema.RiskDestructive
	case OpBreakglassStage:
		return schema.RiskWrite
	}
	return schema.RiskRead
}

// PolicyInput is the input a policy's host_decision sees for an operation
// on its canonical target (a path beneath its root, or a unit as systemd
// names it): its risk, its tool, its targets, and the guard's finding on
// the protected paths (a write at, beneath or above one). The helper
// decides on it, and the daemon builds the same to refuse early.
func PolicyInput(p policy.Principal, h policy.HostOp, protected []string) *policy.Input {
	risk := Risk(h)
	g := policy.Guard{Evaluated: true}
	var t policy.Targets
	if h.Path != "" {
		t.Paths = []string{h.Path}
	}
	if h.Unit != "" {
		t.Services = []string{h.Unit}
	}
	if h.Op == "file.write" {
		for _, pp := range protected {
			if beneath(h.Path, pp) || beneath(pp, h.Path) {
				g.Hits = append(g.Hits, policy.GuardHit{Kind: "path", Value: pp, Param: "path"})
			}
		}
	}
	if h.Command != nil {
		t.Paths = h.Command.Writable
		for i, w := range h.Command.Writable {
			for _, pp := range protected {
				if beneath(w, pp) || beneath(pp, w) {
					g.Hits = append(g.Hits, policy.GuardHit{Kind: "path", Value: pp, Param: fmt.Sprintf("writable[%d]", i)})
				}
			}
		}
	}
	return &policy.Input{Principal: p, Tool: Ops[h.Op], Risk: risk, Guard: g, Time: time.Now(), Targets: t, Host: &h}
}

// run does an allowed operation: a read is journaled once it is done, a
// write has its intent journaled before and its receipt after.
func (s *Server) run(ctx context.Context, peer Peer, req Request, pr keys.Principal, op hostOp, d policy.Decision) Response {
	start := time.Now()
	call := s.call(peer, req, pr, op, d)
	if !op.writes() {
		res, err := op.do(ctx, s)
		return s.finish(ctx, req.ID, op, call, start, res, err, false)
	}
	ev, err := s.opts.Journal.Intent(ctx, call)
	if err != nil {
		return Response{ID: req.ID, Error: &WireError{Code: "failed", Message: "the helper's journal did not take the intent, so nothing was written: " + err.Error()}}
	}
	call.ID = ev.CallID
	res, err := op.do(ctx, s)
	return s.finish(ctx, req.ID, op, call, start, res, err, true)
}

// finish journals how an operation ended (the receipt of a write, the one
// row of a read) and answers; the answer carries the daemon's id.
func (s *Server) finish(ctx context.Context, id string, op hostOp, call journal.Call, start time.Time, res any, err error, receipt bool) Response {
	resp := Response{ID: id}
	result := journal.Result{Outcome: journal.OutcomeOK, Duration: time.Since(start)}
	if err != nil {
		resp.Error = asWire(err)
		result.Outcome, result.Error = journal.OutcomeError, resp.Error.Message
	} else if resp.Result, err = json.Marshal(res); err != nil {
		resp.Error = &WireError{Code: "failed", Message: "encode the answer: " + err.Error()}
		result.Outcome, result.Error = journal.OutcomeError, resp.Error.Message
	}
	if err == nil {
		bgEvidence(op, &result)
	}
	var jerr error
	if receipt {
		_, jerr = s.opts.Journal.Receipt(ctx, call.ID, result)
	} else {
		_, jerr = s.opts.Journal.Record(ctx, call, result)
	}
	if jerr != nil {
		s.opts.Logger.Error("helper: journal", "id", call.ID, "err", jerr)
		if !receipt {
			// A read that could not be journaled is not answered.
			return Response{ID: id, Error: &WireError{Code: "failed", Message: "the helper's journal did not take the call, so its answer is withheld: " + jerr.Error()}}
		}
	}
	resp.OK = resp.Error == nil
	return resp
}

// call is the journal row of a request. Its call id is the helper's own
// (the journal makes one): the daemon's id is recorded beside it, so a
// daemon that reuses ids cannot keep a row out of the journal.
func (s *Server) call(peer Peer, req Request, pr keys.Principal, op hostOp, d policy.Decision) journal.Call {
	c := journal.Call{
		Principal: journal.Principal{KeyID: pr.KeyID, KeyName: pr.Name, Profile: pr.Profile, Policy: pr.Policy, Transport: "helper", Source: req.Source},
		Tool:      "helper",
		Args:      map[string]any{"peer_uid": peer.UID, "peer_pid": peer.PID, "daemon_id": req.ID, "op": req.Op},
		Decision:  journal.Decision{Effect: string(d.Effect), Reasons: d.Reasons, Policy: d.Policy, PolicyDigest: d.Digest},
	}
	if op != nil {
		c.Tool = op.tool()
		if p := op.path(); strings.HasPrefix(p, "/") {
			c.Path = p // a unit is in the arguments
		}
		c.Risk = "read"
		if op.writes() {
			c.Risk = "write"
		}
		if d.Effect != "" {
			c.Risk = Risk(op.target()).String()
		}
		c.Args = map[string]any{"peer_uid": peer.UID, "peer_pid": peer.PID, "daemon_id": req.ID, "op": req.Op, "args": op.journalArgs()}
	}
	return c
}

// refuse answers a request refused before its key was verified.
func (s *Server) refuse(ctx context.Context, peer Peer, req Request, we *WireError) Response {
	return s.answer(ctx, peer, req, keys.Principal{KeyID: "unverified"}, nil, policy.Decision{}, we)
}

// answer journals and returns a refusal.
func (s *Server) answer(ctx context.Context, peer Peer, req Request, pr keys.Principal, op hostOp, d policy.Decision, we *WireError) Response {
	call := s.call(peer, req, pr, op, d)
	outcome := journal.OutcomeInvalid
	switch we.Code {
	case "denied", "refused", "unauthenticated":
		outcome = journal.OutcomeDenied
	case "confirm":
		outcome = journal.OutcomeConfirm
	}
	if _, err := s.opts.Journal.Record(ctx, call, journal.Result{Outcome: outcome, Error: we.Message}); err != nil {
		s.opts.Logger.Error("helper: journal a refusal", "err", err)
	}
	s.opts.Logger.Info("helper: refused", "code", we.Code, "field", we.Field, "peer_uid", peer.UID, "op", req.Op, "err", we.Message)
	return Response{ID: req.ID, Error: we}
}

func decisionText(d policy.Decision) string {
	msg := fmt.Sprintf("%s: %s", d.Policy, d.Effect)
	for _, r := range d.Reasons {
		msg += "; " + r
	}
	if d.Effect == policy.Breakglass {
		msg += " (a change to the protected repository is a break-glass request: proxmox_breakglass_request; nothing was done)"
	}
	return msg
}

// asWire is err as the wire's error, with the code a caller branches on.
func asWire(err error) *WireError {
	var we *WireError
	if errors.As(err, &we) {
		return we
	}
	if we := bgWire(err); we != nil {
		return we
	}
	var pe *PathError
	switch {
	case errors.Is(err, ErrRefused):
		if errors.As(err, &pe) {
			return &WireError{Code: "refused", Field: pe.Field, Message: pe.Error()}
		}
		return &WireError{Code: "refused", Message: err.Error()}
	case errors.Is(err, ErrConflict):
		return &WireError{Code: "conflict", Message: err.Error()}
	case errors.Is(err, fs.ErrNotExist):
		return &WireError{Code: "not_found", Message: err.Error()}
	case errors.As(err, &pe):
		return &WireError{Code: "bad_request", Field: pe.Field, Message: pe.Error()}
	case errors.Is(err, errArgs):
		return &WireError{Code: "bad_request", Message: err.Error()}
	}
	return &WireError{Code: "failed", Message: err.Error()}
}

// errArgs marks arguments that break a rule of their operation.
var errArgs = errors.New("bad arguments")

// hostOp is one decoded operation.
type hostOp interface {
	tool() string
	path() string // the path or unit as asked, for the journal
	writes() bool
	journalArgs() any
	// prepare checks the operation's target and makes it canonical,
	// before any policy sees it; target is that canonical form.
	prepare(ctx context.Context, s *Server) (policy.HostOp, error)
	target() policy.HostOp
	do(ctx context.Context, s *Server) (any, error)
}

// parseOp decodes an operation's arguments strictly.
func parseOp(op string, args json.RawMessage) (hostOp, error) {
	var v hostOp
	switch op {
	case "file.stat":
		v = &statOp{}
	case "file.list":
		v = &listOp{}
	case "file.read":
		v = &readOp{}
	case "file.write":
		v = &writeOp{}
	case "service.status":
		v = &serviceStatusOp{}
	case "service.control":
		v = &serviceControlOp{}
	case "command.exec":
		v = &execOp{}
	case "guest.exec":
		v = &guestExecOp{}
	case OpBreakglassStage:
		v = &bgStageOp{}
	case OpBreakglassRequest:
		v = &bgRequestOp{}
	case "breakglass.confirm":
		v = &bgConfirmOp{}
	case OpBreakglassApprove:
		v = &bgApproveOp{}
	case "breakglass.deny":
		v = &bgDenyOp{}
	case OpBreakglassStatus:
		v = &bgStatusOp{}
	default:
		return nil, &WireError{Code: "bad_request", Field: "op", Message: fmt.Sprintf("op %q: the helper knows %s", op, strings.Join(slices.Sorted(maps.Keys(Ops)), ", "))}
	}
	if err := DecodeStrict(args, v); err != nil {
		return nil, &WireError{Code: "bad_request", Field: "args", Message: fmt.Sprintf("args of %s: %v", op, err)}
	}
	if w, ok := v.(*writeOp); ok {
		if err := w.decode(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// fileTarget is the canonical target of a file operation.
type fileTarget struct{ t policy.HostOp }

func (f *fileTarget) target() policy.HostOp { return f.t }

func (f *fileTarget) prepareFile(s *Server, op, p string, write bool) (policy.HostOp, error) {
	root, err := s.opts.Tree.precheck("path", p, write)
	if err != nil {
		return policy.HostOp{}, err
	}
	f.t = policy.HostOp{Op: op, Path: p, Root: root}
	return f.t, nil
}

type statOp struct {
	Path string `json:"path"`
	fileTarget
}

func (o *statOp) tool() string     { return Ops["file.stat"] }
func (o *statOp) path() string     { return o.Path }
func (o *statOp) writes() bool     { return false }
func (o *statOp) journalArgs() any { return map[string]any{"path": o.Path} }
func (o *statOp) prepare(_ context.Context, s *Server) (policy.HostOp, error) {
	return o.prepareFile(s, "file.stat", o.Path, false)
}
func (o *statOp) do(_ context.Context, s *Server) (any, error) { return s.opts.Tree.Stat(o.Path) }

type listOp struct {
	ListRequest
	fileTarget
}

func (o *listOp) tool() string     { return Ops["file.list"] }
func (o *listOp) path() string     { return o.Path }
func (o *listOp) writes() bool     { return false }
func (o *listOp) journalArgs() any { return o.ListRequest }
func (o *listOp) prepare(_ context.Context, s *Server) (policy.HostOp, error) {
	return o.prepareFile(s, "file.list", o.Path, false)
}
func (o *listOp) do(_ context.Context, s *Server) (any, error) {
	return s.opts.Tree.List(o.ListRequest)
}

type readOp struct {
	ReadRequest
	fileTarget
}

func (o *readOp) tool() string     { return Ops["file.read"] }
func (o *readOp) path() string     { return o.Path }
func (o *readOp) writes() bool     { return false }
func (o *readOp) journalArgs() any { return o.ReadRequest }
func (o *readOp) prepare(_ context.Context, s *Server) (policy.HostOp, error) {
	return o.prepareFile(s, "file.read", o.Path, false)
}
func (o *readOp) do(_ context.Context, s *Server) (any, error) {
	return s.opts.Tree.Read(o.ReadRequest)
}

// writeOp is a write's arguments on the wire: the content as text or
// base64, the mode as chmod takes it ("0644").
type writeOp struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty"` // utf-8 (default) or base64
	SHA256   string `json:"sha256"`
	IfSHA256 string `json:"if_sha256,omitempty"`
	Create   string `json:"create,omitempty"`
	Mode     string `json:"mode,omitempty"`
	UID      *int   `json:"uid,omitempty"`
	GID      *int   `json:"gid,omitempty"`
	// Offset and Size make this one chunk of a chunked write (the whole
	// file's size; sha256 the whole file's hash).
	Offset *int64 `json:"offset,omitempty"`
	Size   *int64 `json:"size,omitempty"`

	req   WriteRequest
	keyID string // the verified caller's, for the upload's id
	fileTarget
}

func (o *writeOp) decode() error {
	o.req = WriteRequest{Path: o.Path, SHA256: o.SHA256, IfSHA256: o.IfSHA256, Create: o.Create, UID: o.UID, GID: o.GID}
	switch {
	case o.Size != nil:
		o.req.Size = *o.Size
		if o.Offset != nil {
			o.req.Offset = *o.Offset
		}
	case o.Offset != nil:
		return &WireError{Code: "bad_request", Field: "offset", Message: "offset: a chunk needs size, the whole file's size"}
	}
	switch o.Encoding {
	case "", "utf-8":
		o.req.Data = []byte(o.Content)
	case "base64":
		b, err := base64.StdEncoding.DecodeString(o.Content)
		if err != nil {
			return &WireError{Code: "bad_request", Field: "content", Message: "content: not valid base64: " + err.Error()}
		}
		o.req.Data = b
	default:
		return &WireError{Code: "bad_request", Field: "encoding", Message: fmt.Sprintf("encoding %q: must be utf-8 or base64", o.Encoding)}
	}
	if o.Mode != "" {
		m, err := strconv.ParseUint(o.Mode, 8, 32)
		if err != nil || len(o.Mode) > 5 {
			return &WireError{Code: "bad_request", Field: "mode", Message: fmt.Sprintf("mode %q: must be octal permission bits as chmod takes them, such as \"0644\"", o.Mode)}
		}
		mode := uint32(m)
		o.req.Mode = &mode
	}
	return nil
}

func (o *writeOp) tool() string { return Ops["file.write"] }
func (o *writeOp) path() string { return o.Path }
func (o *writeOp) writes() bool { return true }
func (o *writeOp) prepare(_ context.Context, s *Server) (policy.HostOp, error) {
	return o.prepareFile(s, "file.write", o.Path, true)
}

// journalArgs records the write without its content (its hash and size
// are the evidence).
func (o *writeOp) journalArgs() any {
	a := map[string]any{"path": o.Path, "sha256": o.SHA256, "size": len(o.req.Data), "if_sha256": o.IfSHA256, "create": o.Create, "mode": o.Mode}
	if o.Size != nil {
		a["size"], a["chunk_offset"], a["chunk_bytes"] = o.req.Size, o.req.Offset, len(o.req.Data)
	}
	return a
}
func (o *writeOp) do(_ context.Context, s *Server) (any, error) {
	if o.Size != nil {
		return s.opts.Tree.WriteChunk(o.req, UploadID(o.keyID, o.req))
	}
	return s.opts.Tree.Write(o.req)
}

// MaxJournalLines bounds service.status's journal lines.
const MaxJournalLines = 200

// serviceStatusOp is a unit's status with its last journal lines.
type serviceStatusOp struct {
	Unit  string `json:"unit"`
	Lines *int   `json:"lines,omitempty"` // 10 when absent
	t     policy.HostOp
}

func (o *serviceStatusOp) tool() string          { return Ops["service.status"] }
func (o *serviceStatusOp) path() string          { return o.Unit }
func (o *serviceStatusOp) writes() bool          { return false }
func (o *serviceStatusOp) journalArgs() any      { return o }
func (o *serviceStatusOp) target() policy.HostOp { return o.t }
func (o *serviceStatusOp) prepare(ctx context.Context, s *Server) (policy.HostOp, error) {
	if o.Lines != nil && (*o.Lines < 0 || *o.Lines > MaxJournalLines) {
		return policy.HostOp{}, &WireError{Code: "bad_request", Field: "lines", Message: fmt.Sprintf("lines %d: must be 0 to %d", *o.Lines, MaxJournalLines)}
	}
	unit, err := resolveUnit(ctx, s, o.Unit)
	if err != nil {
		return policy.HostOp{}, err
	}
	o.t = policy.HostOp{Op: "service.status", Unit: unit}
	return o.t, nil
}
func (o *serviceStatusOp) do(ctx context.Context, s *Server) (any, error) {
	lines := 10
	if o.Lines != nil {
		lines = *o.Lines
	}
	return s.opts.Services.Status(ctx, o.t.Unit, lines)
}

// serviceControlOp is an action on a unit.
type serviceControlOp struct {
	Unit   string `json:"unit"`
	Action string `json:"action"`
	t      policy.HostOp
}

func (o *serviceControlOp) tool() string          { return Ops["service.control"] }
func (o *serviceControlOp) path() string          { return o.Unit }
func (o *serviceControlOp) writes() bool          { return true }
func (o *serviceControlOp) journalArgs() any      { return o }
func (o *serviceControlOp) target() policy.HostOp { return o.t }
func (o *serviceControlOp) prepare(ctx context.Context, s *Server) (policy.HostOp, error) {
	if !slices.Contains(ServiceActions, o.Action) {
		return policy.HostOp{}, &WireError{Code: "bad_request", Field: "action", Message: fmt.Sprintf("action %q: must be one of %s", o.Action, strings.Join(ServiceActions, ", "))}
	}
	unit, err := resolveUnit(ctx, s, o.Unit)
	if err != nil {
		return policy.HostOp{}, err
	}
	o.t = policy.HostOp{Op: "service.control", Unit: unit, Action: o.Action}
	return o.t, nil
}
func (o *serviceControlOp) do(ctx context.Context, s *Server) (any, error) {
	return s.opts.Services.Control(ctx, o.t.Unit, o.Action)
}

// resolveUnit is the unit systemd names, when the helper has services.
func resolveUnit(ctx context.Context, s *Server, unit string) (string, error) {
	if s.opts.Services == nil {
		return "", &WireError{Code: "refused", Message: errNoServices.Error()}
	}
	return s.opts.Services.Resolve(ctx, "unit", unit)
}

// stepRefusal says why a break-glass step's decision does not let it run.
func stepRefusal(d policy.Decision, want policy.Effect) string {
	msg := decisionText(d)
	if want == policy.Breakglass {
		return msg + " (a break-glass request and its requester's steps need a policy that asks for break-glass on the protected repository, such as the root profile's; nothing was done)"
	}
	return msg + " (this break-glass step needs a policy that allows it: approving and denying others' requests is host operation breakglass.approve, staging content breakglass.stage, reading requests breakglass.status; nothing was done)"
}
