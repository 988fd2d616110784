package schema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the apidoc.js parser: it must return
// a registry or an error, never panic, and a registry it returns must be
// internally consistent. Seeds: the real schemas' smaller subtrees, and
// small edge cases. (The whole files, 3.5 and 3.9 MB, made each
// execution take seconds once the fuzzer kept one valid, and the smoke
// run end on "context deadline exceeded"; the full files are parsed by
// the golden and registry tests.)
func FuzzParse(f *testing.F) {
	// /storage is back: Parse was never slow on its mutations. The stalls
	// (13 executions counted in 8 s) were the fuzzer minimizing each new
	// interesting input of that size, up to -fuzzminimizetime (60 s by
	// default) for each, executions it does not count; with minimization
	// off, 5,000 executions with /storage take 3 s. make fuzz bounds the
	// minimization instead.
	f.Add(fixtureSubtrees(f, pve91, "/version", "/pools", "/storage"))
	f.Add(fixtureSubtrees(f, pve845, "/version", "/pools"))
	f.Add(miniSchema("nodes", "cluster"))
	f.Add([]byte(`const apiSchema = [{"path":"/a/{b}","text":"{b}","leaf":1,"info":{"GET":{"parameters":{"properties":{"b":{"type":"string","format":{"k":{"type":"integer","default_key":1}}}}}}}}];`))
	f.Add([]byte(`const apiSchema = [`))
	f.Add([]byte(`const apiSchema = []`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Inputs as large as the whole files (left in a fuzz cache by
		// earlier runs) would make each execution take seconds.
		if len(data) > maxFuzzSchema {
			return
		}
		r, err := Parse(data)
		if err != nil {
			if r != nil {
				t.Fatal("registry returned with an error")
			}
			return
		}
		if r.Methods() == 0 || r.Paths() == 0 {
			t.Fatalf("empty registry: %d paths, %d methods", r.Paths(), r.Methods())
		}
		for _, ep := range r.Endpoints() {
			if r.Lookup(ep.Method, ep.Path) != ep || r.Tool(ep.Tool) != ep {
				t.Fatalf("%s: lookups disagree", ep.Key())
			}
			if len(ep.Tool) > MaxToolNameLen || !toolNameChars.MatchString(ep.Tool) {
				t.Fatalf("%s: bad tool name %q", ep.Key(), ep.Tool)
			}
			_ = ep.InputSchema()
			_, _ = ep.Validate(map[string]any{"node": "pve1", "x": 1.0})
		}
	})
}

// FuzzPropertyString runs arbitrary text through the property-string
// checker of net[n] and scsi[n], the richest formats PVE has.
func FuzzPropertyString(f *testing.F) {
	r := fixtureRegistry(f, pve91)
	cfg := r.Lookup("PUT", "/nodes/{node}/qemu/{vmid}/config")
	net, scsi := cfg.Param("net[n]").Properties, cfg.Param("scsi[n]").Properties
	for _, s := range []string{
		"virtio,bridge=vmbr0", "model=e1000,macaddr=BC:24:11:00:00:01,tag=10,firewall=1",
		"local-lvm:vm-100-disk-0,size=32G,discard=on,iothread=1", ",,=,", "a=b=c", "virtio=BC:24:11:00:00:01",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, pf := range []*PropertyFormat{net, scsi} {
			if err := parsePropertyString(pf, s, "p"); err != nil && len(err.Errors) == 0 {
				t.Fatal("error without entries")
			}
		}
	})
}

// FuzzMatch resolves arbitrary concrete paths: a match must agree with
// the endpoint's template.
func FuzzMatch(f *testing.F) {
	r := fixtureRegistry(f, pve91)
	for _, s := range []string{"/nodes/pve1/qemu/100/status/start", "/version", "/", "//", "/nodes/%2F/qemu", "/cluster/firewall/groups/a/1"} {
		f.Add("POST", s)
		f.Add("GET", s)
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		ep, vars, err := r.Match(method, path)
		if err != nil {
			return
		}
		if len(vars) != len(ep.PathParams) {
			t.Fatalf("%s %s -> %s with vars %v", method, path, ep.Key(), vars)
		}
		if !strings.EqualFold(ep.Method, method) {
			t.Fatalf("%s matched %s", method, ep.Key())
		}
	})
}

// maxFuzzSchema bounds the inputs FuzzParse parses.
const maxFuzzSchema = 512 << 10

// fixtureSubtrees is a real apidoc.js cut down to the named top-level
// subtrees, in the file's own form.
func fixtureSubtrees(tb testing.TB, name string, paths ...string) []byte {
	tb.Helper()
	data := fixture(tb, name)
	const head = "const apiSchema = "
	i := bytes.Index(data, []byte(head))
	if i < 0 {
		tb.Fatalf("%s: no %q", name, head)
	}
	var top []json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(data[i+len(head):])).Decode(&top); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	var keep []json.RawMessage
	for _, t := range top {
		var n struct{ Path string }
		if json.Unmarshal(t, &n) == nil && strings.Contains(strings.Join(paths, " ")+" ", n.Path+" ") {
			keep = append(keep, t)
		}
	}
	if len(keep) != len(paths) {
		tb.Fatalf("%s: found %d of the subtrees %v", name, len(keep), paths)
	}
	out, err := json.Marshal(keep)
	if err != nil {
		tb.Fatal(err)
	}
	seed := append(append([]byte(head), out...), ";\n"...)
	if len(seed) > maxFuzzSchema {
		tb.Fatalf("%s: the seed of %v is %d bytes, over the fuzz bound %d", name, paths, len(seed), maxFuzzSchema)
	}
	return seed
}
