package dada

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// Layout of PSRDADA's ipcsync_t on x86_64 (the post-Nov-2018 layout, 528 bytes), followed in
// the same segment by count[nbufs] (char) and shmkey[nbufs] (key_t, unaligned).
const (
	offSemkeyConnect = 0
	offSemkeyData    = 4
	offNBufs         = 40
	offBufSize       = 48
	offWBufNext      = 56
	offWBufCurr      = 64
	offWState        = 72
	offWXfer         = 80
	offRBufs         = 88
	offRStates       = 152
	offRXfers        = 184
	offNReaders      = 248
	offSBuf          = 256
	offSByte         = 320
	offEOD           = 384
	offEBuf          = 392
	offEByte         = 456
	offOnDeviceID    = 520
	syncStructSize   = 528

	// MaxReaders is IPCBUF_READERS, the size of the per-reader arrays in the sync struct.
	// ringcap allows 1..MaxReaders readers (dada_db allows 1..5).
	MaxReaders = 8
	// Xfers is IPCBUF_XFERS: transfer slots in the sync struct, and the header-ring depth.
	Xfers = 8
	// MaxNBufs keeps semaphore counts within SEMVMX (32767) and semop's short.
	MaxNBufs = 32767
	// keyIncrement separates the keys of one ring's objects (IPCBUF key arithmetic).
	keyIncrement = 0x10000
)

// Process states stored in w_state and r_states[i].
const (
	stateDiscon  = 0
	stateViewer  = 1
	stateWriter  = 2
	stateWriting = 3
	stateWChange = 4
	stateReader  = 5
	stateReading = 6
	stateRStop   = 7
)

var stateNames = map[int32]string{
	0: "DISCON", 1: "VIEWER", 2: "WRITER", 3: "WRITING", 4: "WCHANGE",
	5: "READER", 6: "READING", 7: "RSTOP", 8: "VIEWING", 9: "VSTOP",
}

// StateName names a PSRDADA process state value.
func StateName(s int32) string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return "UNKNOWN"
}

// syncSize is the size of a ring's sync segment.
func syncSize(nbufs uint64) uint64 { return syncStructSize + 5*nbufs }

// syncSeg gives typed access to an attached sync segment. Fields other processes write are
// read with atomic loads; the semaphore operations around them are the memory barriers.
type syncSeg struct {
	base unsafe.Pointer
	size uint64
}

func (s syncSeg) p64(off uintptr) *uint64 { return (*uint64)(unsafe.Add(s.base, off)) }
func (s syncSeg) p32(off uintptr) *int32  { return (*int32)(unsafe.Add(s.base, off)) }
func (s syncSeg) bytes() []byte           { return unsafe.Slice((*byte)(s.base), s.size) }

func (s syncSeg) u64(off uintptr) uint64       { return atomic.LoadUint64(s.p64(off)) }
func (s syncSeg) setU64(off uintptr, v uint64) { atomic.StoreUint64(s.p64(off), v) }
func (s syncSeg) i32(off uintptr) int32        { return atomic.LoadInt32(s.p32(off)) }
func (s syncSeg) setI32(off uintptr, v int32)  { atomic.StoreInt32(s.p32(off), v) }

func (s syncSeg) nbufs() uint64                { return s.u64(offNBufs) }
func (s syncSeg) bufsz() uint64                { return s.u64(offBufSize) }
func (s syncSeg) nReaders() int                { return int(uint32(s.i32(offNReaders))) }
func (s syncSeg) semkeyConnect() int32         { return s.i32(offSemkeyConnect) }
func (s syncSeg) semkeyData(i int) int32       { return s.i32(offSemkeyData + 4*uintptr(i)) }
func (s syncSeg) wBufNext() uint64             { return s.u64(offWBufNext) }
func (s syncSeg) wBufCurr() uint64             { return s.u64(offWBufCurr) }
func (s syncSeg) wState() int32                { return s.i32(offWState) }
func (s syncSeg) wXfer() uint64                { return s.u64(offWXfer) }
func (s syncSeg) rBufs(i int) uint64           { return s.u64(offRBufs + 8*uintptr(i)) }
func (s syncSeg) rState(i int) int32           { return s.i32(offRStates + 4*uintptr(i)) }
func (s syncSeg) rXfer(i int) uint64           { return s.u64(offRXfers + 8*uintptr(i)) }
func (s syncSeg) sBuf(x uint64) uint64         { return s.u64(offSBuf + 8*uintptr(x)) }
func (s syncSeg) sByte(x uint64) uint64        { return s.u64(offSByte + 8*uintptr(x)) }
func (s syncSeg) eBuf(x uint64) uint64         { return s.u64(offEBuf + 8*uintptr(x)) }
func (s syncSeg) eByte(x uint64) uint64        { return s.u64(offEByte + 8*uintptr(x)) }
func (s syncSeg) setWBufNext(v uint64)         { s.setU64(offWBufNext, v) }
func (s syncSeg) setWBufCurr(v uint64)         { s.setU64(offWBufCurr, v) }
func (s syncSeg) setWState(v int32)            { s.setI32(offWState, v) }
func (s syncSeg) setWXfer(v uint64)            { s.setU64(offWXfer, v) }
func (s syncSeg) setRBufs(i int, v uint64)     { s.setU64(offRBufs+8*uintptr(i), v) }
func (s syncSeg) setRState(i int, v int32)     { s.setI32(offRStates+4*uintptr(i), v) }
func (s syncSeg) setRXfer(i int, v uint64)     { s.setU64(offRXfers+8*uintptr(i), v) }
func (s syncSeg) setSBuf(x, v uint64)          { s.setU64(offSBuf+8*uintptr(x), v) }
func (s syncSeg) setSByte(x, v uint64)         { s.setU64(offSByte+8*uintptr(x), v) }
func (s syncSeg) setEBuf(x, v uint64)          { s.setU64(offEBuf+8*uintptr(x), v) }
func (s syncSeg) setEByte(x, v uint64)         { s.setU64(offEByte+8*uintptr(x), v) }
func (s syncSeg) eod(x uint64) bool            { return s.byteAt(offEOD+uintptr(x)) != 0 }
func (s syncSeg) setEOD(x uint64, v bool)      { s.setByte(offEOD+uintptr(x), b2u(v)) }
func (s syncSeg) count(b uint64) uint8         { return s.byteAt(syncStructSize + uintptr(b)) }
func (s syncSeg) setCount(b uint64, v uint8)   { s.setByte(syncStructSize+uintptr(b), v) }
func (s syncSeg) byteAt(off uintptr) uint8     { return *(*uint8)(unsafe.Add(s.base, off)) }
func (s syncSeg) setByte(off uintptr, v uint8) { *(*uint8)(unsafe.Add(s.base, off)) = v }
func (s syncSeg) onDeviceID() int32            { return s.i32(offOnDeviceID) }
func (s syncSeg) shmKeyOff(b uint64) uint64    { return syncStructSize + s.nbufs() + 4*b }
func (s syncSeg) shmKey(b uint64) int32 {
	return int32(binary.LittleEndian.Uint32(s.bytes()[s.shmKeyOff(b):]))
}
func (s syncSeg) setShmKey(b uint64, k int32) {
	binary.LittleEndian.PutUint32(s.bytes()[s.shmKeyOff(b):], uint32(k))
}
func (s syncSeg) setSemkeyData(i int, k int32) { s.setI32(offSemkeyData+4*uintptr(i), k) }
func (s syncSeg) setSemkeyConnect(k int32)     { s.setI32(offSemkeyConnect, k) }
func (s syncSeg) setNReaders(n int)            { s.setI32(offNReaders, int32(n)) }
func (s syncSeg) setOnDeviceID(v int32)        { s.setI32(offOnDeviceID, v) }
func (s syncSeg) setGeometry(nbufs, bufsz uint64) {
	s.setU64(offNBufs, nbufs)
	s.setU64(offBufSize, bufsz)
}

func b2u(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}
