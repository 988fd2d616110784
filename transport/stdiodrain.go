package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
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

// message is what drain reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// idOf is a message's id, canonical (the bytes as sent, with spaces
// trimmed), and whether it is a request (a method and an id) or an answer
// (an id and no method).
func idOf(line []byte) (id string, request, answer bool) {
	var m message
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return "", false, false
	}
	var v any
	if json.Unmarshal(m.ID, &v) != nil {
		return "", false, false
	}
	canon, _ := json.Marshal(v)
	return string(canon), m.Method != "", m.Method == ""
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
