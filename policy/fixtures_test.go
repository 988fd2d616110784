package policy

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// The real apidoc.js files live beside the repository in ../shared (their
// licence keeps them out of it).
const sharedFixtures = "../../shared/fixtures"

const pve91 = "pve-9.1/apidoc.js"

var registryCache sync.Map // rel -> *schema.Registry

// fixtureRegistry parses a real apidoc.js once per test binary, skipping
// the test with a clear message when ../shared is absent.
func fixtureRegistry(tb testing.TB, rel string) *schema.Registry {
	tb.Helper()
	if v, ok := registryCache.Load(rel); ok {
		return v.(*schema.Registry)
	}
	path := filepath.Join(sharedFixtures, rel)
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		tb.Skipf("real PVE fixture %s is not here: ../shared/fixtures must sit beside the repository", path)
	}
	if err != nil {
		tb.Fatal(err)
	}
	r, err := schema.Parse(data)
	if err != nil {
		tb.Fatalf("schema.Parse(%s): %v", rel, err)
	}
	registryCache.Store(rel, r)
	return r
}
