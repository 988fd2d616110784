package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// A file bigger than one request, written in chunks: staged beside the
// target, in order, put in place by the last chunk once its SHA-256 holds,
// with the conditions of a whole write; the same upload resumes; a chunk
// out of order, a wrong hash, a staging file not the helper's, and
// another key's chunks are refused.
func TestChunkedWrite(t *testing.T) {
	needRoot(t)
	b := newBed(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
	target := filepath.Join(b.root, "big.bin")
	req := func(off, n int) WriteRequest {
		return WriteRequest{Path: target, Data: data[off : off+n], SHA256: hexSum(data), Size: int64(len(data)), Offset: int64(off)}
	}
	id := UploadID("alice", req(0, 1))
	staging := filepath.Join(b.root, stagingPrefix+id)
	const chunk = 1 << 20
	res, err := b.tree.WriteChunk(req(0, chunk), id)
	must(t, err)
	if st, ok := res.(Staged); !ok || st.Staged != chunk || st.Size != int64(len(data)) {
		t.Fatalf("the first chunk: %#v", res)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatal("the target exists before the last chunk")
	}
	var st unix.Stat_t
	must(t, unix.Lstat(staging, &st))
	if st.Uid != 0 || st.Mode&0o777 != 0o600 {
		t.Errorf("the staging file is %d %o", st.Uid, st.Mode&0o777)
	}
	// Out of order: a gap.
	if _, err := b.tree.WriteChunk(req(2*chunk, chunk), id); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "next chunk is at offset 1048576") {
		t.Errorf("a chunk past a gap: %v", err)
	}
	// The second chunk, and again (a retry after a lost answer is taken).
	for range 2 {
		if _, err := b.tree.WriteChunk(req(chunk, chunk), id); err != nil {
			t.Fatal(err)
		}
	}
	// The upload of another key does not see this one.
	if _, err := b.tree.WriteChunk(req(2*chunk, chunk), UploadID("mallory", req(0, 1))); !errors.Is(err, ErrConflict) {
		t.Errorf("another key's last chunk: %v", err)
	}
	res, err = b.tree.WriteChunk(req(2*chunk, chunk), id)
	must(t, err)
	w, ok := res.(Written)
	if !ok || !w.Created || w.Size != int64(len(data)) || w.SHA256 != hexSum(data) {
		t.Fatalf("the last chunk: %#v", res)
	}
	if got, _ := os.ReadFile(target); !bytes.Equal(got, data) {
		t.Error("the file is not the data")
	}
	if _, err := os.Stat(staging); !os.IsNotExist(err) {
		t.Error("the staging file stays after the last chunk")
	}

	// A wrong hash voids the upload, and the target keeps its content.
	bad := func(off, n int) WriteRequest {
		r := req(off, n)
		r.SHA256 = hexSum([]byte("something else"))
		r.Data = bytes.ToUpper(r.Data)
		return r
	}
	bid := UploadID("alice", bad(0, 1))
	_, err = b.tree.WriteChunk(bad(0, len(data)/2), bid)
	must(t, err)
	if _, err := b.tree.WriteChunk(bad(len(data)/2, len(data)/2), bid); err == nil || !strings.Contains(err.Error(), "the upload was removed") {
		t.Errorf("a wrong hash: %v", err)
	}
	if got, _ := os.ReadFile(target); !bytes.Equal(got, data) {
		t.Error("a voided upload changed the file")
	}
	// A staging file that is not the helper's is not used.
	planted := filepath.Join(b.root, stagingPrefix+UploadID("bob", req(0, 1)))
	must(t, os.Symlink("/etc/passwd", planted))
	if _, err := b.tree.WriteChunk(req(chunk, chunk), UploadID("bob", req(0, 1))); !errors.Is(err, ErrRefused) && !strings.Contains(err.Error(), "staging") {
		t.Errorf("a planted link as the staging file: %v", err)
	}
	// Conditions hold at the last chunk: create new on an existing file.
	cond := func(off, n int) WriteRequest {
		r := req(off, n)
		r.Create = "new"
		return r
	}
	cid := UploadID("alice", cond(0, 1))
	for off := 0; off < len(data)-chunk; off += chunk {
		_, err := b.tree.WriteChunk(cond(off, chunk), cid)
		must(t, err)
	}
	if _, err := b.tree.WriteChunk(cond(len(data)-chunk, chunk), cid); !errors.Is(err, ErrConflict) {
		t.Errorf("create new over an existing file: %v", err)
	}
	for _, tc := range []struct {
		r    WriteRequest
		says string
	}{
		{WriteRequest{Path: target, Data: []byte("x"), SHA256: hexSum(data), Size: 0}, "size"},
		{WriteRequest{Path: target, Data: []byte("xx"), SHA256: hexSum(data), Size: 1}, "ends past size"},
		{WriteRequest{Path: target, Data: []byte("x"), SHA256: hexSum(data), Size: 5, Offset: 5}, "offset"},
		{WriteRequest{Path: target, Data: []byte("x"), SHA256: "nope", Size: 5}, "sha256"},
		{WriteRequest{Path: filepath.Join(b.root, "sub", "n.key"), Data: []byte("x"), SHA256: hexSum(data), Size: 5}, "refused"},
	} {
		if _, err := b.tree.WriteChunk(tc.r, "x"); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("WriteChunk(%+v): %v; want it to say %q", tc.r, err, tc.says)
		}
	}
}
