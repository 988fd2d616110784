// Package schema owns the Proxmox VE API schema as the daemon sees it.
//
// It extracts the JSON array embedded in PVE's apidoc.js without evaluating
// any JavaScript, normalizes every method of the tree into an [Endpoint],
// names each endpoint deterministically for MCP, classifies its risk from a
// reviewed rule table, converts its parameters to JSON Schema, validates call
// arguments with PVE's own semantics, ranks endpoints for search, keeps a
// last-known-good copy on disk, and swaps the live [Registry] atomically when
// apidoc.js changes.
//
// The package imports no network code: it is pure data and file handling.
package schema
