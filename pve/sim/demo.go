package sim

import (
	_ "embed"
	"slices"
)

//go:embed demo.js
var demoSchema []byte

// DemoSchema returns the built-in API schema of the demo, in apidoc.js form
// (schema.Parse reads it): exactly the endpoints the simulator handles, its
// semantic handlers and the directory indexes above them, with their
// parameters, formats, permissions and answer shapes as in PVE 9.1 and
// descriptions written for this project. The QEMU and LXC create and config
// endpoints carry a curated subset of their options. Each call returns a new
// copy.
func DemoSchema() []byte { return slices.Clone(demoSchema) }
