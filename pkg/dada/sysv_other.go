//go:build !linux

package dada

import "golang.org/x/sys/unix"

// The twin of sysv_linux.go for platforms without Linux SysV IPC: the package builds and
// its pure parts (Header, ParseKey, Config.Validate, Snapshot formatting) work, but every
// call that would touch a ring fails with ErrNotSupported, so Create, Connect and Destroy
// return it (wrapped with what they were doing).

func shmGet(int32, uint64, int) (int, error)   { return -1, ErrNotSupported }
func shmAt(int, uintptr, int) (uintptr, error) { return 0, ErrNotSupported }
func shmDt(uintptr) error                      { return ErrNotSupported }
func shmSize(int) (uint64, error)              { return 0, ErrNotSupported }
func shmRemove(int) error                      { return ErrNotSupported }
func shmLockMem(int) error                     { return ErrNotSupported }
func semGet(int32, int, int) (int, error)      { return -1, ErrNotSupported }
func semRemove(int) error                      { return ErrNotSupported }
func semValue(int, int) (int, error)           { return 0, ErrNotSupported }
func semOps(int, []sembuf) error               { return ErrNotSupported }
func mmapReserve(uintptr) (uintptr, error)     { return 0, ErrNotSupported }
func munmap(uintptr, uintptr) error            { return ErrNotSupported }

func semTry(int, uint16, int16, int16, *unix.Timespec) error { return ErrNotSupported }
func semNow(int, uint16, int16, int16) error                 { return ErrNotSupported }

func populateWrite([]byte) error { return ErrNotSupported }
