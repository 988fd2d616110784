// Package tests holds the checks that span the whole module: the
// dependency direction of DESIGN.md, package documentation, and (as the
// product grows) end-to-end tests of the real binary.
package tests
