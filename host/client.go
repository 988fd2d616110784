package host

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Call sends one request to the helper at socket and reads its answer,
// handing each progress frame before it to progress (when not nil). It
// is the daemon's (and the host CLI's) side of the wire; nothing is
// retried, since an operation may have been done before an answer was
// lost. Closing the connection (ctx ending) stops a running command.
func Call(ctx context.Context, socket string, req Request, progress func(ExecProgress)) (Response, error) {
	if req.V == 0 {
		req.V = WireVersion
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return Response{}, fmt.Errorf("host: reach the helper at %s: %w", socket, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl) //nolint:errcheck // a failed deadline only loses the bound
	} else {
		c.SetDeadline(time.Now().Add(5 * time.Minute)) //nolint:errcheck // as above
	}
	if err := WriteFrame(c, req); err != nil {
		return Response{}, err
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	for {
		body, err := ReadFrame(c, MaxFrame)
		if err != nil {
			return Response{}, fmt.Errorf("host: the helper's answer to %s (it may have been done): %w", req.ID, err)
		}
		var resp Response
		if err := DecodeStrict(body, &resp); err != nil {
			return Response{}, fmt.Errorf("host: the helper's answer to %s: %w", req.ID, err)
		}
		if resp.Progress == nil {
			return resp, nil
		}
		if progress != nil {
			progress(*resp.Progress)
		}
	}
}
