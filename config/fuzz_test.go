package config

import (
	"encoding/json"
	"testing"
)

// FuzzParse: any input either is refused with an error or yields a
// configuration that passes its own checks again when written back out as
// JSON and read once more, unchanged. Parse never panics.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"version": 1}`,
		`// comment
{
  "version": 1,
  "state_dir": "/var/lib/proxmox-mcp",
  "tools": {"mode": "search", "max_result_bytes": 4096,},
  "read_only": true,
  "pve": {"url": "https://127.0.0.1:8006/api2/json", "fingerprint": "AA:BB",
          "tokens": {"operator": {"id": "mcp@pve!operator", "secret_file": "/etc/proxmox-mcp/op"}}},
  "listen": {"loopback": {"address": "[::1]:8765", "allowed_origins": ["http://localhost:6274"]}},
  "protected": {"paths": ["/srv/model"], "volumes": ["local-lvm:vm-900-disk-0"], "devices": ["/dev/sdb"]},
  "log": {"level": "debug"},
}`,
		`{"version": 2}`,
		`{"version": 1, "version": 1}`,
		`{"version": 1} trailing`,
		`[1]`,
		`{"version": 1, "listen": {"loopback": {"address": "0.0.0.0:80"}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz", data)
		if err != nil {
			if c != nil {
				t.Fatal("a configuration was returned with an error")
			}
			return
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := Parse("again", out)
		if err != nil {
			t.Fatalf("an accepted configuration is refused once written out: %v\n%s", err, out)
		}
		// Compared as JSON: an empty list and an absent one are the same
		// configuration.
		if out2, _ := json.Marshal(again); string(out2) != string(out) {
			t.Fatalf("round trip changed the configuration:\n%s\n%s", out, out2)
		}
	})
}
