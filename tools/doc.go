// Package tools is the MCP surface of the daemon: the tools an agent sees
// and calls, the onboarding prompt, and the path every call takes.
//
// Modes: compact (the default) offers proxmox_api_search, proxmox_api_describe,
// proxmox_api_call, proxmox_schema_status, proxmox_task_wait and a few curated
// tools; expanded adds one tool per PVE endpoint with the endpoint's real input
// schema; search offers only the search and call tools, for clients with small
// tool budgets. Each caller sees only the tools its policy could ever allow,
// in tools/list and tools/call alike.
//
// A call is matched to its endpoint, validated against PVE's own parameter
// schema, decided by the caller's policy, checked against the daemon-wide
// read_only and allow_mutations switches, recorded in the journal (writes
// before they are sent), sent to PVE with the API token of the caller's tier,
// and answered with structured content shaped for agents (fields, omit,
// limit/offset, a size cap with an honest truncation marker). Long-running
// calls return their UPID and can be waited on with progress notifications.
package tools
