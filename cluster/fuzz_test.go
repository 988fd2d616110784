package cluster

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// FuzzCheck: whatever pmxcfs holds (a damaged or hostile cluster.json,
// key file or policy index), what check keeps passes every check a node
// applies before mirroring it, and a file that fails keeps its last good
// content.
func FuzzCheck(f *testing.F) {
	dir := f.TempDir()
	ks, err := keys.Open(dir, keys.Options{Params: fastParams, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	k, err := ks.Create(context.Background(), keys.CreateRequest{Name: "alice", Binding: keys.Binding{Profile: "operator"}})
	if err != nil {
		f.Fatal(err)
	}
	keyFile, err := encodeKey(k.Record)
	if err != nil {
		f.Fatal(err)
	}
	// A draft's files, fixed; the fuzzed index may name them or not.
	digest := policy.Digest([]byte(opsPolicy))
	draft := map[string][]byte{
		policiesDir + "/drafts/ops/" + digest + ".rego":      []byte(opsPolicy),
		policiesDir + "/drafts/ops/" + digest + "_test.rego": []byte(opsTests),
	}
	index := []byte(`{"version":1,"policies":{},"drafts":{"ops":[{"digest":"` + digest + `","created":"2026-05-01T12:00:00Z","tests":1}]}}`)
	gen := []byte(`{"format":1,"generation":7,"changed":"2026-05-01T12:00:00Z","node":"pve1"}`)
	f.Add(gen, k.Record.ID+".json", keyFile, index)
	f.Add([]byte(`{"format":1,"generation":-1}`), "x.json", []byte(`{"version":1,"keys":[]}`), []byte(`{"version":1,"policies":{},"drafts":{"../x":[]}}`))
	f.Add([]byte("{"), k.Record.ID+".json", []byte(`{"version":1,"keys":[`), []byte(`{"version":1,"policies":{"ops":{"id":"ops","active":1,"versions":[]}}}`))

	good := check(gen, map[string][]byte{keysDir + "/" + k.Record.ID + ".json": keyFile}, nil, nil)
	if len(good.Problems) != 0 {
		f.Fatalf("the seed state has problems: %v", good.Problems)
	}
	if st := check(gen, maps.Clone(draft), nil, nil); len(st.Problems) != 0 {
		f.Fatalf("the draft's files alone have problems: %v", st.Problems)
	}
	f.Fuzz(func(t *testing.T, gen []byte, name string, key, index []byte) {
		files := map[string][]byte{keysDir + "/" + name: key, policiesDir + "/" + policy.IndexFile: index}
		maps.Copy(files, draft)
		for _, last := range []*state{nil, good} {
			st := check(gen, files, nil, last)
			for p, b := range st.Files {
				switch {
				case strings.HasPrefix(p, keysDir+"/"):
					if _, err := checkKeyFile(strings.TrimPrefix(p, keysDir+"/"), b); err != nil {
						t.Fatalf("kept %s, which fails its check: %v", p, err)
					}
				case !strings.HasPrefix(p, policiesDir+"/"):
					t.Fatalf("kept %s, outside keys/ and policies/", p)
				}
			}
			if _, err := policy.CheckTree(st.policyFiles()); err != nil {
				t.Fatalf("kept policies that fail their checks: %v", err)
			}
			if _, err := st.records(); err != nil {
				t.Fatal(err)
			}
			if last != nil {
				p := keysDir + "/" + k.Record.ID + ".json"
				if _, ok := st.Files[p]; !ok && name == k.Record.ID+".json" {
					t.Fatalf("alice's file failed its check and lost its last good content")
				}
			}
		}
	})
}
