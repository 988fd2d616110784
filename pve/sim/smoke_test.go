package sim

import (
	"context"
	"testing"
)

func TestSmoke(t *testing.T) {
	e := newEnv(t)
	c := e.client("root@pam!sim")
	var v map[string]any
	if err := c.Get(context.Background(), "/version", nil, &v); err != nil {
		t.Fatal(err)
	}
	t.Logf("%v %+v", v, e.sim.Coverage())
}
