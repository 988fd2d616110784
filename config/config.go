// Package config reads the daemon's configuration file: HuJSON (JSON with
// comments and trailing commas), versioned, and strict. Unknown fields, a
// missing or unsupported version, duplicate fields and anything after the
// top-level object are errors that name the field and the rule; a file that
// fails any check is never partly applied.
//
// The package imports no network code.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/tailscale/hujson"
)

// Defaults follow the FHS.
const (
	// DefaultDir holds the configuration.
	DefaultDir = "/etc/proxmox-mcp"
	// DefaultFile is the configuration file read when no --config is given.
	DefaultFile = DefaultDir + "/config.hujson"
	// DefaultStateDir holds keys, policies and caches.
	DefaultStateDir = "/var/lib/proxmox-mcp"
	// Version is the configuration format this build reads.
	Version = 1
	// maxSize bounds the file read.
	maxSize = 1 << 20
)

// Config is the configuration file. Later issues extend it; every field is
// optional except version.
type Config struct {
	// Version must be 1.
	Version int `json:"version"`
	// StateDir holds keys.json, the policy store and caches; an absolute path.
	StateDir string `json:"state_dir,omitempty"`
}

// Default returns the configuration used when no file exists.
func Default() *Config {
	return &Config{Version: Version, StateDir: DefaultStateDir}
}

// Parse reads a configuration from HuJSON text. name is used in errors.
func Parse(name string, data []byte) (*Config, error) {
	if len(data) > maxSize {
		return nil, fmt.Errorf("config %s: file is larger than %d bytes", name, maxSize)
	}
	std, err := hujson.Standardize(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: not valid HuJSON: %w", name, err)
	}
	trimmed := bytes.TrimSpace(std)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("config %s: the top level must be an object", name)
	}
	// Presence of version is checked on a raw view: an absent version and
	// version 0 must both be refused, with different messages.
	var probe map[string]jsontext.Value
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, describe(err))
	}
	if _, ok := probe["version"]; !ok {
		return nil, fmt.Errorf("config %s: field \"version\" is required (this build reads version %d)", name, Version)
	}
	var c Config
	if err := json.Unmarshal(trimmed, &c, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, describe(err))
	}
	if c.Version != Version {
		return nil, fmt.Errorf("config %s: field \"version\": %d is not supported (this build reads version %d)", name, c.Version, Version)
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	} else if err := checkDir(c.StateDir); err != nil {
		return nil, fmt.Errorf("config %s: field \"state_dir\": %w", name, err)
	}
	return &c, nil
}

// describe turns a JSON decoding error into one that names the field.
func describe(err error) error {
	var se *json.SemanticError
	if errors.As(err, &se) {
		if se.JSONPointer != "" {
			field := strings.TrimPrefix(string(se.JSONPointer), "/")
			if errors.Is(se.Err, json.ErrUnknownName) {
				return fmt.Errorf("field %q is not known (the config format is strict)", field)
			}
			if se.JSONKind != 0 && se.GoType != nil {
				return fmt.Errorf("field %q: JSON %s cannot be a %s", field, se.JSONKind, se.GoType)
			}
			return fmt.Errorf("field %q: %w", field, err)
		}
	}
	return err
}

// checkDir requires an absolute, clean path.
func checkDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%q must be an absolute path", dir)
	}
	if filepath.Clean(dir) != dir {
		return fmt.Errorf("%q must be a clean path (%q)", dir, filepath.Clean(dir))
	}
	return nil
}

// Load reads the configuration file at path. When path is empty the default
// file is read if it exists; otherwise Default is returned. A file named
// explicitly must exist.
func Load(path string) (*Config, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultFile
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return Default(), nil
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}

// Resolve loads the configuration and applies a --state-dir override.
func Resolve(configPath, stateDir string) (*Config, error) {
	c, err := Load(configPath)
	if err != nil {
		return nil, err
	}
	if stateDir != "" {
		abs, err := filepath.Abs(stateDir)
		if err != nil {
			return nil, fmt.Errorf("--state-dir %q: %w", stateDir, err)
		}
		c.StateDir = abs
	}
	return c, nil
}
