package installer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/systemd"
)

// The install state is the installer's, not the daemon's: it lists what
// uninstall --purge removes as root, so it lives where only root can write
// (InstallStateDir, root 0700), never in the state directory, which the
// service user owns and could rename a forged file into.
const (
	// InstallStateDir holds the install state.
	InstallStateDir = "/var/lib/proxmox-mcp-install"
	// StateFileName is the install state's file name.
	StateFileName = "install.json"
	// InstallStateFile is the install state.
	InstallStateFile = InstallStateDir + "/" + StateFileName
)

// State is what install.json records: what was installed, which steps
// are done, which failed, and what install created (so that uninstall
// removes that and nothing else). It holds no secret.
type State struct {
	Version int `json:"version"`
	// Mode is the exposure mode of the last run.
	Mode Mode `json:"mode"`
	// Binary is the proxmox-mcp the units run.
	Binary string `json:"binary"`
	// ConfigFile is the configuration the units name.
	ConfigFile string `json:"config_file"`
	// InstalledBy is the version of proxmox-mcp that last ran install.
	InstalledBy string `json:"installed_by"`
	// Started and Completed are the last run's start and, when it ended
	// well, its end; FirstCompleted is the first install that ended well
	// (later runs are upgrades).
	Started        time.Time `json:"started"`
	Completed      time.Time `json:"completed,omitzero"`
	FirstCompleted time.Time `json:"first_completed,omitzero"`
	// Steps are the steps of the last run that are done, in order.
	Steps []string `json:"steps"`
	// Failed is the step of the last run that failed, and why.
	Failed *Failure `json:"failed,omitempty"`
	// Created is what install created (and uninstall may remove).
	Created Created `json:"created"`
	// InitialKey is the first root key's id, once its file is written.
	InitialKey string `json:"initial_key,omitempty"`
	// Uninstalled is set by uninstall (without --purge).
	Uninstalled time.Time `json:"uninstalled,omitzero"`
}

// Failure is a step that failed.
type Failure struct {
	Step  string    `json:"step"`
	Error string    `json:"error"`
	At    time.Time `json:"at"`
}

// Created lists what install made, as opposed to what it found.
type Created struct {
	// Binary is the copy of proxmox-mcp install put in place, if any.
	Binary string `json:"binary,omitempty"`
	// User and Group are the system user and group, when install created
	// them.
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
	// Units are the unit and sysusers files install wrote.
	Units []string `json:"units,omitempty"`
	// PVEUser and PVERole are the PVE user and role install created.
	PVEUser string `json:"pve_user,omitempty"`
	PVERole string `json:"pve_role,omitempty"`
	// PVETokens are the tiers whose tokens install created.
	PVETokens []string `json:"pve_tokens,omitempty"`
	// Dirs are the directories install made, and Files the files it
	// made in directories it did not.
	Dirs  []string `json:"dirs,omitempty"`
	Files []string `json:"files,omitempty"`
}

const stateVersion = 1

// legacyStatePath is where installs before this one kept install.json: in
// the state directory.
func legacyStatePath(stateDir string) string { return filepath.Join(stateDir, StateFileName) }

// loadState reads the install state; a missing one is (nil, nil). When
// InstallStateFile is missing, an install.json an older install left in
// the state directory is read instead, with legacy set: see
// loadLegacyState.
func (s *System) loadState(stateDir string) (st *State, legacy bool, err error) {
	data, err := s.readFile(InstallStateFile)
	switch {
	case err == nil:
		st, err := decodeState(InstallStateFile, data)
		return st, false, err
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, fmt.Errorf("install state: %w", err)
	}
	st, err = s.loadLegacyState(stateDir)
	return st, st != nil, err
}

func decodeState(path string, data []byte) (*State, error) {
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("install state %s is not valid JSON (%v): move it away and re-run `proxmox-mcp install`", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("install state %s has version %d; this build reads version %d", path, st.Version, stateVersion)
	}
	return &st, nil
}

// loadLegacyState reads the install.json an older install kept in the
// state directory. The service user can write that directory, so the
// file is read without following a link, must be a regular file with one
// link, owned by root and writable by root alone (as install wrote it),
// and what it says is then only taken where install could have written
// it (see State.sanitize). A missing file is (nil, nil).
func (s *System) loadLegacyState(stateDir string) (*State, error) {
	path := legacyStatePath(stateDir)
	d, err := atomicfile.OpenDir(s.path(stateDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("install state %s: %w", path, err)
	}
	defer d.Close()
	f, err := d.Open(StateFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("install state %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("install state %s: %w", path, err)
	}
	uid, gid, err := s.Owners.Owner(fi)
	if err != nil {
		return nil, fmt.Errorf("install state %s: %w", path, err)
	}
	if uid != 0 || fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("install state %s is %d:%d %04o, not root's alone as install writes it: the daemon's user may have replaced it, so it is not used; "+
			"move it away and re-run `proxmox-mcp install`", path, uid, gid, fi.Mode().Perm())
	}
	data, err := readLimited(f, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("install state %s: %w", path, err)
	}
	return decodeState(path, data)
}

func readLimited(f *os.File, limit int64) ([]byte, error) {
	buf := make([]byte, limit+1)
	n, err := f.ReadAt(buf, 0)
	if n > int(limit) {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// backupName matches the configuration backups install makes.
var backupName = regexp.MustCompile(`^` + regexp.QuoteMeta(ConfigFile) + `\.bak-[0-9]{8}T[0-9]{6}Z$`)

// knownUnits are the files install writes in systemd's directories.
func knownUnits() []string {
	return []string{
		filepath.Join(systemd.UnitDir, systemd.ServiceUnit),
		filepath.Join(systemd.UnitDir, systemd.RenewService),
		filepath.Join(systemd.UnitDir, systemd.RenewTimer),
		filepath.Join(systemd.UnitDir, systemd.HelperSocket),
		filepath.Join(systemd.UnitDir, systemd.HelperService),
		filepath.Join(systemd.UnitDir, systemd.BreakglassPath),
		filepath.Join(systemd.UnitDir, systemd.BreakglassService),
		sysusersPath,
	}
}

// sanitize drops from an install state everything install could not have
// written: a path that is not one install makes, a user, group, PVE user,
// role or token tier that is not install's own, a step it does not have.
// What uninstall removes as root comes from this record, so a forged one
// (`/etc/shadow` among the files, `root` as the user) must name nothing
// else. The failure record of a legacy state, free text the daemon's user
// could have written, is dropped too. It returns what it dropped, for the
// operator.
func (st *State) sanitize(p *plan) []string {
	var dropped []string
	drop := func(field, v string) { dropped = append(dropped, fmt.Sprintf("%s %q", field, v)) }
	keepIf := func(field string, v *string, ok bool) {
		if *v != "" && !ok {
			drop(field, *v)
			*v = ""
		}
	}
	filter := func(field string, list []string, ok func(string) bool) []string {
		var out []string
		for _, v := range list {
			if ok(v) {
				out = append(out, v)
			} else {
				drop(field, v)
			}
		}
		return out
	}
	if st.Mode != "" {
		if _, err := ParseMode(string(st.Mode)); err != nil {
			drop("mode", string(st.Mode))
			st.Mode = ""
		}
	}
	keepIf("binary", &st.Binary, st.Binary == PackagedBinary || st.Binary == LocalBinary)
	keepIf("config_file", &st.ConfigFile, st.ConfigFile == p.configFile)
	keepIf("initial_key", &st.InitialKey, keys.IsID(st.InitialKey))
	st.Steps = filter("steps", st.Steps, func(v string) bool { return slices.Contains(StepNames(), v) })
	if st.Failed != nil && (p.legacy || !slices.Contains(StepNames(), st.Failed.Step)) {
		drop("failed", st.Failed.Step)
		st.Failed = nil
	}
	c := &st.Created
	keepIf("created.binary", &c.Binary, c.Binary == LocalBinary)
	keepIf("created.user", &c.User, c.User == ServiceUser)
	keepIf("created.group", &c.Group, c.Group == ServiceUser)
	keepIf("created.pve_user", &c.PVEUser, c.PVEUser == PVEUser)
	keepIf("created.pve_role", &c.PVERole, c.PVERole == OperatorRole)
	c.PVETokens = filter("created.pve_tokens", c.PVETokens, func(v string) bool {
		return slices.ContainsFunc(TierRoles(), func(tr TierRole) bool { return tr.Tier == v })
	})
	c.Units = filter("created.units", c.Units, func(v string) bool { return slices.Contains(knownUnits(), v) })
	c.Dirs = filter("created.dirs", c.Dirs, func(v string) bool {
		return slices.Contains([]string{ConfigDir, TokensDir, p.stateDir, p.pkiDir, host.HelperDir(p.stateDir), host.BreakglassDir(p.stateDir)}, v) && p.owns(v) == nil
	})
	c.Files = filter("created.files", c.Files, func(v string) bool {
		return slices.Contains([]string{PVECAFile, AuthKeyFile, InitialKeyFile, signingKeyPath(p.stateDir)}, v) || backupName.MatchString(v)
	})
	return dropped
}

// ownedPrefixes are the directories install owns: nothing outside them
// (and the few files of ownedFiles) is ever removed.
func (p *plan) ownedPrefixes() []string {
	var out []string
	for _, d := range []string{ConfigDir, p.pkiDir, p.stateDir, authority.DirFor(p.stateDir), host.HelperDir(p.stateDir), InstallStateDir} {
		if d != "" && d != "/" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// ownedFiles are the files install makes outside its directories.
func ownedFiles() []string { return append(knownUnits(), LocalBinary, InitialKeyFile) }

// owns says whether install may remove p: one of its own files, or a path
// in (or equal to) one of its directories. Whatever the install state
// says, nothing else is removed.
func (p *plan) owns(path string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return fmt.Errorf("refusing to remove %q: not an absolute, clean path", path)
	}
	if slices.Contains(ownedFiles(), path) {
		return nil
	}
	for _, d := range p.ownedPrefixes() {
		if path == d || strings.HasPrefix(path, d+"/") {
			return nil
		}
	}
	return fmt.Errorf("refusing to remove %s: install makes nothing there (it removes only its files %s and what is in %s)",
		path, strings.Join(ownedFiles(), ", "), strings.Join(p.ownedPrefixes(), ", "))
}

// saveState writes the install state, root-only (0600), in its root-only
// directory (0700): it is the installer's, not the daemon's.
func (s *System) saveState(st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("install state: %w", err)
	}
	if _, err := s.ensureDir(InstallStateDir, 0o700, rootOwner); err != nil {
		return fmt.Errorf("install state: %w", err)
	}
	if _, err := s.writeFile(InstallStateFile, append(data, '\n'), 0o600, rootOwner); err != nil {
		return fmt.Errorf("install state: %w", err)
	}
	return nil
}

// removeLegacyState removes the install.json an older install left in the
// state directory, once its content is in InstallStateFile.
func (s *System) removeLegacyState(stateDir string) error {
	d, err := atomicfile.OpenDir(s.path(stateDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove the old install state: %w", err)
	}
	defer d.Close()
	if _, err := d.Remove(StateFileName); err != nil {
		return fmt.Errorf("remove the old install state: %w", err)
	}
	return nil
}

// addUnique appends v to a list unless it is there.
func addUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

// removeValue drops v from a list.
func removeValue(list []string, v string) []string {
	out := list[:0]
	for _, x := range list {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

// stateFile is where the install state was read from.
func (p *plan) stateFile() string {
	if p.legacy {
		return legacyStatePath(p.stateDir)
	}
	return InstallStateFile
}
