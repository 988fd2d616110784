package pve

import "testing"

func TestParseUPID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want UPID
	}{
		{"UPID:iaclab-01-01:00000DD3:1C419D88:6119FB65:srvreload:networking:root@pam:",
			UPID{Node: "iaclab-01-01", PID: 3539, PStart: 474062216, StartTime: 1629092709, Type: "srvreload", ID: "networking", User: "root@pam"}},
		// Nine hex digits of pstart after ~497 days of uptime.
		{"UPID:pve1:0020C066:1042DF204:69C26EB0:qmstart:100:root@pam:",
			UPID{Node: "pve1", PID: 0x0020C066, PStart: 0x1042DF204, StartTime: 0x69C26EB0, Type: "qmstart", ID: "100", User: "root@pam"}},
		// An empty id.
		{"UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:",
			UPID{Node: "pve1", PID: 0x0020C066, PStart: 0x042DF204, StartTime: 0x69C26EB0, Type: "vzdump", User: "root@pam"}},
		// An API token user.
		{"UPID:pve1:000FF1FD:10F9374C:630D702C:qmstop:101:mcp@pve!operator:",
			UPID{Node: "pve1", PID: 1044989, PStart: 284768076, StartTime: 1661825068, Type: "qmstop", ID: "101", User: "mcp@pve!operator"}},
	} {
		got, err := ParseUPID(tc.in)
		if err != nil {
			t.Fatalf("ParseUPID(%q): %v", tc.in, err)
		}
		if got != tc.want {
			t.Errorf("ParseUPID(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if s := got.String(); s != tc.in {
			t.Errorf("String() = %q, want %q", s, tc.in)
		}
	}
	u, _ := ParseUPID("UPID:pve1:000FF1FD:10F9374C:630D702C:qmstop:101:mcp@pve!operator:")
	if u.UserID() != "mcp@pve" || u.TokenID() != "operator" {
		t.Errorf("UserID %q TokenID %q", u.UserID(), u.TokenID())
	}
}

func TestParseUPIDRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam",      // no trailing colon
		"UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:done", // proxmoxer's mock suffix
		"UPID:-pve:0020C066:042DF204:69C26EB0:vzdump::root@pam:",     // bad node name
		"UPID:pve1:20C066:042DF204:69C26EB0:vzdump::root@pam:",       // short pid
		"UPID:pve1:0020C066:042DF204:69C26EB0:qm/start:1:root@pam:",  // slash in type
		"upid:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:",
	} {
		if u, err := ParseUPID(in); err == nil {
			t.Errorf("ParseUPID(%q) = %+v, want an error", in, u)
		}
	}
}

func FuzzParseUPID(f *testing.F) {
	f.Add("UPID:iaclab-01-01:00000DD3:1C419D88:6119FB65:srvreload:networking:root@pam:")
	f.Add("UPID:pve1:0020C066:1042DF204:69C26EB0:vzdump::a@b!c:")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUPID(s)
		if err != nil {
			return
		}
		again, err := ParseUPID(u.String())
		if err != nil || again != u {
			t.Fatalf("round trip of %q: %+v, %v", s, again, err)
		}
	})
}
