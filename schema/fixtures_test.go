package schema

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The real apidoc.js files live beside the repository in ../shared (their
// licence keeps them out of it).
const sharedFixtures = "../../shared/fixtures"

var fixtureCache sync.Map // path -> []byte

// fixture reads a file under ../shared/fixtures, skipping the test with a
// clear message when ../shared is absent.
func fixture(tb testing.TB, rel string) []byte {
	tb.Helper()
	path := filepath.Join(sharedFixtures, rel)
	if v, ok := fixtureCache.Load(path); ok {
		return v.([]byte)
	}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		tb.Skipf("real PVE fixture %s is not here: ../shared/fixtures must sit beside the repository", path)
	}
	if err != nil {
		tb.Fatal(err)
	}
	fixtureCache.Store(path, data)
	return data
}

var registryCache sync.Map // rel -> *Registry

// fixtureRegistry parses a real apidoc.js once per test binary.
func fixtureRegistry(tb testing.TB, rel string) *Registry {
	tb.Helper()
	if v, ok := registryCache.Load(rel); ok {
		return v.(*Registry)
	}
	r, err := Parse(fixture(tb, rel))
	if err != nil {
		tb.Fatalf("Parse(%s): %v", rel, err)
	}
	registryCache.Store(rel, r)
	return r
}

const (
	pve91  = "pve-9.1/apidoc.js"
	pve845 = "pve-8.4.5/apidoc.js"
)
