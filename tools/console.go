package tools

import (
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// consoleTools are consoles and downloads.
func (s *Server) consoleTools(reg *schema.Registry) []server.ServerTool { return nil }

// consoleVisible says whether a caller with the visibility v sees the tool
// name; known is false for a tool not of this family.
func (s *Server) consoleVisible(name string, v visibility) (show, known bool) { return false, false }
