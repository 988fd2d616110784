package host

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func frame(body string) []byte {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	return append(hdr[:], body...)
}

const goodRequest = `{"v":1,"id":"call-1","key":"pmcp_abc_def","op":"file.read","args":{"path":"/var/log/syslog"}}`

func TestDecodeRequest(t *testing.T) {
	req, err := DecodeRequest([]byte(goodRequest))
	if err != nil || req.Op != "file.read" || req.Key != "pmcp_abc_def" || string(req.Args) != `{"path":"/var/log/syslog"}` {
		t.Fatalf("DecodeRequest(good) = %+v, %v", req, err)
	}
	for _, tc := range []struct{ name, body, field, says string }{
		{"not JSON", `{"v":1`, "", "not one JSON object"},
		{"unknown field", `{"v":1,"id":"a","key":"k","op":"file.read","args":{},"decision":"allow"}`, "", `unknown field "decision"`},
		{"two values", goodRequest + `{}`, "", "data after"},
		{"old version", strings.Replace(goodRequest, `"v":1`, `"v":0`, 1), "v", "different releases"},
		{"no key", strings.Replace(goodRequest, `"pmcp_abc_def"`, `""`, 1), "key", "verifies every call itself"},
		{"bad id", strings.Replace(goodRequest, `"call-1"`, `"a b"`, 1), "id", "letters, digits"},
		{"bad op", strings.Replace(goodRequest, `"file.read"`, `"../x"`, 1), "op", "name an operation"},
		{"args not an object", strings.Replace(goodRequest, `{"path":"/var/log/syslog"}`, `[1]`, 1), "args", "JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tc.body))
			var we *WireError
			if !errors.As(err, &we) || we.Code != "bad_request" || we.Field != tc.field || !strings.Contains(we.Message, tc.says) {
				t.Fatalf("DecodeRequest = %v; want bad_request on field %q saying %q", err, tc.field, tc.says)
			}
		})
	}
}

func TestReadFrameLimits(t *testing.T) {
	if body, err := ReadFrame(bytes.NewReader(frame(goodRequest)), MaxFrame); err != nil || string(body) != goodRequest {
		t.Fatalf("ReadFrame = %q, %v", body, err)
	}
	// A length over the limit is refused before anything is allocated.
	var huge [4]byte
	binary.BigEndian.PutUint32(huge[:], 1<<31)
	if _, err := ReadFrame(bytes.NewReader(huge[:]), MaxFrame); err == nil || !strings.Contains(err.Error(), "must be between 1 and") {
		t.Errorf("a 2 GiB frame: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(frame("")), MaxFrame); err == nil {
		t.Error("an empty frame was accepted")
	}
	if _, err := ReadFrame(bytes.NewReader(frame(goodRequest)[:10]), MaxFrame); err == nil {
		t.Error("a cut frame was accepted")
	}
}

func TestPeerOf(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := net.Dial("unix", sock)
		if err == nil {
			defer c.Close()
			WriteFrame(c, map[string]int{"v": 1}) //nolint:errcheck // the test reads it
		}
	}()
	c, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := PeerOf(c)
	if err != nil {
		t.Fatal(err)
	}
	if p.UID != os.Getuid() || p.GID != os.Getgid() || p.PID != os.Getpid() {
		t.Errorf("peer %+v; want this process (%d, uid %d)", p, os.Getpid(), os.Getuid())
	}
}

// Whatever bytes arrive, the decoder answers with a request whose
// envelope holds, or with a bad_request error; it never panics.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(goodRequest))
	f.Add([]byte(`{"v":1,"id":"x","key":"k","op":"a.b","args":{}} `))
	f.Add([]byte(`{"v":1,"id":"x","key":"k","op":"a.b","args":{},"args":[]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"v":1,"id":"x","key":"k","op":"breakglass.request","args":{"operation":{"kind":"delete_file","path":"/mnt/model-repo/a"}}}`))
	f.Add([]byte(`{"v":1,"id":"x","key":"k","op":"breakglass.approve","args":{"id":"bg-0123456789abcdef","digest":"00"}}`))
	f.Add([]byte(`{"v":1,"id":"x","key":"k","op":"breakglass.stage","args":{"sha256":"00","size":1,"offset":0,"content":"QQ=="}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(body)
		if err != nil {
			var we *WireError
			if !errors.As(err, &we) || we.Code != "bad_request" {
				t.Fatalf("error %v is not a bad_request", err)
			}
			return
		}
		if req.V != WireVersion || req.Key == "" || !opPattern.MatchString(req.Op) || !idPattern.MatchString(req.ID) || len(req.Args) == 0 || req.Args[0] != '{' {
			t.Fatalf("accepted a request whose envelope does not hold: %+v", req)
		}
		// The operation's own decoding refuses with a bad_request too.
		if _, err := parseOp(req.Op, req.Args); err != nil {
			if we := asWire(err); we.Code != "bad_request" {
				t.Fatalf("args of %s: error %v is not a bad_request", req.Op, err)
			}
		}
	})
}

// A response with a result encodes as json.Marshal would, the result
// spliced in as it is.
func TestEncodeResponse(t *testing.T) {
	for _, r := range []Response{
		{ID: "a", OK: true, Result: []byte(`{"path":"/var/log/x","data":"é\n"}`)},
		{ID: "b", Error: &WireError{Code: "denied", Message: "no"}},
		{ID: "c", OK: true},
	} {
		got, err := encode(r)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(r)
		if string(got) != string(want) {
			t.Errorf("encode = %s\nwant %s", got, want)
		}
		var back Response
		if err := DecodeStrict(got, &back); err != nil || back.ID != r.ID || string(back.Result) != string(r.Result) {
			t.Errorf("decoded back: %+v, %v", back, err)
		}
	}
}
