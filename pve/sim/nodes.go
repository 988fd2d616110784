package sim

import (
	"fmt"
	"math"
	"strings"
	"time"
)

func (s *Sim) nodeRoutes(add func(string, handler)) {
	add("GET /version", s.version)
	add("GET /nodes", s.nodesList)
	add("GET /nodes/{node}/status", s.nodeStatus)
	add("GET /nodes/{node}/version", s.version)
	add("GET /nodes/{node}/network", s.nodeNetwork)
	add("GET /nodes/{node}/services", s.nodeServices)
	add("GET /nodes/{node}/services/{service}/state", s.serviceState)
	for _, verb := range []string{"start", "stop", "restart", "reload"} {
		add("POST /nodes/{node}/services/{service}/"+verb, s.serviceCommand(verb))
	}
	add("GET /nodes/{node}/apt/update", s.aptList)
	add("POST /nodes/{node}/apt/update", s.aptRefresh)
	add("GET /nodes/{node}/journal", s.nodeJournal)
	add("GET /nodes/{node}/syslog", s.nodeSyslog)
}

func (s *Sim) version(*request) (any, error) {
	v := s.st.version
	return map[string]any{"version": v.version, "release": v.release, "repoid": v.repoid}, nil
}

func (r *request) node() *node { return r.sim.st.node(r.str("node")) }

// usage is a small deterministic wobble so numbers look alive.
func usage(seed int, now time.Time, base float64) float64 {
	phase := float64(now.Unix()%600)/600*2*math.Pi + float64(seed)
	return base * (1 + 0.2*math.Sin(phase))
}

func (s *Sim) nodeMemUsed(n *node) int64 {
	used := int64(6 << 30)
	for _, g := range s.st.guests {
		if g.node == n.name && g.status == "running" {
			used += g.memoryMiB() << 20
		}
	}
	return min(used, n.memTotal)
}

func (s *Sim) nodeCPU(n *node, now time.Time) float64 {
	running := 0
	for _, g := range s.st.guests {
		if g.node == n.name && g.status == "running" {
			running++
		}
	}
	return usage(n.id, now, 0.02+0.03*float64(running))
}

// nodesList is GET /nodes: every node, as pve-manager's Nodes index lists
// them; the load figures only with Sys.Audit on /nodes/<node>
// (extract_node_stats with exclude_stats); an offline node shows only its
// name and status.
func (s *Sim) nodesList(r *request) (any, error) {
	list := []map[string]any{}
	for _, n := range s.st.nodes {
		e := s.nodeEntry(r, n)
		e["ssl_fingerprint"] = n.sslFP
		list = append(list, e)
	}
	return list, nil
}

// nodeEntry is API2Tools::extract_node_stats for a node.
func (s *Sim) nodeEntry(r *request, n *node) map[string]any {
	e := map[string]any{"node": n.name, "id": "node/" + n.name, "type": "node", "level": "", "status": "offline"}
	if !n.online {
		return e
	}
	e["status"] = "online"
	if !r.can("/nodes/"+n.name, "Sys.Audit") {
		return e
	}
	e["cpu"] = s.nodeCPU(n, r.now)
	e["maxcpu"] = n.cpus
	e["mem"] = s.nodeMemUsed(n)
	e["maxmem"] = n.memTotal
	e["disk"] = n.rootTotal / 4
	e["maxdisk"] = n.rootTotal
	e["uptime"] = int64(r.now.Sub(n.bootedAt).Seconds())
	return e
}

// nodeStatus has the shape of pve-manager 9.1's answer.
func (s *Sim) nodeStatus(r *request) (any, error) {
	n := r.node()
	used := s.nodeMemUsed(n)
	cpu := s.nodeCPU(n, r.now)
	load := fmt.Sprintf("%.2f", cpu*float64(n.cpus))
	return map[string]any{
		"uptime":     int64(r.now.Sub(n.bootedAt).Seconds()),
		"cpu":        cpu,
		"wait":       0.0012,
		"idle":       0,
		"loadavg":    []string{load, load, load},
		"kversion":   "Linux 6.17.4-1-pve #1 SMP PREEMPT_DYNAMIC PMX 6.17.4-1 (2025-12-03T15:42Z)",
		"pveversion": "pve-manager/" + s.st.version.version + "/" + s.st.version.repoid,
		"ksm":        map[string]any{"shared": 0},
		"memory":     map[string]any{"total": n.memTotal, "used": used, "free": n.memTotal - used, "available": n.memTotal - used},
		"swap":       map[string]any{"total": n.swapTotal, "used": 0, "free": n.swapTotal},
		"rootfs":     map[string]any{"total": n.rootTotal, "used": n.rootTotal / 4, "free": n.rootTotal * 3 / 4, "avail": n.rootTotal*3/4 - 1<<30},
		"boot-info":  map[string]any{"mode": "efi", "secureboot": 0},
		"current-kernel": map[string]any{
			"sysname": "Linux", "release": "6.17.4-1-pve", "machine": "x86_64",
			"version": "#1 SMP PREEMPT_DYNAMIC PMX 6.17.4-1 (2025-12-03T15:42Z)",
		},
		"cpuinfo": map[string]any{
			"model": n.cpuModel, "cpus": n.cpus, "cores": n.cpus, "sockets": 1, "mhz": "3000.000", "hvm": "1",
			"user_hz": 100, "flags": "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat svm",
		},
	}, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// canAccessBridge is RPCEnvironment::check_sdn_bridge with SDN.Audit or
// SDN.Use on the bridge, /sdn/zones/localnetwork/<bridge>, or on one of its
// VLANs that has an ACL entry.
func (r *request) canAccessBridge(bridge string) bool {
	if r.who.isRoot() {
		return true
	}
	path := "/sdn/zones/localnetwork/" + bridge
	if r.canAny(path, "SDN.Audit", "SDN.Use") {
		return true
	}
	for _, e := range r.sim.st.acl {
		if vlan, ok := strings.CutPrefix(e.path, path+"/"); ok && !strings.Contains(vlan, "/") && r.canAny(e.path, "SDN.Audit", "SDN.Use") {
			return true
		}
	}
	return false
}

// nodeNetwork is GET /nodes/{node}/network: the interfaces of the type
// asked for; a bridge only for a caller with access to it, as pve-manager's
// Network index checks.
func (s *Sim) nodeNetwork(r *request) (any, error) {
	n := r.node()
	list := []map[string]any{}
	for _, ifc := range n.ifaces {
		if t := r.str("type"); t != "" && t != "any_bridge" && t != ifc.typ || t == "any_bridge" && ifc.typ != "bridge" {
			continue
		}
		if ifc.typ == "bridge" && !r.canAccessBridge(ifc.name) {
			continue
		}
		e := map[string]any{"iface": ifc.name, "type": ifc.typ, "method": ifc.method, "method6": "manual", "families": []string{"inet"},
			"priority": 3, "exists": 1}
		if ifc.active {
			e["active"] = 1
		}
		if ifc.autostart {
			e["autostart"] = 1
		}
		if ifc.address != "" {
			e["address"], e["netmask"], e["cidr"] = ifc.address, ifc.netmask, ifc.cidr
		}
		if ifc.gateway != "" {
			e["gateway"] = ifc.gateway
		}
		if ifc.typ == "bridge" {
			e["bridge_ports"], e["bridge_stp"], e["bridge_fd"] = ifc.bridgePorts, "off", "0"
		}
		list = append(list, e)
	}
	return list, nil
}

func serviceEntry(svc *service) map[string]any {
	state := "running"
	if svc.active != "active" {
		state = "stopped"
	}
	return map[string]any{"service": svc.name, "name": svc.name, "desc": svc.desc, "state": state,
		"active-state": svc.active, "unit-state": svc.unit}
}

func (s *Sim) nodeServices(r *request) (any, error) {
	list := []map[string]any{}
	for _, svc := range r.node().services {
		list = append(list, serviceEntry(svc))
	}
	return list, nil
}

func (n *node) service(name string) *service {
	for _, svc := range n.services {
		if svc.name == name {
			return svc
		}
	}
	return nil
}

func (s *Sim) serviceState(r *request) (any, error) {
	svc := r.node().service(r.str("service"))
	if svc == nil {
		return nil, fail("service '%s' not found", r.str("service"))
	}
	return serviceEntry(svc), nil
}

// serviceCommand starts, stops, restarts or reloads a host service as a
// task (srvstart, srvstop, ...), as PVE does.
func (s *Sim) serviceCommand(verb string) handler {
	return func(r *request) (any, error) {
		n := r.node()
		svc := n.service(r.str("service"))
		if svc == nil {
			return nil, fail("service '%s' not found", r.str("service"))
		}
		log := []string{fmt.Sprintf("%s service %s", strings.ToUpper(verb[:1])+verb[1:]+"ing", svc.name)}
		return r.startTask(n.name, "srv"+verb, svc.name, time.Second, log, func() error {
			switch verb {
			case "start", "restart", "reload":
				svc.active = "active"
				svc.activeSince = r.sim.clock.Now()
			case "stop":
				svc.active = "inactive"
			}
			return nil
		}), nil
	}
}

func (s *Sim) aptList(r *request) (any, error) {
	list := []map[string]any{}
	for _, p := range r.node().updates {
		list = append(list, map[string]any{
			"Package": p.name, "OldVersion": p.oldVersion, "Version": p.version, "Origin": p.origin, "Section": p.section,
			"Priority": p.priority, "Title": p.title, "Description": p.description, "Arch": "amd64",
		})
	}
	return list, nil
}

// aptRefresh runs "apt-get update" as a task.
func (s *Sim) aptRefresh(r *request) (any, error) {
	n := r.node()
	log := []string{
		"starting apt-get update",
		"Hit:1 http://deb.debian.org/debian trixie InRelease",
		"Hit:2 http://download.proxmox.com/debian/pve trixie InRelease",
		"Reading package lists...",
	}
	return r.startTask(n.name, "aptupdate", "", 5*time.Second, log, func() error {
		n.updatedAt = r.sim.clock.Now()
		return nil
	}), nil
}

func (s *Sim) nodeSyslog(r *request) (any, error) {
	n := r.node()
	start, limit := r.num("start", 0), r.num("limit", 50)
	lines := []map[string]any{}
	for i, line := range n.syslog {
		if svc := r.str("service"); svc != "" && !strings.Contains(line, " "+svc+"[") {
			continue
		}
		if i < start || len(lines) >= limit {
			continue
		}
		lines = append(lines, map[string]any{"n": i + 1, "t": line})
	}
	return withTotal(lines, len(n.syslog)), nil
}

// nodeJournal is GET /nodes/{node}/journal: plain lines, oldest first,
// with cursors first and last as journalctl's API gives them.
func (s *Sim) nodeJournal(r *request) (any, error) {
	n := r.node()
	lines := append([]string{}, n.syslog...)
	if last := r.num("lastentries", 0); last > 0 && last < len(lines) {
		lines = lines[len(lines)-last:]
	}
	out := []string{fmt.Sprintf("s=%s;i=1", n.name)}
	out = append(out, lines...)
	out = append(out, fmt.Sprintf("s=%s;i=%d", n.name, len(n.syslog)))
	return out, nil
}
