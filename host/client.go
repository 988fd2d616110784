package host

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Call sends one request to the helper at socket and reads its answer. It
// is the daemon's (and the host CLI's) side of the wire; nothing is
// retried, since an operation may have been done before an answer was
// lost.
func Call(ctx context.Context, socket string, req Request) (Response, error) {
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
	body, err := ReadFrame(c, MaxFrame)
	if err != nil {
		return Response{}, fmt.Errorf("host: the helper's answer to %s (it may have been done): %w", req.ID, err)
	}
	var resp Response
	if err := DecodeStrict(body, &resp); err != nil {
		return Response{}, fmt.Errorf("host: the helper's answer to %s: %w", req.ID, err)
	}
	return resp, nil
}
