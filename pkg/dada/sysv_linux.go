//go:build linux

package dada

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The SysV IPC and mapping calls a ring is made of. PSRDADA rings are a Linux contract
// (semtimedop, SHM_REMAP, SHM_HUGETLB, /proc/sysvipc); other platforms get sysv_other.go.

func shmGet(key int32, size uint64, flags int) (int, error) {
	id, _, e := unix.Syscall(unix.SYS_SHMGET, uintptr(key), uintptr(size), uintptr(flags))
	if e != 0 {
		return -1, e
	}
	return int(id), nil
}

// shmAt attaches segment id at addr (0: kernel's choice) and returns the address.
func shmAt(id int, addr uintptr, flags int) (uintptr, error) {
	a, _, e := unix.Syscall(unix.SYS_SHMAT, uintptr(id), addr, uintptr(flags))
	if e != 0 {
		return 0, e
	}
	return a, nil
}

func shmDt(addr uintptr) error {
	_, _, e := unix.Syscall(unix.SYS_SHMDT, addr, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func shmCtl(id, cmd int, buf *unix.SysvShmDesc) error {
	_, _, e := unix.Syscall(unix.SYS_SHMCTL, uintptr(id), uintptr(cmd), uintptr(unsafe.Pointer(buf)))
	if e != 0 {
		return e
	}
	return nil
}

func shmSize(id int) (uint64, error) {
	var d unix.SysvShmDesc
	if err := shmCtl(id, ipcStat, &d); err != nil {
		return 0, err
	}
	return d.Segsz, nil
}

func shmRemove(id int) error { return shmCtl(id, ipcRmid, nil) }

// shmLockMem locks segment id in memory (SHM_LOCK).
func shmLockMem(id int) error { return shmCtl(id, shmLock, nil) }

func semGet(key int32, nsems, flags int) (int, error) {
	id, _, e := unix.Syscall(unix.SYS_SEMGET, uintptr(key), uintptr(nsems), uintptr(flags))
	if e != 0 {
		return -1, e
	}
	return int(id), nil
}

func semRemove(id int) error {
	_, _, e := unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, ipcRmid, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func semValue(id, num int) (int, error) {
	v, _, e := unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), uintptr(num), semGetVal, 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(v), nil
}

// semTry performs one semop without blocking longer than timeout (nil: wait forever).
func semTry(id int, num uint16, op int16, flg int16, timeout *unix.Timespec) error {
	b := sembuf{num: num, op: op, flg: flg}
	_, _, e := unix.Syscall6(unix.SYS_SEMTIMEDOP, uintptr(id), uintptr(unsafe.Pointer(&b)), 1,
		uintptr(unsafe.Pointer(timeout)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// semNow performs one semop that cannot block (IPC_NOWAIT is added): EAGAIN when a
// decrement would have waited. A call that never blocks needs none of the Go scheduler's
// system call bookkeeping, so it is a raw system call, about a third cheaper than a semop
// from Go. It serves a decrement's first try, and increments while no goroutine of this
// process waits (semIncrement says why only then).
func semNow(id int, num uint16, op int16, flg int16) error {
	b := sembuf{num: num, op: op, flg: flg | ipcNoWait}
	_, _, e := unix.RawSyscall6(unix.SYS_SEMTIMEDOP, uintptr(id), uintptr(unsafe.Pointer(&b)), 1, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// semOps performs several operations on one set in one atomic semop, none of which may
// wait (IPC_NOWAIT is added to each): a reader clears a block and settles its SEM_UNDO
// adjustment in one step, so that no death between the two leaves them apart.
func semOps(id int, ops []sembuf) error {
	for i := range ops {
		ops[i].flg |= ipcNoWait
	}
	for {
		_, _, e := unix.Syscall6(unix.SYS_SEMTIMEDOP, uintptr(id), uintptr(unsafe.Pointer(&ops[0])), uintptr(len(ops)), 0, 0, 0)
		switch {
		case errors.Is(e, unix.EINTR):
			continue
		case e != 0:
			return semErr(e)
		}
		return nil
	}
}

// mmapReserve reserves n bytes of address space (PROT_NONE, not backed) and returns its
// address; blocks are then attached over it with SHM_REMAP.
func mmapReserve(n uintptr) (uintptr, error) {
	p, err := unix.MmapPtr(-1, 0, nil, n, unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	return uintptr(p), err
}

// munmap unmaps n bytes at addr.
func munmap(addr, n uintptr) error { return unix.MunmapPtr(ptr(addr), n) }

// populateWrite faults in the pages of b for writing (MADV_POPULATE_WRITE, Linux 5.14)
// without changing their contents; on an older kernel it returns an error.
func populateWrite(b []byte) error { return unix.Madvise(b, unix.MADV_POPULATE_WRITE) }
