package tools

import (
	"github.com/mark3labs/mcp-go/server"
)

// jobTools are the jobs: the PVE tasks the caller's calls started.
func (s *Server) jobTools() []server.ServerTool { return nil }

// jobVisible says whether a caller with the visibility v sees the tool
// name; known is false for a tool not of this family.
func (s *Server) jobVisible(name string, v visibility) (show, known bool) { return false, false }

// jobResources are the jobs as MCP resources: fixed ones and templates.
func (s *Server) jobResources() ([]server.ServerResource, []server.ServerResourceTemplate) {
	return nil, nil
}
