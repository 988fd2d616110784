package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

func (s *Sim) clusterRoutes(add func(string, handler)) {
	add("GET /cluster/resources", s.clusterResources)
	add("GET /cluster/status", s.clusterStatus)
	add("GET /cluster/log", s.clusterLog)
	add("GET /cluster/nextid", s.nextID)
	add("GET /access/permissions", s.accessPermissions)
	add("GET /pools", s.poolsList)
}

// clusterResources is GET /cluster/resources: guests the caller may audit
// (VM.Audit; their pool only with Pool.Audit on it), every node (its load
// figures only with Sys.Audit on it), and storages with Datastore.Audit,
// per node, as pve-manager's Cluster.pm resources filters them, with PVE's
// value types (vmid a number, template 0/1, LXC and QEMU side by side).
func (s *Sim) clusterResources(r *request) (any, error) {
	typ := r.str("type")
	list := []map[string]any{}
	if typ == "" || typ == "vm" {
		for _, g := range s.st.sortedGuests() {
			if !r.can(fmt.Sprintf("/vms/%d", g.vmid), "VM.Audit") {
				continue
			}
			e := s.guestSummary(g, r)
			e["id"] = fmt.Sprintf("%s/%d", g.kind, g.vmid)
			e["type"] = g.kind
			e["node"] = g.node
			e["maxcpu"] = g.cpus()
			delete(e, "cpus")
			if g.pool != "" && r.can("/pool/"+g.pool, "Pool.Audit") {
				e["pool"] = g.pool
			}
			list = append(list, e)
		}
	}
	if typ == "" || typ == "node" {
		for _, n := range s.st.nodes {
			e := s.nodeEntry(r, n)
			if n.online {
				e["cgroup-mode"] = 2
			}
			list = append(list, e)
		}
	}
	if typ == "" || typ == "storage" {
		for _, n := range s.st.nodes {
			for _, st := range s.st.storages {
				if !r.can("/storage/"+st.id, "Datastore.Audit") {
					continue
				}
				e := map[string]any{
					"id": "storage/" + n.name + "/" + st.id, "type": "storage", "storage": st.id, "node": n.name,
					"plugintype": st.typ, "content": strings.Join(st.content, ","), "shared": boolInt(st.shared), "status": "unknown",
				}
				if n.online {
					e["status"] = "available"
					e["disk"] = st.used(n.name)
					e["maxdisk"] = st.total
				}
				list = append(list, e)
			}
		}
	}
	return list, nil
}

// guestSummary holds the fields the guest lists share.
func (s *Sim) guestSummary(g *guest, r *request) map[string]any {
	e := map[string]any{
		"vmid": g.vmid, "name": g.name(), "status": g.status, "cpus": g.cpus(),
		"maxmem": g.memoryMiB() << 20, "maxdisk": g.bootDiskBytes(), "disk": 0,
		"cpu": 0, "mem": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0, "uptime": 0,
		"template": boolInt(g.template()),
	}
	if tags := g.conf["tags"]; tags != "" {
		e["tags"] = tags
	}
	if g.lock != "" {
		e["lock"] = g.lock
	} else if l := g.conf["lock"]; l != "" {
		e["lock"] = l
	}
	if g.status == "running" {
		up := int64(r.now.Sub(g.startedAt).Seconds())
		e["uptime"] = up
		e["cpu"] = usage(g.vmid, r.now, 0.03)
		e["mem"] = int64(float64(g.memoryMiB()<<20) * 0.45)
		e["netin"] = up * 1517
		e["netout"] = up * 403
		e["diskread"] = up * 8192
		e["diskwrite"] = up * 4096
		e["pid"] = 1000 + g.vmid*7
		if g.kind == "lxc" {
			e["disk"] = g.bootDiskBytes() / 5
		}
	}
	return e
}

func (s *Sim) clusterStatus(r *request) (any, error) {
	online := 0
	for _, n := range s.st.nodes {
		if n.online {
			online++
		}
	}
	list := []map[string]any{{
		"type": "cluster", "id": "cluster", "name": s.st.clusterName, "nodes": len(s.st.nodes),
		"quorate": boolInt(online*2 > len(s.st.nodes)), "version": 7,
	}}
	for _, n := range s.st.nodes {
		list = append(list, map[string]any{
			"type": "node", "id": "node/" + n.name, "name": n.name, "nodeid": n.id, "ip": n.ip,
			"online": boolInt(n.online), "local": boolInt(n.name == "pve1"), "level": "",
		})
	}
	return list, nil
}

// clusterLog is GET /cluster/log: every entry with Sys.Syslog on /, else
// only the caller's own (Cluster.pm log, get_cluster_log($user)).
func (s *Sim) clusterLog(r *request) (any, error) {
	max := r.num("max", 50)
	all := r.can("/", "Sys.Syslog")
	list := []map[string]any{}
	for i := len(s.st.clusterLog) - 1; i >= 0 && len(list) < max; i-- {
		e := s.st.clusterLog[i]
		if !all && e.user != r.who.id() {
			continue
		}
		list = append(list, map[string]any{
			"uid": e.uid, "time": e.time, "pri": e.pri, "tag": e.tag, "pid": e.pid, "node": e.node, "user": e.user, "msg": e.msg,
		})
	}
	return list, nil
}

// nextID is GET /cluster/nextid: the lowest free VM ID from 100 (PVE
// answers it as a string), or a check that a requested one is free.
func (s *Sim) nextID(r *request) (any, error) {
	if r.has("vmid") {
		id := r.vmid()
		if s.st.guests[id] != nil {
			return nil, paramError(map[string]string{"vmid": fmt.Sprintf("VM %d already exists", id)})
		}
		return strconv.Itoa(id), nil
	}
	for id := 100; ; id++ {
		if s.st.guests[id] == nil {
			return strconv.Itoa(id), nil
		}
	}
}

// accessPermissions is AccessControl.pm's permissions: a caller may read
// its own privileges and, as a user, its tokens'; anyone else's need
// Sys.Audit on /access. The answer is about the subject asked for.
func (s *Sim) accessPermissions(r *request) (any, error) {
	subject := r.str("userid")
	if subject == "" {
		subject = r.who.id()
	}
	owner, _, isToken := strings.Cut(subject, "!")
	if subject != r.who.id() && !(isToken && owner == r.who.id()) {
		if err := r.check("/access", "Sys.Audit"); err != nil {
			return nil, err
		}
	}
	return s.permissionsOf(s.st.principalOf(subject), r.str("path")), nil
}

func (s *Sim) poolsList(r *request) (any, error) {
	ids := make([]string, 0, len(s.st.pools))
	for id := range s.st.pools {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	list := []map[string]any{}
	for _, id := range ids {
		if !r.can("/pool/"+id, "Pool.Audit") {
			continue
		}
		list = append(list, map[string]any{"poolid": id, "comment": s.st.pools[id].comment})
	}
	return list, nil
}
