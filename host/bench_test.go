package host

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// benchSocket serves h's helper on a socket for the benchmark's life.
func benchSocket(b *testing.B, h *helperBed) string {
	sock := filepath.Join(h.dir, "bench.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.srv.Serve(ctx, l, 0); close(done) }() //nolint:errcheck // ended below
	b.Cleanup(func() { stop(); l.Close(); <-done })
	return sock
}

func benchCall(b *testing.B, sock string, req Request, wantOK bool) {
	resp, err := Call(context.Background(), sock, req, nil)
	if err != nil {
		b.Fatal(err)
	}
	if resp.OK != wantOK {
		b.Fatalf("answer %+v", resp.Error)
	}
}

// BenchmarkHelperRoundTrip is one request over the socket, answered and
// journaled (SQLite on disk, fsync): a stat the policy allows, and one it
// denies (refused before any file is touched, still journaled).
func BenchmarkHelperRoundTrip(b *testing.B) {
	h := newHelperBed(b)
	sock := benchSocket(b, h)
	stat, _ := json.Marshal(map[string]any{"path": h.root + "/syslog"})
	b.Run("allowed-stat", func(b *testing.B) {
		req := Request{ID: "bench", Key: h.admin, Op: "file.stat", Args: stat}
		benchCall(b, sock, req, true) // the key's verification is cached from here on
		b.ReportAllocs()
		for b.Loop() {
			benchCall(b, sock, req, true)
		}
	})
	b.Run("denied-stat", func(b *testing.B) {
		req := Request{ID: "bench", Key: h.readOnly, Op: "file.stat", Args: stat}
		benchCall(b, sock, req, false)
		b.ReportAllocs()
		for b.Loop() {
			benchCall(b, sock, req, false)
		}
	})
}

// BenchmarkHelperPagedRead reads a 64 MiB file in 1 MiB pages through the
// socket (the file hashed once for all pages); SetBytes makes the figure a
// throughput.
func BenchmarkHelperPagedRead(b *testing.B) {
	h := newHelperBed(b)
	sock := benchSocket(b, h)
	const size = 64 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	p := h.root + "/big.log"
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for off := 0; off < size; {
			args, _ := json.Marshal(map[string]any{"path": p, "offset": off, "length": MaxReadLength})
			resp, err := Call(context.Background(), sock, Request{ID: "bench", Key: h.admin, Op: "file.read", Args: args}, nil)
			if err != nil || !resp.OK {
				b.Fatalf("%v %+v", err, resp.Error)
			}
			var c Content
			if err := json.Unmarshal(resp.Result, &c); err != nil {
				b.Fatal(err)
			}
			off += c.Length
		}
	}
}
