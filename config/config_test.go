package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     *Config
		err      string
	}{
		{name: "minimal", in: `{"version": 1}`, want: &Config{Version: 1, StateDir: DefaultStateDir}},
		{name: "hujson comments and trailing comma", in: "// proxmox-mcp\n{\n  \"version\": 1, /* v1 */\n  \"state_dir\": \"/srv/pmcp\",\n}\n",
			want: &Config{Version: 1, StateDir: "/srv/pmcp"}},
		{name: "missing version", in: `{"state_dir": "/x"}`, err: `field "version" is required`},
		{name: "version zero", in: `{"version": 0}`, err: `field "version": 0 is not supported`},
		{name: "future version", in: `{"version": 2}`, err: `field "version": 2 is not supported (this build reads version 1)`},
		{name: "version string", in: `{"version": "1"}`, err: `field "version": JSON string cannot be a int`},
		{name: "unknown field", in: `{"version": 1, "statedir": "/x"}`, err: `field "statedir" is not known`},
		{name: "duplicate field", in: `{"version": 1, "version": 1}`, err: `duplicate`},
		{name: "relative state dir", in: `{"version": 1, "state_dir": "var/lib"}`, err: `field "state_dir": "var/lib" must be an absolute path`},
		{name: "unclean state dir", in: `{"version": 1, "state_dir": "/var/lib/../lib"}`, err: `must be a clean path`},
		{name: "trailing data", in: `{"version": 1} {"version": 1}`, err: `not valid HuJSON`},
		{name: "trailing garbage", in: `{"version": 1} x`, err: `not valid HuJSON`},
		{name: "array", in: `[1]`, err: `the top level must be an object`},
		{name: "empty", in: ``, err: `not valid HuJSON`},
		{name: "null", in: `null`, err: `the top level must be an object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("test.hujson", []byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse: err = %v, want it to contain %q", err, tt.err)
				}
				if !strings.HasPrefix(err.Error(), "config test.hujson: ") {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadAndResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.hujson")
	if err := os.WriteFile(file, []byte(`{"version": 1, "state_dir": "/srv/a"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(file, "")
	if err != nil || c.StateDir != "/srv/a" {
		t.Fatalf("Resolve(file) = %+v, %v", c, err)
	}
	c, err = Resolve(file, filepath.Join(dir, "state"))
	if err != nil || c.StateDir != filepath.Join(dir, "state") {
		t.Fatalf("Resolve(file, --state-dir) = %+v, %v; the flag must override the file", c, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.hujson")); err == nil {
		t.Fatal("Load of an explicitly named missing file succeeded")
	}
}

// Parse leaves the caller's bytes alone (HuJSON's Standardize rewrites
// comments and trailing commas in place).
func TestParseDoesNotChangeItsInput(t *testing.T) {
	in := []byte("// comment\n{\"version\": 1, /* here */ \"state_dir\": \"/var/lib/x\",}\n")
	before := string(in)
	if _, err := Parse("t", in); err != nil {
		t.Fatal(err)
	}
	if string(in) != before {
		t.Errorf("Parse changed its input:\n%q\nwas\n%q", in, before)
	}
}
