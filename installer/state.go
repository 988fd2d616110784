package installer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// StateFileName is the install state, in the state directory.
const StateFileName = "install.json"

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

// statePath is install.json in a state directory.
func statePath(stateDir string) string { return filepath.Join(stateDir, StateFileName) }

// loadState reads install.json; a missing file is (nil, nil).
func (s *System) loadState(stateDir string) (*State, error) {
	data, err := s.readFile(statePath(stateDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("install state: %w", err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("install state %s is not valid JSON (%v): move it away and re-run `proxmox-mcp install`", statePath(stateDir), err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("install state %s has version %d; this build reads version %d", statePath(stateDir), st.Version, stateVersion)
	}
	return &st, nil
}

// saveState writes install.json, root-only (0600): it is the installer's,
// not the daemon's.
func (s *System) saveState(stateDir string, st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("install state: %w", err)
	}
	if _, err := s.writeFile(statePath(stateDir), append(data, '\n'), 0o600, rootOwner); err != nil {
		return fmt.Errorf("install state: %w", err)
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
