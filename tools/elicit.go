package tools

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Confirmation by the person (docs/tools.md#confirmation-by-the-person):
// where the client declared elicitation in form mode, a confirmation the
// policy asks of the caller itself is asked of the person at the client,
// not answered by the model with a token. A client without elicitation
// gets the token, as before.

// elicitsForms says whether the session's client declared elicitation in
// form mode (an empty elicitation capability means form mode).
func elicitsForms(ctx context.Context) bool {
	ci, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	el := ci.GetClientCapabilities().Elicitation
	return el != nil && (el.Form != nil || el.URL == nil)
}

// personAnswer is what the person said to a confirmation.
type personAnswer int

const (
	// notAsked: the client takes no elicitation (or it failed): the
	// caller gets a token to confirm with instead.
	notAsked personAnswer = iota
	personConfirmed
	personDeclined
)

// askPerson asks the person to confirm what message says.
func (s *Server) askPerson(ctx context.Context, message string) personAnswer {
	answer, content := s.elicit(ctx, message, "confirm",
		map[string]any{"type": "boolean", "title": "Go ahead", "description": "Check to do exactly this; decline to do nothing."})
	if answer == personConfirmed && content["confirm"] != true {
		return personDeclined
	}
	return answer
}

// elicit asks the person for one field of a form (its JSON Schema):
// notAsked when the client takes no elicitation or it failed (the caller
// falls back on a token), personDeclined when they declined or
// cancelled, else personConfirmed with what they entered.
func (s *Server) elicit(ctx context.Context, message, field string, schema map[string]any) (personAnswer, map[string]any) {
	srv := server.ServerFromContext(ctx)
	if srv == nil || !elicitsForms(ctx) {
		return notAsked, nil
	}
	er, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params: mcp.ElicitationParams{Mode: mcp.ElicitationModeForm, Message: message, RequestedSchema: map[string]any{
			"type": "object", "required": []string{field}, "properties": map[string]any{field: schema},
		}},
	})
	if err != nil {
		if !errors.Is(err, server.ErrElicitationNotSupported) && !errors.Is(err, server.ErrNoActiveSession) {
			s.opts.Logger.Warn("tools: asking the person failed; the answer carries a token or phrase instead", "err", err)
		}
		return notAsked, nil
	}
	if er.Action != mcp.ElicitationResponseActionAccept {
		return personDeclined, nil
	}
	content, _ := er.Content.(map[string]any)
	return personConfirmed, content
}
