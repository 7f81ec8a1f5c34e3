// Package cpost is the C core of the bindings' posting threads (pkg/rdma/verbs, pkg/rdma/ofi):
// cpost.h, a header-only implementation of a single-producer, single-consumer queue, the
// thread's start, sleep and wake-up (futex or eventfd), its stop and its failure record.
// Each binding includes it (#cgo CFLAGS: -I${SRCDIR}/../internal/cpost) and keeps what a
// post is to itself.
//
// The bindings import this package for its side effects only: so that `go mod vendor` and
// module zips keep the header, and so that the go command rebuilds them when it changes
// (it hashes the headers in a package's own directory, not those it finds with -I; Header
// embeds the file, so a change changes this package's build output, which they depend on).
//
// TestCoreUnderThreadSanitizer builds testdata/stress.c with gcc -fsanitize=thread and
// runs it: producers and posting threads with futex and eventfd sleeps, stops while busy
// and failed posts, checking every item arrives once and in order.
package cpost

import _ "embed" // Header

// Header is the text of cpost.h.
//
//go:embed cpost.h
var Header string
