package dada

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SysV IPC constants (Linux, x86_64). golang.org/x/sys/unix has the shm calls but no
// semaphore wrappers, so semaphores go through raw syscalls (sysv_linux.go; on other
// platforms sysv_other.go, whose calls fail with ErrNotSupported).
const (
	ipcCreat  = 0o1000
	ipcExcl   = 0o2000
	ipcNoWait = 0o4000
	semUndo   = 0x1000
	ipcRmid   = 0
	ipcStat   = 2
	semGetVal = 12
	shmLock   = 11
	shmRemap  = 0o40000
	shmHuge   = 0o4000
	perm      = 0o666

	// semPoll bounds each blocking semtimedop so that a context can cancel the wait.
	semPoll = 100 * time.Millisecond
)

// sembuf is struct sembuf: {unsigned short sem_num; short sem_op; short sem_flg}.
type sembuf struct {
	num uint16
	op  int16
	flg int16
}

// semOpClosing performs one semaphore operation, waiting as long as it takes unless ctx is
// cancelled. An increment never waits: one semop. A decrement first tries without waiting
// (semNow: a ring that keeps up finds its decrements ready); only one that must wait goes
// on to short semtimedop calls, so cancellation is noticed within semPoll. A removed
// semaphore set ends the wait with ErrRingRemoved. It also gives up with ErrClosed once
// *closing (if not nil) is set.
func semOpClosing(ctx context.Context, closing *atomic.Bool, id int, num uint16, op int16, flg int16) error {
	if op > 0 {
		return semIncrement(id, num, op, flg)
	}
	err := semNow(id, num, op, flg)
	if err == nil || !errors.Is(err, unix.EAGAIN) || flg&ipcNoWait != 0 {
		return semErr(err)
	}
	return semWait(ctx, closing, id, num, op, flg)
}

// semWaiters counts this process's goroutines blocked in semWait.
var semWaiters atomic.Int32

// semIncrement performs an increment, which never blocks. While no goroutine of this
// process waits on a semaphore it is a raw system call (semNow), skipping the scheduler's
// system call bookkeeping: the waiters it may wake are other processes (PSRDADA readers),
// whose threads need nothing of ours. While one does, it is an ordinary system call, so
// that the woken waiter's thread can take this one's P (with few Ps, raw increments
// halved the receive engine's speed against a reader in the same process). Reading the
// count races with a waiter starting; the cost of losing that race is speed, not
// correctness.
func semIncrement(id int, num uint16, op int16, flg int16) error {
	for {
		var err error
		if semWaiters.Load() == 0 {
			err = semNow(id, num, op, flg)
		} else {
			err = semTry(id, num, op, flg, nil)
		}
		if !errors.Is(err, unix.EINTR) {
			return semErr(err)
		}
	}
}

// semWait waits for a decrement in semPoll steps, checking ctx and *closing between them.
func semWait(ctx context.Context, closing *atomic.Bool, id int, num uint16, op int16, flg int16) error {
	semWaiters.Add(1)
	defer semWaiters.Add(-1)
	ts := unix.NsecToTimespec(int64(semPoll))
	for {
		err := semTry(id, num, op, flg, &ts)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			if ctx != nil {
				if cerr := ctx.Err(); cerr != nil {
					return cerr
				}
			}
			if closing != nil && closing.Load() {
				return ErrClosed
			}
		default:
			return semErr(err)
		}
	}
}

func semErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EIDRM) || errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%w: %w", ErrRingRemoved, err)
	}
	return err
}

// ptr turns an address outside the Go heap (an attached segment or a mapping) into a
// pointer. The garbage collector ignores such pointers.
func ptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }
