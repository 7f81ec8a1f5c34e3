package sender

// inFlight is a posted slice and the send slot holding its data.
type inFlight struct {
	slice uint64
	slot  int
	bytes uint64
}

// sliceFIFO holds the slices in flight on one queue pair, oldest first (a
// queue pair completes its work requests in order).
type sliceFIFO struct {
	buf        []inFlight
	head, size int
}

func newSliceFIFO(n int) sliceFIFO { return sliceFIFO{buf: make([]inFlight, n)} }
func (f *sliceFIFO) len() int      { return f.size }
func (f *sliceFIFO) front() uint64 { return f.buf[f.head].slice }
func (f *sliceFIFO) push(v inFlight) {
	f.buf[f.wrap(f.head+f.size)] = v
	f.size++
}
func (f *sliceFIFO) pop() inFlight {
	v := f.buf[f.head]
	f.head = f.wrap(f.head + 1)
	f.size--
	return v
}
func (f *sliceFIFO) popBack() inFlight {
	f.size--
	return f.buf[f.wrap(f.head+f.size)]
}

// wrap is index i (below twice the capacity) in the ring: a comparison, not a
// division, once a message.
func (f *sliceFIFO) wrap(i int) int {
	if i >= len(f.buf) {
		i -= len(f.buf)
	}
	return i
}

// flight is the send slots of every queue pair: free, or holding a slice in
// flight, and how many work requests went unsignalled.
type flight struct {
	free     [][]int     // free send slots per queue pair
	inq      []sliceFIFO // slices in flight per queue pair
	n        int         // work requests in flight, all queue pairs
	unsig    []int       // unsignalled WRs posted since the last signalled one, per queue pair
	sigEvery int         // signal at least every sigEvery-th WR of a queue pair
}

// newFlight gives each of qps queue pairs txDepth free send slots.
func newFlight(qps, txDepth int) flight {
	f := flight{free: make([][]int, qps), inq: make([]sliceFIFO, qps), unsig: make([]int, qps)}
	// A completion per message costs a wake-up per message; one per quarter
	// of the send queue still frees slots early enough to keep it full.
	f.sigEvery = max(1, txDepth/4)
	for q := range qps {
		for i := range txDepth {
			f.free[q] = append(f.free[q], i)
		}
		f.inq[q] = newSliceFIFO(txDepth)
	}
	return f
}

// lastFree is q's send slot to fill next (false: none is free).
func (f *flight) lastFree(q int) (int, bool) {
	if len(f.free[q]) == 0 {
		return 0, false
	}
	return f.free[q][len(f.free[q])-1], true
}

// take puts e in flight on q in its slot, the last free one; signal says its
// work request is to be signalled (every sigEvery-th).
func (f *flight) take(q int, e inFlight) (signal bool) {
	f.free[q] = f.free[q][:len(f.free[q])-1]
	f.inq[q].push(e)
	f.n++
	if f.unsig[q]++; f.unsig[q] >= f.sigEvery {
		f.unsig[q] = 0
		return true
	}
	return false
}

// signalled notes that q's newest work request is signalled.
func (f *flight) signalled(q int) { f.unsig[q] = 0 }

// retire frees q's slots up to and including slot, which completed (a queue
// pair completes its work requests in order); it returns their bytes.
func (f *flight) retire(q, slot int) (bytes uint64) {
	for fi := &f.inq[q]; fi.len() > 0; {
		e := fi.pop()
		f.free[q] = append(f.free[q], e.slot)
		f.n--
		bytes += e.bytes
		if e.slot == slot {
			break
		}
	}
	return bytes
}

// drop takes q's newest slice back out of flight, its slot free again
// (false: none is in flight).
func (f *flight) drop(q int) (inFlight, bool) {
	fi := &f.inq[q]
	if fi.len() == 0 {
		return inFlight{}, false
	}
	e := fi.popBack()
	f.free[q] = append(f.free[q], e.slot)
	f.n--
	return e, true
}

// oldest is the lowest slice in flight on q, or else its next.
func (f *flight) oldest(q int, next uint64) uint64 {
	if fi := &f.inq[q]; fi.len() > 0 {
		return fi.front()
	}
	return next
}
