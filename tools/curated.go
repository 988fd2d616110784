package tools

import (
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// curatedTools are the curated tools: one call for one day-to-day job, each over endpoints of the registry.
func (s *Server) curatedTools(reg *schema.Registry) []server.ServerTool { return nil }

// curatedVisible says whether a caller with the visibility v sees the tool
// name; known is false for a tool not of this family.
func (s *Server) curatedVisible(name string, v visibility) (show, known bool) { return false, false }
