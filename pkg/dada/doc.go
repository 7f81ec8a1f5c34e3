// Package dada is a PSRDADA-compatible shared-memory ring buffer in pure Go (no cgo).
//
// A HDU (header/data unit) pairs a data ring at SysV key K with a header ring at K+1, as
// PSRDADA's dada_hdu does. Rings this package creates and writes are indistinguishable from
// rings made by dada_db and filled by PSRDADA writers, and it reads rings PSRDADA writers
// fill: the sync segment layout, key arithmetic, permissions, semaphore sets and initial
// values, the writer and reader sequences (SOD/EOD, back-pressure by the slowest reader) and
// the use of SEM_UNDO follow the contract in psrdada-contract.md.
//
// Beyond PSRDADA, Connect can map a ring's blocks back to back in one address range
// (ConnectOptions.Contiguous) so the whole ring can be used, and registered for RDMA, as one
// region, and Create can back data blocks with huge pages (Config.HugePages).
//
// Also beyond PSRDADA, a reader that leaves its slot in the middle of an observation (closed
// or killed) does not wedge the ring: the slot's next Reader resumes the observation, its
// header with OBS_OFFSET at the byte where it resumes (Reader.Resumed, resume.go).
//
// Rings hold 1..MaxReaders (8) readers; dada_db allows 1..5.
//
// Platforms: rings need Linux SysV IPC; the system calls are in sysv_linux.go (//go:build
// linux). On other Unix platforms the package builds with the same API (sysv_other.go) and
// Create, Connect and Destroy fail with ErrNotSupported; Header, ParseKey and
// Config.Validate work everywhere.
//
// Handles: Create and Connect return a HDU; Close detaches and never removes anything;
// Destroy (or the package-level Destroy) removes every IPC object. Blocking waits take a
// context and are cancelled within 100 ms.
package dada
