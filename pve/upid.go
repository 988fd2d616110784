package pve

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// UPID identifies a PVE task: UPID:node:pid:pstart:starttime:type:id:user:
type UPID struct {
	// Node runs the task.
	Node string
	// PID is the worker's process id.
	PID uint32
	// PStart is the worker's start time in clock ticks since boot; it takes
	// a ninth hex digit after about 497 days of uptime.
	PStart uint64
	// StartTime is when the task started (Unix seconds).
	StartTime int64
	// Type is the task type (qmstart, vzdump, ...).
	Type string
	// ID is the task's object (a VM ID, a storage) and may be empty.
	ID string
	// User is user@realm, or user@realm!tokenid for API tokens.
	User string
}

// upidPattern is PVE's decode regex (pve-common PVE/UPID.pm).
var upidPattern = regexp.MustCompile(`^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):$`)

// ParseUPID decodes a UPID string as PVE does.
func ParseUPID(s string) (UPID, error) {
	m := upidPattern.FindStringSubmatch(s)
	if m == nil {
		return UPID{}, fmt.Errorf("%q is not a valid UPID (want UPID:node:pid:pstart:starttime:type:id:user:)", s)
	}
	pid, _ := strconv.ParseUint(m[3], 16, 32)
	pstart, _ := strconv.ParseUint(m[4], 16, 64)
	start, _ := strconv.ParseInt(m[5], 16, 64)
	return UPID{Node: m[1], PID: uint32(pid), PStart: pstart, StartTime: start, Type: m[6], ID: m[7], User: m[8]}, nil
}

// String encodes the UPID exactly as PVE does, with upper-case hex and the
// trailing colon.
func (u UPID) String() string {
	return fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", u.Node, u.PID, u.PStart, u.StartTime, u.Type, u.ID, u.User)
}

// Started is StartTime as a time.
func (u UPID) Started() time.Time { return time.Unix(u.StartTime, 0) }

// UserID is the user part of User: root@pam for root@pam!mytoken.
func (u UPID) UserID() string {
	user, _, _ := strings.Cut(u.User, "!")
	return user
}

// TokenID is the token name of User, or "" when a ticket started the task.
func (u UPID) TokenID() string {
	_, token, _ := strings.Cut(u.User, "!")
	return token
}

// IsUPID reports whether s looks like a UPID; handlers that start tasks
// return one as their data.
func IsUPID(s string) bool { return upidPattern.MatchString(s) }
