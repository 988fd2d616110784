package schema

import "testing"

func TestSearchRanksRelevantEndpointsFirst(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	for _, tc := range []struct {
		query string
		top   int
		want  string // must appear within the first top results
	}{
		{"start vm", 1, "POST /nodes/{node}/qemu/{vmid}/status/start"},
		{"start container", 1, "POST /nodes/{node}/lxc/{vmid}/status/start"},
		{"snapshot", 5, "GET /nodes/{node}/qemu/{vmid}/snapshot"},
		{"snapshot", 5, "POST /nodes/{node}/qemu/{vmid}/snapshot"},
		{"rollback snapshot", 2, "POST /nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback"},
		{"list vms", 3, "GET /nodes/{node}/qemu"},
		{"backup", 3, "POST /nodes/{node}/vzdump"},
		{"task log", 3, "GET /nodes/{node}/tasks/{upid}/log"},
		{"next free vmid", 1, "GET /cluster/nextid"},
		{"cluster resources", 1, "GET /cluster/resources"},
		{"delete vm", 1, "DELETE /nodes/{node}/qemu/{vmid}"},
		{"get_nodes_qemu_status_current", 1, "GET /nodes/{node}/qemu/{vmid}/status/current"},
		// Words match across -, _ and joined: PVE writes cloudinit.
		{"cloud-init", 3, "GET /nodes/{node}/qemu/{vmid}/cloudinit"},
		{"cloud-init", 3, "PUT /nodes/{node}/qemu/{vmid}/cloudinit"},
		{"cloud init dump", 1, "GET /nodes/{node}/qemu/{vmid}/cloudinit/dump"},
		{"cloud_init", 3, "GET /nodes/{node}/qemu/{vmid}/cloudinit/dump"},
		{"downloadurl", 1, "POST /nodes/{node}/storage/{storage}/download-url"},
		{"move disk", 3, "POST /nodes/{node}/qemu/{vmid}/move_disk"},
		{"movedisk", 3, "POST /nodes/{node}/qemu/{vmid}/move_disk"},
		// An action ranks the endpoint that acts above its read-only twin.
		{"migrate container", 1, "POST /nodes/{node}/lxc/{vmid}/migrate"},
		{"migrate vm", 1, "POST /nodes/{node}/qemu/{vmid}/migrate"},
		{"migration preconditions vm", 1, "GET /nodes/{node}/qemu/{vmid}/migrate"},
	} {
		res := r.Search(tc.query, SearchOptions{Limit: tc.top})
		found := false
		for _, hit := range res {
			if hit.Endpoint.Key() == tc.want {
				found = true
			}
		}
		if !found {
			var got []string
			for _, hit := range r.Search(tc.query, SearchOptions{Limit: 5}) {
				got = append(got, hit.Endpoint.Key())
			}
			t.Errorf("Search(%q): %s not in the top %d; top 5: %q", tc.query, tc.want, tc.top, got)
		}
	}
}

func TestSearchOptions(t *testing.T) {
	r := fixtureRegistry(t, pve91)
	read := RiskRead
	for _, hit := range r.Search("vm", SearchOptions{Limit: 50, MaxRisk: &read}) {
		if hit.Endpoint.Risk != RiskRead {
			t.Errorf("MaxRisk read returned %s (%v)", hit.Endpoint.Key(), hit.Endpoint.Risk)
		}
	}
	for _, hit := range r.Search("vm", SearchOptions{Method: "delete"}) {
		if hit.Endpoint.Method != "DELETE" {
			t.Errorf("Method filter returned %s", hit.Endpoint.Key())
		}
	}
	res := r.Search("vm", SearchOptions{Filter: func(ep *Endpoint) bool { return ep.Path == "/cluster/resources" }})
	if len(res) != 0 {
		t.Errorf("filter kept %d results", len(res))
	}
	if got := r.Search("vm", SearchOptions{}); len(got) != 20 {
		t.Errorf("default limit gave %d results", len(got))
	}
	if got := r.Search("zzzzqqq", SearchOptions{}); len(got) != 0 {
		t.Errorf("nonsense query matched %d", len(got))
	}
	a, b := r.Search("storage content", SearchOptions{}), r.Search("storage content", SearchOptions{})
	for i := range a {
		if a[i].Endpoint != b[i].Endpoint {
			t.Fatal("search order is not deterministic")
		}
	}
}
