package sim

import (
	"fmt"
	"time"
)

// What a node reports of itself over time and of its disks, and what the
// HA stack says of the cluster: the answers of pve-manager's rrddata and
// disks/smart and pve-ha-manager's status/current. Their permissions
// (Sys.Audit on the node, or on /) are the schema's, checked before a
// handler runs.

func (s *Sim) monitorRoutes(add func(string, handler)) {
	add("GET /nodes/{node}/rrddata", s.nodeRRD)
	add("GET /nodes/{node}/disks/smart", s.diskSmart)
	add("GET /cluster/ha/status/current", s.haStatus)
}

// rrdSetup is PVE::RRD::create_rrd_data's $setup for the pve-node-9.0
// files: the resolution in seconds and the number of rows per timeframe.
var rrdSetup = map[string][2]int64{
	"hour":   {60, 60},
	"day":    {60, 1440},
	"week":   {60 * 30, 336},
	"month":  {60 * 30, 1440},
	"year":   {3600 * 6, 1440},
	"decade": {86400 * 7, 570},
}

// nodeRRD is GET /nodes/{node}/rrddata: one entry per row of the
// timeframe, each with time and the data sources of pve-node-9.0 that
// have a value (create_rrd_data; memavailable as pvestatd writes it). The
// last row, whose only key would be time, is dropped as PVE drops it; the
// rows before the node booted have no values.
func (s *Sim) nodeRRD(r *request) (any, error) {
	n := r.node()
	setup := rrdSetup[r.str("timeframe")]
	reso, count := setup[0], setup[1]
	ctime := reso * (r.now.Unix() / reso)
	start := ctime - reso*count
	rows := make([]map[string]any, 0, count)
	for t := start; t < ctime; t += reso {
		e := map[string]any{"time": t}
		at := time.Unix(t, 0)
		if n.online && !at.Before(n.bootedAt) && at.Before(r.now) {
			cpu := s.nodeCPU(n, at)
			used := float64(s.nodeMemUsed(n)) * (0.95 + 0.05*usage(n.id+1, at, 1))
			e["cpu"], e["maxcpu"], e["iowait"] = cpu, n.cpus, cpu/20
			e["loadavg"] = cpu * float64(n.cpus)
			e["memtotal"], e["memused"], e["memavailable"] = n.memTotal, used, float64(n.memTotal)-used
			e["swaptotal"], e["swapused"] = n.swapTotal, 0
			e["roottotal"], e["rootused"] = n.rootTotal, n.rootTotal/4
			e["netin"], e["netout"] = usage(n.id+2, at, 120000), usage(n.id+3, at, 80000)
			e["arcsize"] = 0
			e["pressurecpusome"], e["pressureiosome"], e["pressureiofull"] = cpu/10, cpu/40, cpu/80
			e["pressurememorysome"], e["pressurememoryfull"] = 0, 0
		}
		rows = append(rows, e)
	}
	if len(rows) > 0 && len(rows[len(rows)-1]) == 1 {
		rows = rows[:len(rows)-1]
	}
	return rows, nil
}

// diskSmart is GET /nodes/{node}/disks/smart: the SMART data of one disk
// as Diskmanage::get_smart_data parses smartctl (ATA attributes for SATA
// disks, smartctl's text for NVMe), or only the health with healthonly;
// a path that is no block device of the node is refused as
// verify_blockdev_path refuses it.
func (s *Sim) diskSmart(r *request) (any, error) {
	path := r.str("disk")
	for _, d := range r.node().disks {
		if d.devpath != path {
			continue
		}
		health := d.health
		if health == "" {
			health = "UNKNOWN"
		}
		if r.flag("healthonly") {
			return map[string]any{"health": health}, nil
		}
		if d.typ == "nvme" {
			return map[string]any{"type": "text", "health": health, "text": fmt.Sprintf(
				"SMART/Health Information (NVMe Log 0x02)\nCritical Warning:                   0x00\nTemperature:                        38 Celsius\n"+
					"Available Spare:                    100%%\nPercentage Used:                    1%%\nPower On Hours:                     %d\nUnsafe Shutdowns:                   3\nMedia and Data Integrity Errors:    0\n",
				int(r.now.Sub(r.node().bootedAt).Hours())+8760)}, nil
		}
		attr := func(id int, name string, value, worst, thresh int, flags, raw string) map[string]any {
			return map[string]any{"id": fmt.Sprintf("%3d", id), "name": name, "value": value, "worst": worst, "threshold": thresh,
				"fail": "-", "flags": flags, "raw": raw, "normalized": value}
		}
		return map[string]any{"type": "ata", "health": health, "attributes": []map[string]any{
			attr(5, "Reallocated_Sector_Ct", 100, 100, 10, "PO--CK", "0"),
			attr(9, "Power_On_Hours", 98, 98, 0, "-O--CK", "9120"),
			attr(12, "Power_Cycle_Count", 99, 99, 0, "-O--CK", "41"),
			attr(194, "Temperature_Celsius", 66, 52, 0, "-O---K", "34"),
			attr(197, "Current_Pending_Sector", 100, 100, 0, "-O--CK", "0"),
			attr(199, "UDMA_CRC_Error_Count", 100, 100, 0, "-O--CK", "0"),
		}}, nil
	}
	return nil, fail("no such block device\n")
}

// haStatus is GET /cluster/ha/status/current on a cluster whose HA stack
// manages nothing: the quorum entry of the node answering, and the
// fencing entry of a CRM that is not active (no manager status, so no
// master and no LRM entries), as pve-ha-manager's Status.pm lists them.
func (s *Sim) haStatus(r *request) (any, error) {
	online := 0
	for _, n := range s.st.nodes {
		if n.online {
			online++
		}
	}
	const local = "pve1"
	quorate := online*2 > len(s.st.nodes)
	status := "OK"
	if !quorate {
		status = "No quorum on node '" + local + "'!"
	}
	return []map[string]any{
		{"id": "quorum", "type": "quorum", "node": local, "status": status, "quorate": boolInt(quorate)},
		{"id": "fencing", "type": "fencing", "node": local, "status": "standby (CRM watchdog standby)", "armed-state": "standby"},
	}, nil
}
