// Command execrace runs `true` (or the program its arguments name)
// through host.Services.Exec, as the root helper runs a command (a
// transient unit started over systemd's D-Bus API with the command's
// sandbox), many times in a row, and reports how each ended, for the
// booted test of the unit's start (TestBootedExecStartRace).
//
// `execrace -n 300 -load 2` starts 2 busy loops (so that systemd is slow
// to handle a unit's events, as on a loaded node or in CI), runs `true`
// 300 times one after the other, stops the loops and prints one JSON
// object: the runs, how many ended other than `exit 0` (-want: another
// end) and the first of those, and the p50 and p90 of a run.
// `execrace -n 300 -want "exit 1" /usr/bin/false` runs false instead;
// -cwd sets the working directory.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/host"
)

// Report is what execrace prints.
type Report struct {
	Runs int `json:"runs"`
	// Bad counts the runs that did not end as wanted (a signal, no exit
	// status at all, an error).
	Bad int `json:"bad"`
	// Ends counts the runs by how they ended ("exit 0", "exit 200
	// (200/CHDIR)", "signal SIGKILL", "no exit status (success)", "error").
	Ends map[string]int `json:"ends"`
	// First are the first few bad runs, as the helper answered them.
	First []string `json:"first,omitempty"`
	P50MS float64  `json:"p50_ms"`
	P90MS float64  `json:"p90_ms"`
}

func main() {
	n := flag.Int("n", 300, "runs of true")
	load := flag.Int("load", 0, "busy loops to run meanwhile")
	want := flag.String("want", "exit 0", `how every run should end ("exit 1", "exit 200 (200/CHDIR)")`)
	cwd := flag.String("cwd", "/", "the working directory")
	flag.Parse()
	path, argv := "/usr/bin/true", []string{"true"}
	if a := flag.Args(); len(a) > 0 {
		path, argv = a[0], append([]string{filepath.Base(a[0])}, a[1:]...)
	}

	var loops []*exec.Cmd
	for range *load {
		cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "execrace: a busy loop:", err)
			os.Exit(1)
		}
		loops = append(loops, cmd)
	}
	defer func() {
		for _, l := range loops {
			l.Process.Kill() //nolint:errcheck // it may be gone
			l.Wait()         //nolint:errcheck // killed
		}
	}()

	// A sandbox as the helper gives a command (the refused paths, the
	// system bus, systemd's sockets, the helper's socket directory).
	sb := host.Sandbox{Inaccessible: []string{"-/etc/shadow", "-/etc/gshadow", "-/root/.ssh", "-/etc/proxmox-mcp", "-/var/lib/proxmox-mcp",
		"-/var/lib/proxmox-mcp-helper", "-/run/dbus", "-/run/systemd/private", "-/run/systemd/io.systemd.Manager", "-/run/proxmox-mcp-helper"}}
	s := &host.Services{}
	rep := Report{Ends: map[string]int{}}
	var took []time.Duration
	for range *n {
		spec := host.ExecSpec{Path: path, Argv: argv, Cwd: *cwd, Timeout: 60 * time.Second, MaxOutput: host.DefaultMaxOutput, Sandbox: sb}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		start := time.Now()
		res, err := s.Exec(ctx, spec, nil)
		took = append(took, time.Since(start))
		cancel()
		rep.Runs++
		var end string
		switch {
		case err != nil:
			end = "error"
		case res.ExitCode != nil && res.SystemdStatus != "":
			end = fmt.Sprintf("exit %d (%s)", *res.ExitCode, res.SystemdStatus)
		case res.ExitCode != nil:
			end = fmt.Sprintf("exit %d", *res.ExitCode)
		case res.Signal != "":
			end = "signal " + res.Signal
		default:
			end = "no exit status (" + res.Result + ")"
		}
		rep.Ends[end]++
		if end != *want {
			rep.Bad++
			if len(rep.First) < 5 {
				rep.First = append(rep.First, fmt.Sprintf("%s: %s (result %q, signal %q, %d ms, error %v)", res.Unit, end, res.Result, res.Signal, res.DurationMS, err))
			}
		}
	}
	slices.Sort(took)
	q := func(p float64) float64 {
		return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000
	}
	rep.P50MS, rep.P90MS = q(0.5), q(0.9)
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))
}
