package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// logTail is how many task log lines an answer carries.
const logTail = 10

// follow waits for a task up to wait (and the caller's deadline), sending a
// progress notification after every poll when the client asked for them.
// It returns what it knows of the task either way.
func (s *Server) follow(ctx context.Context, client *pve.Client, upid string, wait time.Duration, token mcp.ProgressToken) (map[string]any, error) {
	wait = min(wait, s.opts.Limits.MaxWait)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	stopping := make(chan struct{})
	go func() {
		select {
		case <-s.waitsEnded:
			close(stopping)
			cancel()
		case <-wctx.Done():
		}
	}()
	polls := 0
	var last pve.TaskStatus
	srv := server.ServerFromContext(ctx)
	res, err := client.WaitTask(wctx, upid, pve.WaitOptions{
		MinInterval: 200 * time.Millisecond,
		MaxInterval: 2 * time.Second,
		Progress: func(p pve.TaskProgress) {
			polls++
			last = p.Status
			if token == nil || srv == nil {
				return
			}
			msg := fmt.Sprintf("task %s %s after %s", p.Status.Type, p.Status.Status, p.Elapsed.Round(time.Second))
			_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": token, "progress": polls, "message": msg,
			})
		},
	})
	task := map[string]any{"upid": upid}
	switch {
	case res != nil:
		ok, _ := pve.ExitOutcome(res.ExitStatus)
		task["status"] = "stopped"
		task["exitstatus"] = res.ExitStatus
		task["ok"] = ok
		task["warnings"] = res.Warnings
		task["waited_seconds"] = res.Waited.Seconds()
		var lines []string
		for _, l := range res.Log[max(0, len(res.Log)-logTail):] {
			lines = append(lines, l.T)
		}
		task["log_tail"] = lines
	case last.Status != "":
		task["status"] = last.Status
	default:
		task["status"] = "unknown"
	}
	if err != nil && ctx.Err() == nil {
		select {
		case <-stopping:
			return task, errors.New("the daemon is stopping, so it waits no longer")
		default:
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return task, fmt.Errorf("still running after %s", wait)
		}
	}
	return task, err
}

func taskSummary(ep *schema.Endpoint, path string, task map[string]any) string {
	switch {
	case task["status"] != "stopped":
		return fmt.Sprintf("%s %s: task %v is still running.", ep.Method, path, task["upid"])
	case task["ok"] == true && task["warnings"] != 0:
		return fmt.Sprintf("%s %s: task finished with %v.", ep.Method, path, task["exitstatus"])
	case task["ok"] == true:
		return fmt.Sprintf("%s %s: task finished OK.", ep.Method, path)
	}
	return fmt.Sprintf("%s %s: task failed: %v", ep.Method, path, task["exitstatus"])
}
