package sim

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// apiError is an error answer as PVE gives it: the status, the message
// whose first line becomes the reason phrase, and per-parameter errors.
type apiError struct {
	status int
	msg    string
	errors map[string]string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.status, e.msg) }

// fail is PVE's plain die: 500 with the message.
func fail(format string, args ...any) *apiError {
	return &apiError{status: http.StatusInternalServerError, msg: fmt.Sprintf(format, args...)}
}

func failStatus(status int, format string, args ...any) *apiError {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// paramError is raise_param_exc: 400 "Parameter verification failed."
func paramError(errs map[string]string) *apiError {
	out := make(map[string]string, len(errs))
	for k, v := range errs {
		out[k] = strings.TrimRight(v, "\n") + "\n"
	}
	return &apiError{status: http.StatusBadRequest, msg: "Parameter verification failed.", errors: out}
}

// result is a handler's answer with PVE's optional "total".
type result struct {
	data  any
	total *int
}

func withTotal(data any, total int) result { return result{data: data, total: &total} }

// header values pveproxy sends.
const (
	serverHeader = "pve-api-daemon/3.0"
	jsonType     = "application/json;charset=UTF-8"
)

func commonHeaders(h http.Header) {
	h.Set("Server", serverHeader)
	h.Set("Cache-Control", "max-age=0")
	h.Set("Pragma", "no-cache")
	h.Set("Expires", time.Now().UTC().Format(http.TimeFormat))
}

// writeData sends {"data": …} (with "total" when set), gzip-compressed when
// the client accepts it and the body is over 1 KiB, as pveproxy does. A
// gzip writer holds hundreds of KiB of tables, so writers are pooled.
func writeData(w http.ResponseWriter, r *http.Request, res result, gzPool *sync.Pool) {
	env := map[string]any{"data": res.data}
	if res.total != nil {
		env["total"] = *res.total
	}
	body, err := json.Marshal(env)
	if err != nil {
		writeError(w, fail("internal error: %v", err))
		return
	}
	h := w.Header()
	commonHeaders(h)
	h.Set("Content-Type", jsonType)
	if len(body) > 1024 && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		var buf bytes.Buffer
		zw, _ := gzPool.Get().(*gzip.Writer)
		if zw == nil {
			zw = gzip.NewWriter(&buf)
		} else {
			zw.Reset(&buf)
		}
		zw.Write(body) //nolint:errcheck // writes to memory
		zw.Close()
		gzPool.Put(zw)
		body = buf.Bytes()
		h.Set("Content-Encoding", "gzip")
		h.Set("Vary", "Accept-Encoding")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body) //nolint:errcheck // the client went away
}

// writeError sends an error as PVE does: the message's first line is the
// reason phrase of the status line, the JSON body has "data": null, the full
// "message" (libpve-http-server 5.2 and later) and "errors" for a 400. An
// authentication failure has an empty body.
func writeError(w http.ResponseWriter, e *apiError) {
	var body []byte
	if e.status != http.StatusUnauthorized {
		env := map[string]any{"data": nil, "message": strings.TrimRight(e.msg, "\n") + "\n"}
		if len(e.errors) > 0 {
			env["errors"] = e.errors
		}
		body, _ = json.Marshal(env)
	}
	writeRaw(w, e.status, reasonPhrase(e.msg), jsonType, body)
}

// reasonPhrase keeps the first line of a message, as pveproxy does.
func reasonPhrase(msg string) string {
	line, _, _ := strings.Cut(strings.TrimLeft(msg, "\n"), "\n")
	return strings.TrimSpace(strings.ReplaceAll(line, "\r", " "))
}

// writeRaw writes a response with a custom reason phrase. net/http always
// writes the standard phrase, so the connection is taken over and closed
// after the response; where that is impossible (a recorder in tests) the
// standard phrase is used and the message still travels in the body.
func writeRaw(w http.ResponseWriter, status int, reason, contentType string, body []byte) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		h := w.Header()
		commonHeaders(h)
		h.Set("Content-Type", contentType)
		w.WriteHeader(status)
		w.Write(body) //nolint:errcheck // the client went away
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		w.WriteHeader(status)
		return
	}
	defer conn.Close()
	writeRawTo(rw.Writer, status, reason, contentType, body)
	rw.Flush() //nolint:errcheck // the client went away
}

func writeRawTo(bw *bufio.Writer, status int, reason, contentType string, body []byte) {
	if reason == "" {
		reason = http.StatusText(status)
	}
	h := http.Header{}
	commonHeaders(h)
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("Connection", "close")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if len(body) > 0 {
		h.Set("Content-Type", contentType)
	}
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", status, reason)
	h.Write(bw) //nolint:errcheck // buffered
	bw.WriteString("\r\n")
	bw.Write(body)
}
