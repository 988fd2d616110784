package host

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"time"

	"golang.org/x/sys/unix"
)

// The wire between the daemon (or the host CLI) and the helper: each
// message is one frame, a 4-byte big-endian length and that many bytes of
// JSON. The helper reads one request per connection and answers once.
const (
	// WireVersion is the protocol's version; a request of another is
	// refused.
	WireVersion = 1
	// MaxFrame bounds a frame: a whole write's content in base64 and its
	// envelope fit.
	MaxFrame = MaxWriteSize/3*4 + 64<<10
)

// Request is one operation a caller asks the helper for.
type Request struct {
	V int `json:"v"`
	// ID is the caller's id of the call (the daemon's call id), recorded
	// with the helper's own journal rows.
	ID string `json:"id"`
	// Key is the API key of the person or agent the call is made for:
	// the helper verifies it itself, against the key store only root
	// can write.
	Key string `json:"key"`
	// Source is where the daemon saw the call come from; recorded, never
	// trusted.
	Source string `json:"source,omitempty"`
	// Op names the operation; Args are its arguments, decoded strictly
	// by the operation.
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
	// Confirm is the token of an earlier answer of code confirm: the
	// caller confirms that exact operation (the helper issued the token
	// and checks it; a daemon cannot make one).
	Confirm string `json:"confirm,omitempty"`
}

// Response is the helper's answer. A command's answer may be preceded by
// progress frames: responses with Progress set and nothing else, while it
// runs.
type Response struct {
	ID       string          `json:"id"`
	OK       bool            `json:"ok"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    *WireError      `json:"error,omitempty"`
	Progress *ExecProgress   `json:"progress,omitempty"`
}

// WireError is a refusal or a failure, in words a person reads.
type WireError struct {
	// Code is what a caller branches on: bad_request, unauthenticated,
	// denied, refused, conflict, not_found, failed, and confirm (the
	// policy asks the caller to confirm: Token, until Expires, confirms
	// this exact operation once).
	Code    string    `json:"code"`
	Field   string    `json:"field,omitempty"`
	Message string    `json:"message"`
	Token   string    `json:"token,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
}

func (e *WireError) Error() string { return e.Code + ": " + e.Message }

var (
	idPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
	opPattern = regexp.MustCompile(`^[a-z]+(\.[a-z_]+)+$`)
)

// WriteFrame writes one message.
func WriteFrame(w io.Writer, v any) error {
	body, err := encode(v)
	if err != nil {
		return fmt.Errorf("host: encode a frame: %w", err)
	}
	if len(body) > MaxFrame {
		return fmt.Errorf("host: a frame of %d bytes is over the limit of %d", len(body), MaxFrame)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	if _, err := w.Write(hdr[:]); err != nil {
		return fmt.Errorf("host: write a frame: %w", err)
	}
	if _, err := w.Write(body); err != nil {
		return fmt.Errorf("host: write a frame: %w", err)
	}
	return nil
}

// encode is v's JSON. A response's result, already JSON the helper
// encoded, is spliced in rather than compacted again (a page of a file
// is a megabyte of it).
func encode(v any) ([]byte, error) {
	resp, ok := v.(Response)
	if !ok || len(resp.Result) == 0 {
		return json.Marshal(v)
	}
	result := resp.Result
	resp.Result = nil
	head, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	// head is {...} without a result: put ,"result":<result> before its }.
	out := make([]byte, 0, len(head)+len(result)+16)
	out = append(out, head[:len(head)-1]...)
	out = append(out, `,"result":`...)
	out = append(out, result...)
	return append(out, '}'), nil
}

// ReadFrame reads one frame's body, refusing one over max bytes before
// reading it.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("host: read a frame's length: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || int64(n) > int64(max) {
		return nil, fmt.Errorf("host: a frame of %d bytes: must be between 1 and %d", n, max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("host: read a frame of %d bytes: %w", n, err)
	}
	return body, nil
}

// DecodeStrict decodes exactly one JSON value into v: no unknown field,
// nothing after it.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}

// DecodeRequest decodes and checks a request's envelope. The arguments
// are left to the operation.
func DecodeRequest(body []byte) (Request, error) {
	var req Request
	if err := DecodeStrict(body, &req); err != nil {
		return Request{}, &WireError{Code: "bad_request", Message: "the request is not one JSON object of the helper's protocol: " + err.Error()}
	}
	bad := func(field, rule string) error {
		return &WireError{Code: "bad_request", Field: field, Message: field + ": " + rule}
	}
	switch {
	case req.V != WireVersion:
		return Request{}, bad("v", fmt.Sprintf("protocol version %d is not spoken here (want %d): the daemon and the helper are from different releases", req.V, WireVersion))
	case !idPattern.MatchString(req.ID):
		return Request{}, bad("id", "must be 1 to 128 letters, digits or . _ : -")
	case req.Key == "":
		return Request{}, bad("key", "the caller's API key is required: the helper verifies every call itself")
	case len(req.Key) > 256:
		return Request{}, bad("key", "too long to be a key")
	case len(req.Source) > 256:
		return Request{}, bad("source", "at most 256 bytes")
	case !opPattern.MatchString(req.Op):
		return Request{}, bad("op", "must name an operation, such as file.read")
	case len(req.Args) == 0 || req.Args[0] != '{':
		return Request{}, bad("args", "must be a JSON object")
	case len(req.Confirm) > 128:
		return Request{}, bad("confirm", "too long to be a confirmation token")
	}
	return req, nil
}

// Peer is who is at the other end of a Unix socket, as the kernel says.
type Peer struct {
	PID, UID, GID int
}

// PeerOf reads the credentials of a Unix socket's peer (SO_PEERCRED):
// what the peer had when it connected, which it cannot forge.
func PeerOf(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("host: the peer's credentials: %w", err)
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, fmt.Errorf("host: the peer's credentials: %w", err)
	}
	if serr != nil {
		return Peer{}, fmt.Errorf("host: the peer's credentials (SO_PEERCRED): %w", serr)
	}
	return Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}, nil
}
