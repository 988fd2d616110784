package schema

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

func TestParseRealSchemas(t *testing.T) {
	for _, tc := range []struct {
		file           string
		paths, methods int
		sha256         string
	}{
		{pve91, 432, 646, "4af79be30166209a4714b771f65e1e9540c5b738f414ff30c98454402e29d030"},
		{pve845, 400, 605, "bbe03a42c55b3f9ae77a5b5216c1a8554f4fffd0f4b266848f4af26be295946e"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r := fixtureRegistry(t, tc.file)
			if r.Paths() != tc.paths || r.Methods() != tc.methods {
				t.Errorf("got %d paths / %d methods, want %d / %d", r.Paths(), r.Methods(), tc.paths, tc.methods)
			}
			if r.SHA256() != tc.sha256 {
				t.Errorf("sha256 = %s, want %s", r.SHA256(), tc.sha256)
			}
		})
	}
}

// The derived listing in ../shared names every METHOD PATH of 9.1 in tree order.
func TestEndpointsMatchListing(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	var want []string
	sc := bufio.NewScanner(bytes.NewReader(fixture(t, "pve-9.1/paths-methods.txt")))
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			want = append(want, line)
		}
	}
	var got []string
	for _, ep := range r.Endpoints() {
		got = append(got, ep.Key())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("endpoint %d = %q, want %q", i, got[i], want[i])
			}
		}
		t.Fatalf("got %d endpoints, listing has %d", len(got), len(want))
	}
}
