// Package probe is what rig's three probes — rig respond (the responder),
// rig send (the sender) and rig capture — have in common: the vocabulary
// their configurations share (poll modes, request destinations, the
// description of stamp columns) and their command lines.
//
// Each probe has one command-line type (Respond, Send, Capture) that the
// CLI registers on its flag.FlagSet and parses, that the probe's package
// takes as its input (sender.New, responder.New, capture.New, which Check
// it), and that the round runner fills and turns into arguments (Args)
// for the agent to start the probe with: a flag exists once, with one
// default, one help text and one check, on both sides of the agent. The
// progress lines rig send prints for rig run are part of the same
// contract (FormatProgress, ParseProgress).
//
// The package is a leaf below the probe packages: sender, responder and
// capture import it, never each other.
package probe

// MaxResponders bounds how many responders answer one request stream
// (send and capture --responders; sender.MaxResponders): each one's
// replies get their own slot per request.
const MaxResponders = 64

// MaxResponderID bounds respond --id: far more responders than one request
// stream can have, and small enough for every table's responder column.
const MaxResponderID = 65535
