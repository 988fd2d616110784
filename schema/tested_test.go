package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// Each schema TestedWith names is the fixture the tests read: its bytes
// hash as listed and it has the endpoints listed.
func TestTestedWith(t *testing.T) {
	for _, ts := range TestedWith() {
		rel := "pve-" + ts.Release + "/apidoc.js"
		data := fixture(t, rel)
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != ts.SHA256 {
			t.Errorf("%s: sha256 %s, listed %s", rel, got, ts.SHA256)
		}
		if got := fixtureRegistry(t, rel).Methods(); got != ts.Endpoints {
			t.Errorf("%s: %d endpoints, listed %d", rel, got, ts.Endpoints)
		}
	}
}
