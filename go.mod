module github.com/proxmox-mcp/proxmox-mcp

go 1.26.8

require github.com/go-json-experiment/json v1.27.2

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/sys v0.13.0 // indirect
	golang.org/x/text v0.14.0 // indirect
)
