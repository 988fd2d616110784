package journal

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// BundleFormat names the recovery bundle's layout; a change to it is a new
// name.
const BundleFormat = "proxmox-mcp operation bundle 1"

// maxBundleHistory bounds the rows of the operation's path a bundle holds.
const maxBundleHistory = 1000

// Bundle is what a recovery bundle holds: everything the journal has of
// one operation, to explain or settle it elsewhere. Rows and History are
// rows in the form of Export (prev_hash and hash included).
type Bundle struct {
	Format    string    `json:"format"`
	Operation string    `json:"operation"`
	Journal   string    `json:"journal"`
	Created   time.Time `json:"created"`
	// HeadID and Head are the journal's last row when the bundle was
	// made: keep them with the bundle to check an export against later.
	HeadID int64  `json:"head_id"`
	Head   string `json:"head"`
	// Rows are the operation's own rows: its intent (the request, the
	// configuration it was planned against), its receipt (the evidence
	// after it), observations made for it, and the resolutions that
	// settled it (with their evidence).
	Rows []Event `json:"rows"`
	// History are the other rows of the operation's path since its intent
	// (reads, observations, other operations' intents and receipts,
	// undos; of the first 1000 rows): what happened to the configuration
	// afterwards.
	History []Event `json:"history"`
}

// Bundle writes a recovery bundle of one operation (its intent's call id)
// to a new file at dest, one JSON document, and its SHA-256 to
// dest.sha256, as Export does: neither file may exist, both are created
// with O_EXCL and mode 0600 and fsynced, and a failure removes what it
// created. An id whose rows hold no intent (a read, a refusal: not an
// operation) is ErrNoIntent.
func (j *Journal) Bundle(ctx context.Context, callID, dest string) (Artifact, error) {
	if err := checkCallID(callID); err != nil {
		return Artifact{}, fmt.Errorf("journal: bundle: %w: %w", ErrInvalid, err)
	}
	b := Bundle{Format: BundleFormat, Operation: callID, Journal: j.path, Created: j.now().UTC()}
	var err error
	if b.HeadID, b.Head, err = j.Head(ctx); err != nil {
		return Artifact{}, fmt.Errorf("journal: bundle: %w", err)
	}
	if b.Rows, err = j.CallEvents(ctx, callID); err != nil {
		return Artifact{}, fmt.Errorf("journal: bundle: %w", err)
	}
	var intent *Event
	for i := range b.Rows {
		if b.Rows[i].Kind == KindIntent {
			intent = &b.Rows[i]
		}
	}
	if intent == nil {
		return Artifact{}, fmt.Errorf("bundle %s: %w", callID, ErrNoIntent)
	}
	later, err := j.PathEvents(ctx, intent.Path, intent.ID, maxBundleHistory)
	if err != nil {
		return Artifact{}, fmt.Errorf("journal: bundle: %w", err)
	}
	b.History = []Event{}
	for _, ev := range later {
		if ev.CallID != callID {
			b.History = append(b.History, ev)
		}
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return Artifact{}, fmt.Errorf("journal: bundle: %w", err)
	}
	data = append(data, '\n')
	out, err := createPair(dest)
	if err != nil {
		return Artifact{}, fmt.Errorf("journal: bundle: %w", err)
	}
	art := Artifact{Path: out.path, Sidecar: out.sidecarPath, Rows: int64(len(b.Rows) + len(b.History)), HeadID: b.HeadID, Head: b.Head}
	h := sha256.New()
	if _, err = io.MultiWriter(out.f, h).Write(data); err == nil {
		err = out.finish(h, int64(len(data)), &art)
	}
	if err != nil {
		out.abort()
		return Artifact{}, fmt.Errorf("journal: bundle to %s: %w", dest, err)
	}
	return art, nil
}
