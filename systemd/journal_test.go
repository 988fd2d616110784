package systemd

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdjournal "github.com/coreos/go-systemd/v22/journal"
)

type sentRecord struct {
	msg    string
	pri    sdjournal.Priority
	fields map[string]string
}

type fakeJournal struct {
	records []sentRecord
	err     error
}

func (f *fakeJournal) send(msg string, pri sdjournal.Priority, fields map[string]string) error {
	if f.err != nil {
		return f.err
	}
	f.records = append(f.records, sentRecord{msg, pri, fields})
	return nil
}

// secret redacts itself, as keys.Secret does.
type secret string

func (secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// A call's record carries the fields an operator filters on, with a
// readable MESSAGE, and never a secret.
func TestJournalHandlerFields(t *testing.T) {
	j := &fakeJournal{}
	log := slog.New(NewJournalHandler(slog.LevelInfo, j.send, nil)).With("listener", "lan")
	log.Info("call", "key_id", "abcdefghijklmnop", "tool", "proxmox_api_call", "decision", "deny",
		"upid", "UPID:pve1:00001234:0000ABCD:65000000:qmstart:101:root@pam:",
		"key", secret("pmcp_abcdefghijklmnop_SECRET"), "duration", 1500*time.Microsecond,
		slog.Group("tailnet", "user", "alice@example.com"))
	log.Debug("not logged at info")
	log.Error("journal write failed", "error", errors.New("disk full"))
	if len(j.records) != 2 {
		t.Fatalf("%d records, want 2", len(j.records))
	}
	r := j.records[0]
	want := map[string]string{
		"PMCP_LISTENER":     "lan",
		"PMCP_KEY_ID":       "abcdefghijklmnop",
		"PMCP_TOOL":         "proxmox_api_call",
		"PMCP_DECISION":     "deny",
		"PMCP_UPID":         "UPID:pve1:00001234:0000ABCD:65000000:qmstart:101:root@pam:",
		"PMCP_KEY":          "[redacted]",
		"PMCP_DURATION":     "1.5ms",
		"PMCP_TAILNET_USER": "alice@example.com",
		"SYSLOG_IDENTIFIER": "proxmox-mcp",
	}
	for k, v := range want {
		if r.fields[k] != v {
			t.Errorf("field %s = %q, want %q", k, r.fields[k], v)
		}
	}
	if len(r.fields) != len(want) {
		t.Errorf("fields %v, want exactly %v", r.fields, want)
	}
	if r.pri != sdjournal.PriInfo || j.records[1].pri != sdjournal.PriErr {
		t.Errorf("priorities %d, %d", r.pri, j.records[1].pri)
	}
	if !strings.HasPrefix(r.msg, "call listener=lan key_id=abcdefghijklmnop tool=proxmox_api_call decision=deny") ||
		!strings.Contains(r.msg, "tailnet.user=alice@example.com") {
		t.Errorf("message %q", r.msg)
	}
	for _, rec := range j.records {
		if strings.Contains(rec.msg, "SECRET") {
			t.Errorf("a secret in the message %q", rec.msg)
		}
		for k, v := range rec.fields {
			if strings.Contains(v, "SECRET") {
				t.Errorf("a secret in field %s", k)
			}
		}
	}
	if j.records[1].fields["PMCP_ERROR"] != "disk full" {
		t.Errorf("error field %v", j.records[1].fields)
	}
}

func TestJournalHandlerGroups(t *testing.T) {
	j := &fakeJournal{}
	log := slog.New(NewJournalHandler(slog.LevelDebug, j.send, nil)).WithGroup("pve").With("node", "pve1")
	log.Debug("request", "status", 200, "path", "/nodes/pve1/qemu")
	r := j.records[0]
	if r.fields["PMCP_PVE_NODE"] != "pve1" || r.fields["PMCP_PVE_STATUS"] != "200" || r.fields["PMCP_PVE_PATH"] != "/nodes/pve1/qemu" {
		t.Errorf("fields %v", r.fields)
	}
	if r.pri != sdjournal.PriDebug || r.msg != "request pve.node=pve1 pve.status=200 pve.path=/nodes/pve1/qemu" {
		t.Errorf("%d %q", r.pri, r.msg)
	}
}

func TestFieldName(t *testing.T) {
	for in, want := range map[string]string{
		"key_id":       "PMCP_KEY_ID",
		"Tailnet.User": "PMCP_TAILNET_USER",
		"rate-limit":   "PMCP_RATE_LIMIT",
		"héllo":        "PMCP_H_LLO",
	} {
		if got := FieldName(in); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A journal that refuses records does not lose them: they go to stderr.
func TestJournalHandlerFallback(t *testing.T) {
	var stderr bytes.Buffer
	j := &fakeJournal{err: errors.New("connection refused")}
	log := slog.New(NewJournalHandler(slog.LevelInfo, j.send, slog.NewTextHandler(&stderr, nil))).With("listener", "loopback")
	log.Warn("reload failed", "error", "bad config")
	if !strings.Contains(stderr.String(), `level=WARN msg="reload failed" listener=loopback error="bad config"`) {
		t.Errorf("stderr %q", stderr.String())
	}
}
