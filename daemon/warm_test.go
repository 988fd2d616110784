package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
)

// Kicks while a pass runs make one more pass, not one each; after stop a
// kick does nothing, and stop waits for the pass under way.
func TestWarmerCoalescesKicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var passes atomic.Int32
		release := make(chan struct{})
		w := &warmer{log: quietLogger()}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w.start(ctx, func(context.Context) error {
			passes.Add(1)
			<-release
			return nil
		})
		synctest.Wait()
		for range 5 {
			w.kick()
		}
		release <- struct{}{} // the first pass
		release <- struct{}{} // the one pass the five kicks asked for
		synctest.Wait()
		if n := passes.Load(); n != 2 {
			t.Fatalf("%d passes for a start and five kicks during it, want 2", n)
		}
		w.kick()
		synctest.Wait()
		stopped := make(chan struct{})
		go func() { w.stop(); close(stopped) }()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("stop returned with a pass under way")
		default:
		}
		close(release)
		<-stopped
		w.kick()
		synctest.Wait()
		if n := passes.Load(); n != 3 {
			t.Fatalf("%d passes, want 3: a kick after stop made one", n)
		}
	})
}

// A pass that fails is logged and does not stop the next.
func TestWarmerGoesOnAfterAFailedPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var passes atomic.Int32
		w := &warmer{log: quietLogger()}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w.start(ctx, func(context.Context) error {
			passes.Add(1)
			return errors.New("policy failed")
		})
		synctest.Wait()
		w.kick()
		synctest.Wait()
		w.stop()
		if n := passes.Load(); n != 2 {
			t.Fatalf("%d passes, want 2", n)
		}
	})
}

// The served daemon works out the first listing of every built-in profile
// when it starts and after a schema swap: a new key's first tools/list
// computes nothing.
func TestFirstListingsWorkedOutInAdvance(t *testing.T) {
	r := newRig(t, nil)
	r.start()
	profiles := int64(len(policy.Profiles()))
	waitComputations(t, r.d, profiles)
	listAsNewKeys(t, r, "start")
	if st := r.d.engine.VisibilityStats(); st.Computations != profiles {
		t.Fatalf("first listings after the start made %d computations", st.Computations-profiles)
	}

	want := r.d.schema.Status().Reloads + 1
	path := filepath.Join(r.dir, "apidoc.js")
	tmp := path + ".new"
	if err := os.WriteFile(tmp, append(sim.DemoSchema(), "\n// upgraded\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for r.d.schema.Status().Reloads < want {
		if time.Now().After(deadline) {
			t.Fatalf("the swap was not served within 30 s: %+v", r.d.schema.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitComputations(t, r.d, 2*profiles)
	listAsNewKeys(t, r, "swap")
	if st := r.d.engine.VisibilityStats(); st.Computations != 2*profiles {
		t.Fatalf("first listings after the swap made %d computations", st.Computations-2*profiles)
	}
}

// waitComputations waits until the engine has made n visibility
// computations.
func waitComputations(t *testing.T, d *Daemon, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for d.engine.VisibilityStats().Computations < n {
		if time.Now().After(deadline) {
			t.Fatalf("%+v after 30 s, want %d computations", d.engine.VisibilityStats(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listAsNewKeys lists the tools once with a new key of each profile.
func listAsNewKeys(t *testing.T, r *rig, round string) {
	t.Helper()
	for _, p := range policy.Profiles() {
		s := r.session(t, r.keyNamed(t, fmt.Sprintf("first-%s-%s", round, p), p))
		if _, n, err := s.ToolsList(); err != nil || n == 0 {
			t.Fatalf("tools/list of a new %s key: %d tools, %v", p, n, err)
		}
	}
}

// A stdio session works out its caller's first listing as it starts,
// before the client has sent anything; the list then computes nothing.
func TestStdioWorksOutItsFirstListing(t *testing.T) {
	r := newRig(t, nil)
	c, err := r.d.StdioCaller(context.Background(), r.key("operator"))
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.d.ServeStdio(context.Background(), inR, outW, c) }()
	waitComputations(t, r.d, 1)
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 16<<20)
	for i, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
	} {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			continue
		}
		if !lines.Scan() {
			t.Fatalf("no answer to %s: %v", msg, lines.Err())
		}
		if i == 2 && !strings.Contains(lines.Text(), `"tools":[{`) {
			t.Fatalf("tools/list answered %.300s", lines.Text())
		}
	}
	inW.Close()
	if err := <-done; err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("ServeStdio: %v", err)
	}
	if st := r.d.engine.VisibilityStats(); st.Computations != 1 || st.Hits == 0 {
		t.Fatalf("%+v: want the one computation made at the start, and the list a hit", st)
	}
}
