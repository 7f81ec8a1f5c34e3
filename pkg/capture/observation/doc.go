// Package observation is one observation in the ring, whatever transport
// fills it: it owns the window of open blocks (package placement), the ring
// worker that opens and hands them out (package ring), the header, the
// observation's byte and block counts and holds, and the order in which its
// parts close (Closers). A receiver starts one per stream, lands data in its
// Window, commits what is complete, attaches its data path (closed before
// the end of the observation is committed, so that nothing writes into a
// block the readers have) and ends it with End.
package observation
