package host

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
)

// Service operations: a unit's status (with its last journal lines), and
// start, stop, restart, reload, enable and disable, through systemd's
// D-Bus API. The unit is named by systemd itself: the name asked for is
// only checked and given the .service suffix systemctl would add; the
// helper then asks systemd which unit that is (its id and every name it
// has: aliases, a template instance's template), and refuses this
// install's own units under any of their names.

// ServiceActions are the actions of service.control.
var ServiceActions = []string{"start", "stop", "restart", "reload", "enable", "disable"}

// unitSuffixes are the unit types systemd knows.
var unitSuffixes = []string{".service", ".socket", ".timer", ".target", ".mount", ".automount", ".path", ".slice", ".scope", ".swap", ".device"}

// CleanUnitName checks a unit name as systemd's unit_name_is_valid does
// (the characters [A-Za-z0-9:_.\-@], at most 255 bytes, a known type
// suffix, at most one @) and adds .service to a name without a suffix,
// as systemctl does.
func CleanUnitName(field, name string) (string, error) {
	bad := func(rule string) error { return &PathError{Field: field, Path: name, Rule: rule} }
	if name == "" {
		return "", bad("must not be empty")
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(":_.-@\\", r)
		if !ok {
			return "", bad(fmt.Sprintf("holds %q at byte %d; unit names are letters, digits and : _ . - @ \\", r, i))
		}
	}
	if !slices.ContainsFunc(unitSuffixes, func(s string) bool { return strings.HasSuffix(name, s) }) {
		name += ".service"
	}
	switch {
	case len(name) > 255:
		return "", bad("is longer than 255 bytes")
	case strings.Count(name, "@") > 1:
		return "", bad("holds more than one @")
	case strings.HasPrefix(name, ".") || strings.HasPrefix(name, "@") || strings.HasPrefix(name, "-"):
		return "", bad("must start with a letter or digit")
	}
	return name, nil
}

// ownUnit says whether a unit name is one of this install's own
// (proxmox-mcp and proxmox-mcp-*, of any type, any template instance).
func ownUnit(name string) bool {
	base := name
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	if i := strings.IndexByte(base, '@'); i >= 0 {
		base = base[:i]
	}
	return base == "proxmox-mcp" || strings.HasPrefix(base, "proxmox-mcp-")
}

// Unit is what service.status answers.
type Unit struct {
	Unit          string    `json:"unit"`
	Names         []string  `json:"names"`
	Description   string    `json:"description"`
	LoadState     string    `json:"load_state"`
	ActiveState   string    `json:"active_state"`
	SubState      string    `json:"sub_state"`
	UnitFileState string    `json:"unit_file_state,omitempty"`
	MainPID       uint32    `json:"main_pid,omitempty"`
	Since         time.Time `json:"since,omitzero"`
	NRestarts     uint32    `json:"n_restarts,omitempty"`
	// Journal holds the unit's last journal lines (journalctl -o
	// short-iso), oldest first.
	Journal []string `json:"journal,omitempty"`
	// Job is the result of an action's job (done, failed, canceled,
	// timeout, dependency, skipped), empty for a status.
	Job string `json:"job,omitempty"`
}

// Services reaches systemd over D-Bus.
type Services struct {
	// Journalctl is the journalctl binary (journalctl on $PATH when
	// empty).
	Journalctl string
	// JobTimeout bounds waiting for a job (90 s).
	JobTimeout time.Duration
}

// Resolve asks systemd which unit name is, refusing this install's own.
func (s *Services) Resolve(ctx context.Context, field, name string) (string, error) {
	name, err := CleanUnitName(field, name)
	if err != nil {
		return "", err
	}
	if ownUnit(name) {
		return "", s.refuseOwn(field, name, name)
	}
	conn, err := sddbus.NewSystemConnectionContext(ctx)
	if err != nil {
		return "", fmt.Errorf("host: reach systemd over D-Bus: %w", err)
	}
	defer conn.Close()
	u, err := s.unit(ctx, conn, name)
	if err != nil {
		return "", err
	}
	for _, n := range append([]string{u.Unit}, u.Names...) {
		if ownUnit(n) {
			return "", s.refuseOwn(field, name, n)
		}
	}
	if u.LoadState == "not-found" {
		return "", &PathError{Field: field, Path: name, Rule: "is not a unit systemd knows (LoadState not-found)"}
	}
	return u.Unit, nil
}

func (s *Services) refuseOwn(field, asked, own string) error {
	rule := "is one of this install's own units; they are never controlled through the helper"
	if asked != own {
		rule = fmt.Sprintf("is %s, one of this install's own units; they are never controlled through the helper", own)
	}
	return fmt.Errorf("%w: %w", ErrRefused, &PathError{Field: field, Path: asked, Rule: rule})
}

// unit reads a unit's properties.
func (s *Services) unit(ctx context.Context, conn *sddbus.Conn, name string) (Unit, error) {
	p, err := conn.GetUnitPropertiesContext(ctx, name)
	if err != nil {
		return Unit{}, fmt.Errorf("host: systemd's properties of %s: %w", name, err)
	}
	str := func(k string) string { v, _ := p[k].(string); return v }
	u := Unit{Unit: str("Id"), Description: str("Description"), LoadState: str("LoadState"),
		ActiveState: str("ActiveState"), SubState: str("SubState"), UnitFileState: str("UnitFileState")}
	if names, ok := p["Names"].([]string); ok {
		u.Names = slices.Sorted(slices.Values(names))
	}
	if ts, ok := p["ActiveEnterTimestamp"].(uint64); ok && ts > 0 {
		u.Since = time.UnixMicro(int64(ts)).UTC()
	}
	if u.Unit == "" {
		return Unit{}, fmt.Errorf("host: systemd gave no id for %s", name)
	}
	if strings.HasSuffix(u.Unit, ".service") {
		if sp, err := conn.GetUnitTypePropertiesContext(ctx, u.Unit, "Service"); err == nil {
			u.MainPID, _ = sp["MainPID"].(uint32)
			u.NRestarts, _ = sp["NRestarts"].(uint32)
		}
	}
	return u, nil
}

// Status is a unit's state and its last lines journal lines.
func (s *Services) Status(ctx context.Context, unit string, lines int) (Unit, error) {
	conn, err := sddbus.NewSystemConnectionContext(ctx)
	if err != nil {
		return Unit{}, fmt.Errorf("host: reach systemd over D-Bus: %w", err)
	}
	defer conn.Close()
	u, err := s.unit(ctx, conn, unit)
	if err != nil {
		return Unit{}, err
	}
	if lines > 0 {
		u.Journal, err = s.journal(ctx, u.Unit, lines)
		if err != nil {
			return Unit{}, err
		}
	}
	return u, nil
}

// journal is journalctl's last lines of a unit (argv, never a shell; the
// unit is the canonical id systemd gave).
func (s *Services) journal(ctx context.Context, unit string, lines int) ([]string, error) {
	bin := s.Journalctl
	if bin == "" {
		bin = "journalctl"
	}
	out, err := exec.CommandContext(ctx, bin, "--no-pager", "--quiet", "-o", "short-iso", "-n", strconv.Itoa(lines), "-u", unit).Output()
	if err != nil {
		return nil, fmt.Errorf("host: journalctl -u %s: %w", unit, err)
	}
	text := strings.TrimRight(string(out), "\n")
	if text == "" {
		return []string{}, nil
	}
	return strings.Split(text, "\n"), nil
}

// Control runs an action on a unit and waits for its job; enable and
// disable change the unit's install links and reload systemd.
func (s *Services) Control(ctx context.Context, unit, action string) (Unit, error) {
	conn, err := sddbus.NewSystemConnectionContext(ctx)
	if err != nil {
		return Unit{}, fmt.Errorf("host: reach systemd over D-Bus: %w", err)
	}
	defer conn.Close()
	timeout := s.JobTimeout
	if timeout <= 0 {
		timeout = 90 * time.Second
	}
	job := ""
	switch action {
	case "enable":
		if _, _, err := conn.EnableUnitFilesContext(ctx, []string{unit}, false, false); err != nil {
			return Unit{}, fmt.Errorf("host: enable %s: %w", unit, err)
		}
		if err := conn.ReloadContext(ctx); err != nil {
			return Unit{}, fmt.Errorf("host: reload systemd after enabling %s: %w", unit, err)
		}
	case "disable":
		if _, err := conn.DisableUnitFilesContext(ctx, []string{unit}, false); err != nil {
			return Unit{}, fmt.Errorf("host: disable %s: %w", unit, err)
		}
		if err := conn.ReloadContext(ctx); err != nil {
			return Unit{}, fmt.Errorf("host: reload systemd after disabling %s: %w", unit, err)
		}
	default:
		start := map[string]func(context.Context, string, string, chan<- string) (int, error){
			"start": conn.StartUnitContext, "stop": conn.StopUnitContext, "restart": conn.RestartUnitContext, "reload": conn.ReloadUnitContext,
		}[action]
		if start == nil {
			return Unit{}, &WireError{Code: "bad_request", Field: "action", Message: fmt.Sprintf("action %q: must be one of %s", action, strings.Join(ServiceActions, ", "))}
		}
		done := make(chan string, 1)
		if _, err := start(ctx, unit, "replace", done); err != nil {
			return Unit{}, fmt.Errorf("host: %s %s: %w", action, unit, err)
		}
		select {
		case job = <-done:
		case <-time.After(timeout):
			return Unit{}, fmt.Errorf("host: %s %s: the job did not finish within %s (it goes on in systemd)", action, unit, timeout)
		case <-ctx.Done():
			return Unit{}, fmt.Errorf("host: %s %s: %w (the job goes on in systemd)", action, unit, ctx.Err())
		}
	}
	u, err := s.unit(ctx, conn, unit)
	if err != nil {
		return Unit{}, err
	}
	u.Job = job
	if job != "" && job != "done" {
		return u, fmt.Errorf("host: %s %s: the job ended %s (ActiveState %s, SubState %s)", action, unit, job, u.ActiveState, u.SubState)
	}
	return u, nil
}

var errNoServices = errors.New("service operations are not configured in this helper")
