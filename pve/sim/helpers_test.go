package sim

import (
	"context"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

var (
	regOnce sync.Once
	reg     *schema.Registry
	regErr  error
)

// registry parses the real PVE 9.1 schema once per test binary.
func registry(tb testing.TB) *schema.Registry {
	tb.Helper()
	const path = "../../../shared/fixtures/pve-9.1/apidoc.js"
	if _, err := os.Stat(path); os.IsNotExist(err) {
		tb.Skipf("real PVE fixture %s is not here: ../shared/fixtures must sit beside the repository", path)
	}
	regOnce.Do(func() { reg, regErr = schema.ParseFile(path) })
	if regErr != nil {
		tb.Fatal(regErr)
	}
	return reg
}

// epoch is the simulated start time of every test.
var epoch = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// env is a simulator behind a real TLS server and a client per token.
type env struct {
	t     testing.TB
	sim   *Sim
	clock *ManualClock
	srv   *httptest.Server
}

func newEnv(t testing.TB) *env {
	t.Helper()
	clock := NewManualClock(epoch)
	s, err := New(Options{Registry: registry(t), Clock: clock, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, sim: s, clock: clock, srv: newTLSServer(t, s)}
}

// newTLSServer serves the simulator over HTTPS/1.1, as pveproxy does.
func newTLSServer(t testing.TB, s *Sim) *httptest.Server {
	srv := httptest.NewUnstartedServer(s)
	srv.EnableHTTP2 = false
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// client returns a PVE client authenticated as one of the default tokens.
func (e *env) client(tokenID string) *pve.Client {
	e.t.Helper()
	tok, ok := e.sim.Token(tokenID)
	if !ok {
		e.t.Fatalf("no token %s", tokenID)
	}
	return e.clientFor(tok)
}

func (e *env) clientFor(tok Token) *pve.Client {
	e.t.Helper()
	c, err := pve.New(pve.Config{
		BaseURL: e.srv.URL + APIPrefix,
		Token:   pve.Token{ID: tok.ID, Secret: pve.Secret(tok.Secret)},
		TLS:     pve.TLSTrust{Fingerprints: []string{pve.Fingerprint(e.srv.Certificate().Raw)}},
		Retry:   pve.RetryPolicy{Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(c.Close)
	return c
}

// finish advances the clock past any task and returns the task status.
func (e *env) finish(c *pve.Client, upid string) pve.TaskStatus {
	e.t.Helper()
	e.clock.Advance(time.Minute)
	u, err := pve.ParseUPID(upid)
	if err != nil {
		e.t.Fatalf("not a UPID: %q", upid)
	}
	var st pve.TaskStatus
	if err := c.Get(context.Background(), pve.Path("nodes", u.Node, "tasks", upid, "status"), nil, &st); err != nil {
		e.t.Fatal(err)
	}
	return st
}
