package breakglass

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// The runner's outcomes.
const (
	OutcomeDone    = "done"
	OutcomeRefused = "refused"
	OutcomeFailed  = "failed"
)

// RunEvent is what the runner did with one file of the queue: its
// result, and the request when its signature held.
type RunEvent struct {
	File   string
	Signed *Signed
	Result Result
}

// RunQueue executes every signed request in the queue once: each file is
// taken out of the queue first (so nothing runs twice and the path unit
// rests), its signature, version, key and expiry verified, its nonce
// recorded as used (a replay is refused, after restarts too), its targets
// resolved again and compared with what was approved, and only then its
// operation done. Every file gives an event, which record journals; the
// result is kept for the request's status.
func (s *Service) RunQueue(ctx context.Context, record func(context.Context, RunEvent)) error {
	key, err := s.signingKey()
	if err != nil {
		return err
	}
	pub := key.Public().(ed25519.PublicKey)
	q, err := s.dir.OpenDir(QueueDir)
	if err != nil {
		return fmt.Errorf("breakglass: %w", err)
	}
	names, err := q.ReadDirNames()
	q.Close()
	if err != nil {
		return fmt.Errorf("breakglass: the queue: %w", err)
	}
	for _, name := range names {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if strings.HasPrefix(name, ".") {
			// A request the helper is still writing (its temporary
			// file, renamed into place when whole): not the runner's.
			continue
		}
		ev := s.runOne(ctx, pub, name)
		if record != nil {
			record(ctx, ev)
		}
	}
	return nil
}

func (s *Service) runOne(ctx context.Context, pub ed25519.PublicKey, name string) RunEvent {
	start := s.opts.Now().UTC()
	ev := RunEvent{File: name, Result: Result{Started: start}}
	refuse := func(format string, args ...any) RunEvent {
		ev.Result.Outcome, ev.Result.Message, ev.Result.Finished = OutcomeRefused, fmt.Sprintf(format, args...)+"; nothing was done", s.opts.Now().UTC()
		return ev
	}
	id, ok := strings.CutSuffix(name, ".json")
	q, err := s.dir.OpenDir(QueueDir)
	if err != nil {
		return refuse("the queue: %v", err)
	}
	data, rerr := q.ReadFile(name)
	_, derr := q.Remove(name)
	q.Close()
	switch {
	case !ok || !ValidID(id):
		return refuse("%s is not a request file (bg-<16 hex>.json)", name)
	case rerr != nil:
		return refuse("read %s: %v", name, rerr)
	case derr != nil:
		// Left in the queue, it could run again: refuse it now.
		return refuse("take %s out of the queue: %v", name, derr)
	}
	ev.Result.ID = id
	var env Envelope
	if err := decodeStrict(data, &env); err != nil {
		return s.keep(ctx, refuse("%s is not a signed request: %v", name, err))
	}
	signed, err := Open(pub, env, start)
	if err != nil {
		if errors.Is(err, ErrSignature) {
			return s.keep(ctx, refuse("%s: %v (signed by another key, or changed since it was signed)", name, err))
		}
		ev.Signed = &signed
		ev.Result.Digest = signed.Digest
		return s.keep(ctx, refuse("%s: %v", name, err))
	}
	ev.Signed, ev.Result.Digest = &signed, signed.Digest
	if signed.ID != id {
		return s.keep(ctx, refuse("%s holds request %s: a request lies under its own id only", name, signed.ID))
	}
	if err := s.useNonce(signed); err != nil {
		return s.keep(ctx, refuse("%v", err))
	}
	changes, err := s.opts.Repository.Execute(ctx, signed, s.staging())
	ev.Result.Finished = s.opts.Now().UTC()
	var fe *FieldError
	switch {
	case err == nil:
		ev.Result.Outcome, ev.Result.Changes = OutcomeDone, changes
		if signed.Operation.Kind == OpPutFile {
			s.remove(stagingDir, signed.Operation.SHA256) //nolint:errcheck // a staged upload left behind is only space
		}
	case errors.Is(err, ErrTarget), errors.As(err, &fe):
		ev.Result.Outcome, ev.Result.Message = OutcomeRefused, err.Error()
	default:
		ev.Result.Outcome, ev.Result.Message = OutcomeFailed, err.Error()+"; the operation may be half done: look at the repository"
	}
	return s.keep(ctx, ev)
}

// useNonce records the request's nonce as used, refusing one used before.
func (s *Service) useNonce(signed Signed) error {
	d, err := s.dir.OpenDir(nonceDir)
	if err != nil {
		return fmt.Errorf("breakglass: %w", err)
	}
	defer d.Close()
	if err := d.CreateFile(signed.Nonce, []byte(signed.ID+" "+s.opts.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("the nonce of %s was used before: a replay", signed.ID)
		}
		return fmt.Errorf("breakglass: record the nonce of %s: %w", signed.ID, err)
	}
	return nil
}

// keep writes a result where the request's status finds it: never over
// an earlier one (a replay's refusal leaves the first run's result).
func (s *Service) keep(ctx context.Context, ev RunEvent) RunEvent {
	if ev.Result.Finished.IsZero() {
		ev.Result.Finished = s.opts.Now().UTC()
	}
	if ev.Result.ID == "" {
		return ev
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return ev
	}
	defer unlock()
	if err := s.write(resultDir, ev.Result.ID+".json", ev.Result, false); err != nil {
		return ev // a result is there already
	}
	rec, err := s.Get(ev.Result.ID)
	if err != nil || rec.Result != nil {
		return ev
	}
	r := ev.Result
	rec.Result = &r
	s.write(requestDir, ev.Result.ID+".json", rec, true) //nolint:errcheck // the result file holds it too
	return ev
}

// ResultOf is the runner's result for a request, when there is one.
func (s *Service) ResultOf(id string) (*Result, error) {
	if !ValidID(id) {
		return nil, &FieldError{Field: "id", Rule: fmt.Sprintf("%q is not a break-glass request id", id)}
	}
	var r Result
	if err := s.read(resultDir, id+".json", &r); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return &r, nil
}
