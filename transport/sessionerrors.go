package transport

import (
	"encoding/json"
	"net/http"
)

// The JSON-RPC error codes of a session refusal: those the official
// TypeScript SDK's server answers with, so that clients that read them see
// the codes they know. The MCP specification (streamable HTTP, session
// management) sets the statuses: 400 for a request without the session id
// a server requires, 404 for a session that is unknown or ended, after
// which the client must initialize a new one.
const (
	codeSessionRequired = -32000
	codeSessionNotFound = -32001
)

// rpcRefusal is the body of a session refusal: a JSON-RPC error response
// to the request that was refused (id null when it had none, or was a
// batch, a GET or a DELETE).
type rpcRefusal struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcRefusalError `json:"error"`
}

type rpcRefusalError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// refuseSession answers a session refusal (400 or 404) with a JSON-RPC
// error body and records it, as every other refusal, with a reason of its
// own.
func (g *guard) refuseSession(w http.ResponseWriter, r *http.Request, body []byte, status int, answer, record string) {
	g.record(r, status, record)
	code := codeSessionNotFound
	if status == http.StatusBadRequest {
		code = codeSessionRequired
	}
	writeJSON(w, status, rpcRefusal{JSONRPC: "2.0", ID: requestID(body), Error: rpcRefusalError{Code: code, Message: answer}})
}

// requestID is the id of a body that is one JSON-RPC request, or nil
// (written as null) for anything else.
func requestID(body []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return nil
	}
	switch m.ID[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return m.ID
	}
	return nil // an id JSON-RPC does not allow (an object, an array, a boolean)
}
