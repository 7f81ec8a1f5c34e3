// Package rc is the receive side of the RC transport over the fabric seam
// (package fabric): per queue pair, the receive work requests it posts (one
// per slice in send mode, scatter-less ones for the write-mode immediates),
// the grants that tell a send-mode sender how far it may send, and the
// landing of work completions into an observation's placement window. The
// handshake and the credits that name free blocks to a write-mode sender
// travel over the control connection (package wire); the session in package
// capture drives both.
package rc
