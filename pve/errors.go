package pve

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinels callers branch on with errors.Is. An *APIError matches the one
// its status and message select; OutcomeUnknownError matches
// ErrOutcomeUnknown.
var (
	// ErrParameter: 400, PVE refused the parameters (Errors says which).
	ErrParameter = errors.New("pve: parameter verification failed")
	// ErrAuthentication: 401, the token is missing, wrong, expired or disabled.
	ErrAuthentication = errors.New("pve: authentication failed")
	// ErrPermission: 403, the token lacks a privilege.
	ErrPermission = errors.New("pve: permission denied")
	// ErrDigestMismatch: 500 "detected modified configuration": the config
	// changed since its digest was read; nothing was changed.
	ErrDigestMismatch = errors.New("pve: configuration changed since it was read")
	// ErrNotImplemented: 501, no such method or path.
	ErrNotImplemented = errors.New("pve: method not implemented")
	// ErrProxy: 595/596, pveproxy could not reach or talk to the target node.
	ErrProxy = errors.New("pve: proxy error between nodes")
	// ErrServer: any other 5xx.
	ErrServer = errors.New("pve: server error")
	// ErrBadResponse: a success status with a body that is not PVE's JSON.
	ErrBadResponse = errors.New("pve: malformed response")
	// ErrOutcomeUnknown: a write was sent and then the connection failed or
	// the deadline passed; PVE may or may not have applied it.
	ErrOutcomeUnknown = errors.New("pve: outcome unknown")
)

// APIError is an error answer from PVE. It keeps PVE's own message: the
// reason phrase of the status line (where PVE puts it) or the "message"
// field of newer servers, and the per-parameter errors of a 400.
type APIError struct {
	Method string
	Path   string
	// Status is the HTTP status code.
	Status int
	// Message is PVE's message, first line of the status line or the body.
	Message string
	// Errors maps parameters to PVE's complaint about them (400).
	Errors map[string]string
	// ContentType is the response's; a proxy's HTML error page shows here.
	ContentType string
}

// Error reads like PVE's own output, with the parameter errors sorted.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
	if len(e.Errors) > 0 {
		keys := make([]string, 0, len(e.Errors))
		for k := range e.Errors {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "; %s: %s", k, strings.TrimSpace(e.Errors[k]))
		}
	}
	return b.String()
}

// Is matches the sentinel for the error's kind.
func (e *APIError) Is(target error) bool { return e.kind() == target }

func (e *APIError) kind() error {
	switch {
	case e.Status == 400:
		return ErrParameter
	case e.Status == 401:
		return ErrAuthentication
	case e.Status == 403:
		return ErrPermission
	case e.Status == 501:
		return ErrNotImplemented
	case e.Status == 595 || e.Status == 596:
		return ErrProxy
	case e.Status == 500 && strings.Contains(e.Message, "detected modified configuration"):
		return ErrDigestMismatch
	case e.Status >= 500:
		return ErrServer
	}
	return nil
}

// OutcomeUnknownError says a write reached the wire and then failed, so
// PVE may have applied it. It is never retried; reconcile from PVE's task
// index or by reading the state.
type OutcomeUnknownError struct {
	Method string
	Path   string
	Err    error
}

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("%s %s: outcome unknown (the request was sent, then: %v); check the state before retrying", e.Method, e.Path, e.Err)
}

// Unwrap returns the transport error.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// Is matches ErrOutcomeUnknown.
func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// ResponseError is a success status whose body is not PVE's JSON envelope.
type ResponseError struct {
	Method, Path string
	Status       int
	Detail       string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("%s %s: %d with a malformed body: %s", e.Method, e.Path, e.Status, e.Detail)
}

// Is matches ErrBadResponse.
func (e *ResponseError) Is(target error) bool { return target == ErrBadResponse }
