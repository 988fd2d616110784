// Package host owns what the root helper (`proxmox-mcp helper`) does on
// the host itself, and how it refuses what it must not do: the canonical
// form of the paths a request names, the allowed roots those paths must
// lie beneath, the files that are refused whatever a policy says, and the
// file operations (stat, list, paged read, atomic write) made through
// descriptors so that no symbolic link, magic link or mount point planted
// by someone else is ever followed. It also owns the helper's wire: one
// length-limited frame per message, decoded strictly, from a peer whose
// credentials the kernel vouches for (SO_PEERCRED).
//
// The package trusts nothing it is handed. A path is refused unless it is
// already canonical (absolute, no "." or ".." elements, no doubled or
// trailing slash, no NUL or control characters, valid UTF-8, within
// PATH_MAX and NAME_MAX); it is then opened with openat2 beneath the root
// it names (RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS
// and, unless the root allows it, RESOLVE_NO_XDEV, so a bind mount inside
// a root that leads elsewhere is refused too), and what was opened is
// checked again: its type, its file system (proc, sysfs and the other
// kernel file systems are never read), and its identity against the
// refused files (a hard link to /etc/shadow is still /etc/shadow).
package host
