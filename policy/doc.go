// Package policy decides, for every call, whether a key may make it: allow,
// deny, confirm, dry_run or breakglass, with reasons a person can read and
// obligations the daemon must honour.
//
// Policies are Rego (OPA v1 syntax), compiled once per change with strict
// mode and with every builtin that reaches the network, the environment or
// a source of randomness or wall-clock time removed. Evaluation errors,
// timeouts, undefined results and malformed decisions all deny. The four
// built-in profiles (read-only, operator, admin, root) are embedded Rego
// with their own Rego tests; custom policies go through draft (compile and
// run their tests), simulate and activate-by-digest, and are stored
// immutably and versioned in the state directory.
//
// The protected-repository guard is part of the input document: the caller
// states whether it ran and what it found, and the engine refuses any
// change the guard flags unless the policy itself asks for break-glass.
//
// The package imports no network code of its own; OPA's network builtins
// are linked but removed from the capabilities every policy compiles with.
package policy
