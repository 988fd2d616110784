package systemd

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"time"

	sdjournal "github.com/coreos/go-systemd/v22/journal"
)

// Identifier is SYSLOG_IDENTIFIER of every record.
const Identifier = "proxmox-mcp"

// FieldPrefix starts the journal field of every attribute: key_id becomes
// PMCP_KEY_ID.
const FieldPrefix = "PMCP_"

// UnderJournal reports whether stderr is connected to the journal (systemd
// sets JOURNAL_STREAM for services), so that logs should go to it as
// structured records.
func UnderJournal() bool {
	ok, err := sdjournal.StderrIsJournalStream()
	return err == nil && ok && sdjournal.Enabled()
}

// SendFunc delivers one journal record; go-systemd's journal.Send in
// production.
type SendFunc func(message string, priority sdjournal.Priority, fields map[string]string) error

// JournalHandler is a slog.Handler that writes each record to the journal
// with its attributes as fields (PMCP_KEY_ID, PMCP_TOOL, PMCP_DECISION,
// PMCP_UPID, …) and as key=value text in MESSAGE, so that both
// `journalctl -u proxmox-mcp` and `journalctl PMCP_DECISION=deny` read
// well. Values that redact themselves (slog.LogValuer) are resolved first,
// so a secret never reaches the journal. When the journal refuses a record
// it goes to the fallback handler (stderr) instead of being lost.
type JournalHandler struct {
	level    slog.Leveler
	send     SendFunc
	fallback slog.Handler
	// attrs are the fields from WithAttrs, already flattened; text is
	// their key=value rendering.
	attrs  map[string]string
	text   []slog.Attr
	groups []string
}

// NewJournalHandler returns a handler sending to the journal through send
// (nil: go-systemd's journal.Send), records below level dropped.
func NewJournalHandler(level slog.Leveler, send SendFunc, fallback slog.Handler) *JournalHandler {
	if send == nil {
		send = sdjournal.Send
	}
	return &JournalHandler{level: level, send: send, fallback: fallback, attrs: map[string]string{}}
}

// Enabled reports whether level is logged.
func (h *JournalHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *JournalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := h.clone()
	for _, a := range attrs {
		addField(c.attrs, c.groups, a)
		c.text = append(c.text, nest(c.groups, a))
	}
	if c.fallback != nil {
		c.fallback = c.fallback.WithAttrs(attrs)
	}
	return c
}

// WithGroup returns a handler that qualifies later attributes with name.
func (h *JournalHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := h.clone()
	c.groups = append(c.groups, name)
	if c.fallback != nil {
		c.fallback = c.fallback.WithGroup(name)
	}
	return c
}

func (h *JournalHandler) clone() *JournalHandler {
	c := *h
	c.attrs = make(map[string]string, len(h.attrs))
	for k, v := range h.attrs {
		c.attrs[k] = v
	}
	c.text = append([]slog.Attr(nil), h.text...)
	c.groups = append([]string(nil), h.groups...)
	return &c
}

// Handle sends one record.
func (h *JournalHandler) Handle(ctx context.Context, r slog.Record) error {
	fields := make(map[string]string, len(h.attrs)+8)
	for k, v := range h.attrs {
		fields[k] = v
	}
	attrs := append([]slog.Attr(nil), h.text...)
	r.Attrs(func(a slog.Attr) bool {
		addField(fields, h.groups, a)
		attrs = append(attrs, nest(h.groups, a))
		return true
	})
	fields["SYSLOG_IDENTIFIER"] = Identifier
	if err := h.send(message(r.Message, attrs), priority(r.Level), fields); err != nil {
		if h.fallback != nil {
			return h.fallback.Handle(ctx, r)
		}
		return err
	}
	return nil
}

// message is the record's text followed by its attributes as key=value,
// quoted as slog's text handler quotes them.
func message(msg string, attrs []slog.Attr) string {
	if len(attrs) == 0 {
		return msg
	}
	var b bytes.Buffer
	th := slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
			return slog.Attr{}
		}
		return a
	}})
	r := slog.NewRecord(time.Time{}, slog.LevelInfo, "", 0)
	r.AddAttrs(attrs...)
	_ = th.Handle(context.Background(), r)
	return msg + " " + strings.TrimSpace(b.String())
}

// nest puts an attribute inside the handler's groups, for the text.
func nest(groups []string, a slog.Attr) slog.Attr {
	for i := len(groups) - 1; i >= 0; i-- {
		a = slog.Group(groups[i], a)
	}
	return a
}

// addField flattens an attribute into journal fields: groups joined with
// '_', upper case, anything but [A-Z0-9_] replaced by '_', PMCP_ first.
func addField(fields map[string]string, groups []string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		sub := groups
		if a.Key != "" {
			sub = append(append([]string(nil), groups...), a.Key)
		}
		for _, g := range a.Value.Group() {
			addField(fields, sub, g)
		}
		return
	}
	name := FieldName(append(append([]string(nil), groups...), a.Key)...)
	switch a.Value.Kind() {
	case slog.KindTime:
		fields[name] = a.Value.Time().UTC().Format(time.RFC3339Nano)
	default:
		fields[name] = a.Value.String()
	}
}

// FieldName is the journal field of an attribute key (within groups).
func FieldName(parts ...string) string {
	var b strings.Builder
	b.WriteString(FieldPrefix)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('_')
		}
		for _, r := range p {
			switch {
			case 'a' <= r && r <= 'z':
				b.WriteRune(r - 'a' + 'A')
			case 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
				b.WriteRune(r)
			default:
				b.WriteByte('_')
			}
		}
	}
	return b.String()
}

// priority maps slog levels onto syslog priorities.
func priority(l slog.Level) sdjournal.Priority {
	switch {
	case l >= slog.LevelError:
		return sdjournal.PriErr
	case l >= slog.LevelWarn:
		return sdjournal.PriWarning
	case l >= slog.LevelInfo:
		return sdjournal.PriInfo
	default:
		return sdjournal.PriDebug
	}
}
