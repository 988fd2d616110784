package pve_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// Observe hears of every attempt, with the path after the API root and
// PVE's status: a GET retried after a 503 is two observations, and a
// request that got no answer has status 0.
func TestObserveEveryAttempt(t *testing.T) {
	type seen struct {
		method, path string
		status       int
	}
	var mu sync.Mutex
	var got []seen
	calls := 0
	c, srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":{"version":"9.1.1"}}`))
	}, func(cfg *pve.Config) {
		cfg.Observe = func(method, path string, status int, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if d <= 0 {
				t.Errorf("%s %s took %v", method, path, d)
			}
			got = append(got, seen{method, path, status})
		}
	})
	if err := c.Get(ctx, "/version", nil, nil); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if _, err := c.Do(ctx, "POST", "/nodes/pve1/qemu/100/status/start", nil); err == nil {
		t.Fatal("a POST to a closed server succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []seen{{"GET", "/version", 503}, {"GET", "/version", 200}, {"POST", "/nodes/pve1/qemu/100/status/start", 0}}
	if len(got) != len(want) {
		t.Fatalf("observed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("observation %d: %v, want %v", i, got[i], want[i])
		}
	}
}
