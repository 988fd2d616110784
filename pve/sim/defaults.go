package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// defaultState builds the simulated cluster every simulator starts with.
func defaultState(now time.Time, rng *rand.Rand) *state {
	st := &state{
		clusterName: "pmcp-sim",
		guests:      map[int]*guest{},
		pools:       map[string]*pool{"prod": {id: "prod", comment: "Production guests"}},
		users:       map[string]*user{},
		groups:      map[string][]string{},
		roleDefs:    builtinRoles(),
		rng:         rng,
		nextPID:     uint32(100000 + rng.IntN(50000)),
		version:     pveVersion{version: "9.1.2", release: "9.1", repoid: "9d436f37a0ac4172"},
	}
	for i, name := range []string{"pve1", "pve2", "pve3"} {
		st.nodes = append(st.nodes, defaultNode(st, name, i+1, now))
	}
	st.nodes[2].online = false // pve3 is down: calls to it get PVE's 595

	st.storages = []*storage{
		{id: "local", typ: "dir", content: []string{"backup", "iso", "vztmpl"}, path: "/var/lib/vz", total: 100 << 30, volumes: map[string][]*volume{}},
		{id: "local-lvm", typ: "lvmthin", content: []string{"images", "rootdir"}, total: 400 << 30, volumes: map[string][]*volume{}},
		{id: "backup", typ: "nfs", content: []string{"backup"}, shared: true, path: "/mnt/pve/backup", total: 2 << 40, volumes: map[string][]*volume{}},
	}
	ctime := now.Add(-30 * 24 * time.Hour).Unix()
	for _, n := range []string{"pve1", "pve2"} {
		local := st.storage("local")
		local.addVolume(n, &volume{volid: "local:iso/debian-12.8.0-amd64-netinst.iso", content: "iso", format: "iso", size: 663748608, ctime: ctime})
		local.addVolume(n, &volume{volid: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", content: "vztmpl", format: "tzst", size: 126502406, ctime: ctime})
	}

	add := func(g *guest) {
		st.guests[g.vmid] = g
		for k, v := range g.conf {
			if isDiskKey(g.kind, k) && !isCDROM(v) {
				st.allocateExisting(g, v)
			}
		}
	}
	add(&guest{vmid: 100, kind: "qemu", node: "pve1", status: "running", startedAt: now.Add(-36 * time.Hour), pool: "prod",
		conf: qemuConf(st, "web01", 2, 4096, "32G", "prod;web", now)})
	add(&guest{vmid: 101, kind: "qemu", node: "pve1", status: "stopped",
		conf: withKeys(qemuConf(st, "db01", 4, 8192, "64G", "prod;db", now), "protection", "1")})
	add(&guest{vmid: 102, kind: "qemu", node: "pve2", status: "running", startedAt: now.Add(-5 * time.Hour),
		conf: qemuConf(st, "build01", 8, 16384, "100G", "ci", now)})
	add(&guest{vmid: 9000, kind: "qemu", node: "pve1", status: "stopped",
		conf: withKeys(qemuConf(st, "debian-12-template", 1, 2048, "8G", "template", now), "template", "1")})
	add(&guest{vmid: 200, kind: "lxc", node: "pve1", status: "running", startedAt: now.Add(-72 * time.Hour), pool: "prod",
		conf: lxcConf(st, "dns01", 1, 512, "8G", now)})
	add(&guest{vmid: 201, kind: "lxc", node: "pve2", status: "stopped",
		conf: lxcConf(st, "monitor01", 2, 1024, "16G", now)})

	web := st.guests[100]
	web.snapshots = []*snapshot{{name: "before-upgrade", description: "Before the kernel upgrade", snaptime: now.Add(-7 * 24 * time.Hour).Unix(), conf: cloneConf(web.conf)}}
	web.parent = "before-upgrade"

	st.users["root@pam"] = &user{id: "root@pam", enabled: true, tokens: map[string]*apiToken{"sim": {name: "sim", secret: st.secret()}}}
	mcp := &user{id: "mcp@pve", enabled: true, tokens: map[string]*apiToken{}}
	st.users["mcp@pve"] = mcp
	st.grant("/", "mcp@pve", "Administrator", true) //nolint:errcheck // built-in role
	// The operator tier's role: guest power, backups, snapshots and guest
	// agent exec; its reads come from PVEAuditor beside it (the installer
	// creates the same role and grants the same pair: installer.TierRoles).
	st.roleDefs["PMCPOperator"] = privSet("Datastore.AllocateSpace", "VM.Backup", "VM.GuestAgent.Unrestricted", "VM.PowerMgmt", "VM.Snapshot", "VM.Snapshot.Rollback")
	for _, tier := range []struct{ name, roles string }{
		{"read-only", "PVEAuditor"},
		{"operator", "PVEAuditor,PMCPOperator"},
		{"admin", "Administrator"},
		{"root", "Administrator"},
	} {
		mcp.tokens[tier.name] = &apiToken{name: tier.name, secret: st.secret(), privsep: true}
		for role := range strings.SplitSeq(tier.roles, ",") {
			st.grant("/", "mcp@pve!"+tier.name, role, true) //nolint:errcheck // built-in roles
		}
	}
	st.logCluster(now.Add(-time.Hour), "pve1", "root@pam", "pvedaemon", "<root@pam> successful auth for user 'root@pam'")
	return st
}

func privSet(privs ...string) map[string]bool {
	out := make(map[string]bool, len(privs))
	for _, p := range privs {
		out[p] = true
	}
	return out
}

func withKeys(conf map[string]string, kv ...string) map[string]string {
	for i := 0; i+1 < len(kv); i += 2 {
		conf[kv[i]] = kv[i+1]
	}
	return conf
}

func qemuConf(st *state, name string, cores int, memMiB int, disk, tags string, now time.Time) map[string]string {
	return map[string]string{
		"name":    name,
		"cores":   fmt.Sprint(cores),
		"sockets": "1",
		"memory":  fmt.Sprint(memMiB),
		"ostype":  "l26",
		"cpu":     "x86-64-v2-AES",
		"scsihw":  "virtio-scsi-single",
		"scsi0":   "local-lvm:vm-VMID-disk-0,iothread=1,size=" + disk,
		"ide2":    "none,media=cdrom",
		"net0":    "virtio=" + st.macAddress() + ",bridge=vmbr0,firewall=1",
		"boot":    "order=scsi0;ide2;net0",
		"numa":    "0",
		"tags":    tags,
		"smbios1": "uuid=" + st.uuid(),
		"vmgenid": st.uuid(),
		"meta":    fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", now.Add(-90*24*time.Hour).Unix()),
		"agent":   "1",
	}
}

func lxcConf(st *state, hostname string, cores int, memMiB int, disk string, now time.Time) map[string]string {
	return map[string]string{
		"hostname":     hostname,
		"arch":         "amd64",
		"cores":        fmt.Sprint(cores),
		"memory":       fmt.Sprint(memMiB),
		"swap":         "512",
		"ostype":       "debian",
		"rootfs":       "local-lvm:vm-VMID-disk-0,size=" + disk,
		"net0":         "name=eth0,bridge=vmbr0,firewall=1,hwaddr=" + st.macAddress() + ",ip=dhcp,type=veth",
		"features":     "nesting=1",
		"tags":         "infra",
		"unprivileged": "1",
		"onboot":       "1",
	}
}

func isCDROM(v string) bool { return v == "none" || strings.Contains(v, "media=cdrom") }

// allocateExisting registers the volume a default guest's disk names, and
// replaces the VMID placeholder.
func (st *state) allocateExisting(g *guest, v string) {
	for k, val := range g.conf {
		if val == v {
			v = strings.ReplaceAll(v, "VMID", strconv.Itoa(g.vmid))
			g.conf[k] = v
		}
	}
	volid, size := diskVolume(v)
	storeID, _, _ := strings.Cut(volid, ":")
	if s := st.storage(storeID); s != nil {
		s.addVolume(g.node, &volume{volid: volid, content: contentOf(g.kind), format: "raw", size: size, vmid: g.vmid})
	}
}

func contentOf(kind string) string {
	if kind == "lxc" {
		return "rootdir"
	}
	return "images"
}

// diskVolume splits a disk option into its volume ID and size.
func diskVolume(v string) (string, int64) {
	volid, _, _ := strings.Cut(v, ",")
	return volid, parseSizeOpt(v)
}

func defaultNode(st *state, name string, id int, now time.Time) *node {
	n := &node{
		name: name, id: id, ip: fmt.Sprintf("10.10.0.%d", 10+id), online: true,
		bootedAt: now.Add(-time.Duration(20+id*3) * 24 * time.Hour), cpus: 16, cpuModel: "AMD EPYC 7313P 16-Core Processor",
		memTotal: 128 << 30, rootTotal: 100 << 30, swapTotal: 8 << 30,
		sslFP: fmt.Sprintf("%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X:%02X",
			st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256),
			st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256),
			st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256),
			st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256)),
		updatedAt: now.Add(-26 * time.Hour),
	}
	since := n.bootedAt
	for _, svc := range []struct{ name, desc, active string }{
		{"chrony", "chrony, an NTP client/server", "active"},
		{"corosync", "Corosync Cluster Engine", "active"},
		{"cron", "Regular background program processing daemon", "active"},
		{"ksmtuned", "Kernel Samepage Merging (KSM) Tuning Daemon", "active"},
		{"postfix", "Postfix Mail Transport Agent (instance -)", "active"},
		{"proxmox-firewall", "Proxmox nftables firewall", "inactive"},
		{"pve-cluster", "The Proxmox VE cluster filesystem", "active"},
		{"pve-firewall", "Proxmox VE firewall", "active"},
		{"pve-ha-crm", "PVE Cluster HA Resource Manager Daemon", "active"},
		{"pve-ha-lrm", "PVE Local HA Resource Manager Daemon", "active"},
		{"pvedaemon", "PVE API Daemon", "active"},
		{"pvefw-logger", "Proxmox VE firewall logger", "active"},
		{"pveproxy", "PVE API Proxy Server", "active"},
		{"pvescheduler", "Proxmox VE scheduler", "active"},
		{"pvestatd", "PVE Status Daemon", "active"},
		{"spiceproxy", "PVE SPICE Proxy Server", "active"},
		{"sshd", "OpenBSD Secure Shell server", "active"},
		{"syslog", "Journal Service", "active"},
		{"systemd-timesyncd", "Network Time Synchronization", "inactive"},
	} {
		unit := "enabled"
		if svc.active == "inactive" {
			unit = "disabled"
		}
		n.services = append(n.services, &service{name: svc.name, desc: svc.desc, active: svc.active, unit: unit, activeSince: since})
	}
	n.updates = []aptPackage{
		{"pve-manager", "9.1.1", "9.1.2", "Proxmox", "admin", "important", "The Proxmox Virtual Environment", "The Proxmox Virtual Environment"},
		{"proxmox-kernel-6.17", "6.17.2-1", "6.17.4-1", "Proxmox", "kernel", "optional", "Latest Proxmox Kernel Image", "Latest Proxmox Kernel Image"},
		{"openssl", "3.5.1-1", "3.5.1-1+deb13u1", "Debian", "utils", "optional", "Secure Sockets Layer toolkit", "Secure Sockets Layer toolkit - cryptographic utility"},
	}
	n.ifaces = []netIface{
		{name: "eno1", typ: "eth", method: "manual", active: true, autostart: false},
		{name: "eno2", typ: "eth", method: "manual", active: false},
		{name: "vmbr0", typ: "bridge", method: "static", address: n.ip, netmask: "24", cidr: n.ip + "/24", gateway: "10.10.0.1", bridgePorts: "eno1", active: true, autostart: true},
	}
	n.disks = []disk{
		{devpath: "/dev/nvme0n1", model: "Samsung SSD 980 PRO 1TB", serial: fmt.Sprintf("S5GXNX0T%06d", st.rng.IntN(1000000)), typ: "nvme", health: "PASSED", used: "LVM", size: 1000204886016, gpt: true, wwn: "eui.002538b411b0c7de", vendor: "unknown"},
		{devpath: "/dev/sda", model: "ST4000NM000A-2HZ100", serial: fmt.Sprintf("WJG0%04d", st.rng.IntN(10000)), typ: "hdd", health: "PASSED", size: 4000787030016, gpt: false, rpm: 7200, wwn: "0x5000c500c9b1a2b3", vendor: "ATA"},
		{devpath: "/dev/sdb", model: "Samsung SSD 870 EVO 2TB", serial: "S6PNNS0T500" + fmt.Sprint(100+id), typ: "ssd", health: "PASSED", size: 2000398934016, wwn: "0x5002538f4" + fmt.Sprint(2000000+id), vendor: "ATA"},
	}
	n.syslog = []string{
		"Nov 29 08:00:01 " + name + " systemd[1]: Started pvescheduler.service - Proxmox VE scheduler.",
		"Nov 29 08:00:03 " + name + " pveproxy[1234]: starting 3 worker(s)",
		"Nov 29 08:05:00 " + name + " corosync[987]:   [TOTEM ] Token has not been received in 1237 ms",
		"Nov 29 08:05:01 " + name + " pvestatd[1100]: status update time (5.123 seconds)",
	}
	return n
}
