package tools

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Names of the console and download tools.
const (
	ToolGuestVNC        = "proxmox_guest_vnc"
	ToolGuestTerminal   = "proxmox_guest_terminal"
	ToolNodeTerminal    = "proxmox_node_terminal"
	ToolStorageDownload = "proxmox_storage_download"
	ToolStorageOCIPull  = "proxmox_storage_oci_pull"
)

// consoleSpecs are the consoles (a VNC or terminal proxy to a guest, its
// ticket for the caller alone) and the downloads into a storage (from a
// URL or an OCI registry, refused by the built-in profiles for places that
// are not public: input.outside). Each is a curated tool: the endpoint's
// own parameter schemas, one call through callEndpoint.
//
// A console's answer (ticket, VNC password) goes to the caller only: the
// journal records the call's arguments and outcome, never PVE's answer,
// and the tools take no operation_key (a replay answers from the journal,
// which holds no ticket).
func consoleSpecs() []*curated {
	return []*curated{
		{name: ToolGuestVNC, title: "VNC console ticket", method: "POST", qemu: qemuPath("/vncproxy"), lxc: lxcPath("/vncproxy"), vmid: true,
			params: []string{"websocket", "generate-password", "width", "height"}, controls: []string{"confirm", "dry_run"},
			prepare: prepareConsole,
			desc: "Open a VNC proxy to a guest's display (node found from the VM ID): data has ticket, port, password (VNC's, when PVE makes one), " +
				"user, cert, upid, websocket_path (add vncticket=<ticket, URL-encoded>). The proxy waits 10 s for its client. " +
				"Shown to you only: the journal keeps the call, not the answer."},
		{name: ToolGuestTerminal, title: "Terminal console ticket", method: "POST", qemu: qemuPath("/termproxy"), lxc: lxcPath("/termproxy"), vmid: true,
			params: []string{"serial"}, controls: []string{"confirm", "dry_run"},
			prepare: prepareConsole,
			desc: "Open a terminal proxy (xterm.js) to a guest's console or a VM's serial port (node found from the VM ID): data has ticket, port, " +
				"user, upid, websocket_path (add vncticket=<ticket, URL-encoded>). Shown to you only: the journal keeps the call, not the answer."},
		{name: ToolNodeTerminal, title: "Node terminal ticket", method: "POST", path: "/nodes/{node}/termproxy", node: true,
			controls: []string{"confirm", "dry_run"}, prepare: prepareConsole,
			desc: "Open a terminal proxy (xterm.js) to a node: data has ticket, port, user, upid, websocket_path (add vncticket=<ticket, URL-encoded>). " +
				"PVE gives an API token a login prompt (the host's credentials), never a shell. Shown to you only: the journal keeps the call, not the answer."},
		{name: ToolStorageDownload, title: "Download into a storage", method: "POST", path: "/nodes/{node}/storage/{storage}/download-url", node: true,
			params:   []string{"storage", "url", "content", "filename", "checksum", "checksum-algorithm", "compression", "verify-certificates"},
			controls: downloadControls, prepare: prepareDownload,
			desc: "Download an ISO (content iso), container template (vztmpl) or importable image (import) from a URL into a node's storage; " +
				"filename defaults to the URL's last segment. Starts a task (upid; wait follows it). A host that does not resolve " +
				"to public addresses only (loopback, private, link-local...) is refused unless your policy allows it."},
		{name: ToolStorageOCIPull, title: "Pull an OCI image into a storage", method: "POST", path: "/nodes/{node}/storage/{storage}/oci-registry-pull", node: true,
			params: []string{"storage", "reference", "filename"}, controls: downloadControls,
			desc: "Pull an OCI image (reference, e.g. docker.io/library/debian:13) into a node's storage as a container template. " +
				"Starts a task (upid; wait follows it). A registry that is not at a public address is refused unless your policy allows it."},
	}
}

// downloadControls are a download's control arguments: no change group,
// as a download has no undo.
var downloadControls = []string{"wait", "confirm", "dry_run", "operation_key"}

var consoleByName = sync.OnceValue(func() map[string]*curated {
	out := map[string]*curated{}
	for _, cs := range consoleSpecs() {
		out[cs.name] = cs
	}
	return out
})

// consoleTools are consoles and downloads.
func (s *Server) consoleTools(reg *schema.Registry) []server.ServerTool {
	var out []server.ServerTool
	for _, cs := range consoleSpecs() {
		eps := cs.endpoints(reg)
		if len(eps) == 0 {
			continue
		}
		t := cs.tool(reg, eps)
		if cs.name == ToolStorageDownload {
			t = withOptional(t, "filename") // named after the URL when not given
		}
		out = append(out, server.ServerTool{Tool: t, Handler: s.curatedHandler(cs)})
	}
	return out
}

// consoleVisible says whether a caller with the visibility v sees the tool
// name; known is false for a tool not of this family.
func (s *Server) consoleVisible(name string, v visibility) (show, known bool) {
	return s.specVisible(consoleByName()[name], v)
}

// withOptional drops names from the tool's required arguments.
func withOptional(t mcp.Tool, names ...string) mcp.Tool {
	var in map[string]any
	if err := json.Unmarshal(t.RawInputSchema, &in); err != nil {
		panic(fmt.Sprintf("tools: input schema of %s: %v", t.Name, err))
	}
	req, _ := in["required"].([]any)
	in["required"] = slices.DeleteFunc(req, func(v any) bool { s, _ := v.(string); return slices.Contains(names, s) })
	rawSchema(in)(&t)
	return t
}

// prepareConsole adds to the answer the path of the proxy's websocket:
// PVE's vncwebsocket of the guest (or node) with the proxy's port (the client adds
// the ticket, which is not repeated in it).
func prepareConsole(_ map[string]any, cc *curatedCall) error {
	cc.transform = func(data any) any {
		m, ok := data.(map[string]any)
		if !ok || cc.node == "" {
			return data
		}
		port, ok := scalarText(m["port"])
		if !ok {
			return data
		}
		ws := pve.Path("nodes", cc.node, "vncwebsocket") // a node's
		if cc.kind != "" {
			ws = pve.Path("nodes", cc.node, cc.kind, fmt.Sprint(cc.vmid), "vncwebsocket")
		}
		out := make(map[string]any, len(m)+1)
		for k, v := range m {
			out[k] = v
		}
		out["websocket_path"] = "/api2/json" + ws + "?" + url.Values{"port": {port}}.Encode()
		return out
	}
	return nil
}

// prepareDownload names the file after the URL's last segment when the
// caller gives no filename (PVE requires one and normalizes it).
func prepareDownload(a map[string]any, cc *curatedCall) error {
	if v, ok := a["filename"]; ok && v != nil {
		return nil
	}
	raw, ok := a["url"].(string)
	if !ok {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return argError("url", "must be an http or https URL: "+err.Error())
	}
	name := path.Base(u.Path)
	if name == "." || name == "/" || strings.TrimSpace(name) == "" {
		return argError("filename", "is required: the URL's path names no file")
	}
	cc.params["filename"] = name
	return nil
}
