// Package changes owns the engines of the change contract
// (docs/changes.md) that the tools, the daemon and the host CLI share:
// what the journal's rows of an operation mean, and what PVE's own
// evidence says about them.
//
// Reconciliation settles an operation whose outcome the daemon does not
// know (an answer lost on the way back, or an intent left open by a
// crash) from native evidence only: the task its receipt names, a task in
// PVE's task index that matches it (node, type, guest, token, start
// time), the configuration's current digest and values for a config
// edit, the guest's existence for a create or a destroy. Absence of
// evidence is not success: an operation stays unknown until evidence, or
// a person at the host, settles it, and every verdict is a journal
// resolution row with the evidence that led to it.
//
// Undo (Undoer) takes an operation back field by field: a field is set
// back to its value before the operation (or deleted, when the operation
// added it) only if its value now is the one the operation left and
// nothing the journal saw of the configuration since, nor PVE's task
// index for the guest, shows that anyone changed it; otherwise it is a
// conflict, explained by that evidence, and the undo sends nothing. There
// is no force.
package changes
