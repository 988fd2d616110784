// Package authority owns the copy of the API keys and policies that only
// root can write, on a node in local mode, and the mirror of it that the
// daemon reads.
//
// The daemon's state directory belongs to the service user, so whoever
// holds that uid could add a key or edit a policy there. The daemon does
// not mind (it is that user), but the root helper must: it acts as root
// on the host, so it verifies the caller's key and evaluates the caller's
// policy against a copy the service user cannot touch. In local mode that
// copy is a directory beside the state directory (/var/lib/proxmox-mcp-
// authority, root:root 0700) laid out as a state directory is (keys.json,
// policies/); in cluster mode it is pmxcfs (package cluster).
//
// [Local] is keys.Shared and policy.Shared: a key or policy change made as
// root is made in the authority, under its lock, and the authority is
// then mirrored into the state directory (every file, so an edit made
// there meanwhile is undone). The first such change adopts what the state
// directory holds (trust on first use, said in the log and kept in the
// authority's record), so an upgrade loses no key. Changes made without
// root while an authority exists are refused: they would be invisible to
// the helper and undone by the next mirror.
package authority
