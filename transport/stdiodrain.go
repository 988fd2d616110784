package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// At the end of its input, mcp-go's stdio server cancels the context of
// every request still being served, so a client that writes its requests
// and closes stdin (as the MCP specification's shutdown has it: close the
// input, then wait for the server to exit) got cancellations, or answers
// computed under a cancelled context, instead of its answers. drain stands
// between the streams and the server: it notes the id of each request the
// server reads and crosses it off when the server writes the answer, and
// holds the end of the input back until every request read has its answer
// (or ctx ends: a client that will not wait sends SIGTERM).

// maxTrackedLine bounds the bytes drain keeps of one line to read its id;
// a longer message is still passed on whole, only not waited for.
const maxTrackedLine = 1 << 20

type drain struct {
	ctx     context.Context
	mu      sync.Mutex
	pending map[string]bool // ids of requests read and not yet answered
	idle    chan struct{}   // closed and replaced when pending empties
	inLine  lineBuffer
	outLine lineBuffer
}

func newDrain(ctx context.Context) *drain {
	return &drain{ctx: ctx, pending: map[string]bool{}, idle: make(chan struct{})}
}

// idOf is a message's id, canonical (as encoding/json decodes and encodes
// it, so that a request's id and its answer's match however each spells
// it), and whether it is a request (a method and an id) or an answer (an
// id and no method). It reads the message's top level only: every value
// but the id and the method is skipped, not decoded (the answers are most
// of the bytes, up to a megabyte a line). It reads what encoding/json's
// Unmarshal into {ID json.RawMessage; Method string} reads: names matched
// without regard to case, the last of a name repeated winning, invalid
// UTF-8 allowed, and any message it would refuse has no id.
func idOf(line []byte) (id string, request, answer bool) {
	raw, method, ok := scanMessage(line)
	if !ok || len(raw) == 0 || string(raw) == "null" {
		return "", false, false
	}
	canon, ok := canonicalID(raw)
	if !ok {
		return "", false, false
	}
	return canon, method, !method
}

// scanMessage reads a message's top level for its raw id and whether it
// has a method; ok is false for a line encoding/json would refuse.
func scanMessage(line []byte) (raw []byte, method, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(line), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false, false
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, false, false
		}
		switch n := name.String(); {
		case strings.EqualFold(n, "id"):
			v, err := dec.ReadValue()
			if err != nil {
				return nil, false, false
			}
			raw = append(raw[:0], v...)
		case strings.EqualFold(n, "method"):
			v, err := dec.ReadValue()
			if err != nil {
				return nil, false, false
			}
			switch v.Kind() {
			case '"':
				method = len(v) > 2 // "" is no method, as for encoding/json
			case 'n': // null leaves the method as it was
			default:
				return nil, false, false // encoding/json refuses a method of another type
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return nil, false, false
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, false, false
	}
	if _, err := dec.ReadToken(); err != io.EOF { // only spaces may follow
		return nil, false, false
	}
	return raw, method, true
}

// canonicalID is the id as encoding/json encodes what it decodes of raw
// (a number as a float64, a string with <, > and & escaped). The ids
// clients send, small integers and plain strings, are their own canonical
// form and cost nothing more.
func canonicalID(raw []byte) (string, bool) {
	if plainID(raw) {
		return string(raw), true
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	canon, err := json.Marshal(v)
	return string(canon), err == nil
}

// plainID reports whether raw is an integer of up to 15 digits (a float64
// holds it exactly, and encodes it as written) or a string of printable
// ASCII with nothing encoding/json would escape.
func plainID(raw []byte) bool {
	if raw[0] == '"' {
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// lineBuffer collects the bytes of the current line, up to maxTrackedLine.
type lineBuffer struct {
	buf  []byte
	over bool
}

// feed passes p through the buffer and calls done with each line it ends.
func (l *lineBuffer) feed(p []byte, done func([]byte)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !l.over {
			if len(l.buf)+len(chunk) > maxTrackedLine {
				l.over, l.buf = true, nil
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		if i < 0 {
			return
		}
		if !l.over {
			done(l.buf)
		}
		l.buf, l.over = l.buf[:0], false
		p = p[i+1:]
	}
}

func (d *drain) read(line []byte) {
	if id, req, _ := idOf(line); req {
		d.mu.Lock()
		d.pending[id] = true
		d.mu.Unlock()
	}
}

func (d *drain) wrote(line []byte) {
	id, _, ans := idOf(line)
	if !ans {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.pending[id] {
		return
	}
	delete(d.pending, id)
	if len(d.pending) == 0 {
		close(d.idle)
		d.idle = make(chan struct{})
	}
}

// wait blocks until every request read is answered, or ctx ends.
func (d *drain) wait() {
	for {
		d.mu.Lock()
		n, idle := len(d.pending), d.idle
		d.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-idle:
		case <-d.ctx.Done():
			return
		}
	}
}

// drainReader is the input through a drain.
type drainReader struct {
	d  *drain
	in io.Reader
}

func (r drainReader) Read(p []byte) (int, error) {
	n, err := r.in.Read(p)
	r.d.inLine.feed(p[:n], r.d.read)
	if err == io.EOF {
		// A last line without its newline is a message too.
		if len(r.d.inLine.buf) > 0 && !r.d.inLine.over {
			r.d.read(r.d.inLine.buf)
			r.d.inLine.buf = r.d.inLine.buf[:0]
		}
		if n > 0 {
			// Hand the bytes over first; the next Read ends the input.
			return n, nil
		}
		r.d.wait()
	}
	return n, err
}

// drainWriter is the output through a drain. mcp-go writes from several
// goroutines, each message whole under its own lock, so lines do not
// interleave; the drain's lock keeps the line buffer whole as well.
type drainWriter struct {
	d   *drain
	out io.Writer
	mu  *sync.Mutex
}

func (w drainWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.out.Write(p)
	w.d.outLine.feed(p[:n], w.d.wrote)
	return n, err
}
