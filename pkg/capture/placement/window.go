package placement

// Filled says what to do with one ring block: mark it filled with Bytes valid
// bytes. Bytes < block size ends the observation (end of data).
type Filled struct {
	Seq   uint64 // block sequence number within the observation
	Index int    // ring index of the block
	Bytes uint64
	// Last is set on the final block of the observation; it carries the
	// end of data even when it is full (an observation that ends on a block
	// boundary ends on that block, never with an extra empty one).
	Last bool
}

// Window tracks the open blocks of one observation: which slices have landed,
// which blocks are complete, and where the stream ends. It is driven by the
// receiver with block openings and landed data; it is not safe for
// concurrent use.
type Window struct {
	g      Geometry
	s      uint64 // slices per block
	open   []*block
	next   uint64 // sequence number of the next block to open
	end    uint64 // stream length once known
	hasEnd bool
	short  uint64 // a slice shorter than its full length marks the end here
	hasSh  bool
	landed uint64   // bytes landed in total
	filled uint64   // blocks handed out by TakeFilled
	spare  []*block // blocks taken out of the window, reused by Open
	out    []Filled // TakeFilled's result, reused
	// Hold keeps the newest full block back while the end of the stream is
	// unknown and nothing has landed after it, so that a stream ending on
	// that block boundary can still end on it (needs a window of >= 2).
	Hold bool
}

type block struct {
	seq     uint64
	index   int
	present []uint64 // bitmap of landed slices
	count   uint64   // slices landed
	bytes   uint64   // bytes landed
}

// New returns an empty window over geometry g.
func New(g Geometry) (*Window, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return &Window{g: g, s: g.SlicesPerBlock()}, nil
}

// Open adds the next block (ring index) to the window and returns its
// sequence number.
func (a *Window) Open(index int) uint64 {
	var b *block
	if n := len(a.spare); n > 0 {
		b, a.spare = a.spare[n-1], a.spare[:n-1]
		clear(b.present)
		*b = block{present: b.present}
	} else {
		b = &block{present: make([]uint64, (a.s+63)/64)}
	}
	b.seq, b.index = a.next, index
	a.open = append(a.open, b)
	a.next++
	return b.seq
}

// dropFront takes the n oldest blocks out of the window, keeping them for
// reuse; the window's array is shifted down so that appends reuse it.
func (a *Window) dropFront(n int) {
	a.spare = append(a.spare, a.open[:n]...)
	a.open = a.open[:copy(a.open, a.open[n:])]
}

// Room is the number of open blocks that can still take data: when it is 0
// the sender cannot make progress until a reader frees a block.
func (a *Window) Room() int {
	n := 0
	for _, b := range a.open {
		if b.bytes < a.expected(b.seq) {
			n++
		}
	}
	return n
}

// Span returns the number of open blocks and the first slice number not
// covered by them.
func (a *Window) Span() (blocks int, endSlice uint64) {
	return len(a.open), a.next * a.s
}

// Index is the ring index of open block seq (which must be open).
func (a *Window) Index(seq uint64) int { return a.open[seq-a.open[0].seq].index }

// Resolve turns the low 32 bits of a slice number (an RDMA immediate) into
// the slice number inside the window.
func (a *Window) Resolve(imm uint32) (uint64, error) {
	if len(a.open) == 0 {
		return 0, errorf("data for slice %d while no block is open", imm)
	}
	base := a.open[0].seq * a.s
	n := base + uint64(imm-uint32(base))
	if n >= a.next*a.s {
		return 0, errorf("slice %d (immediate %d) is outside the open blocks %d..%d", n, imm, a.open[0].seq, a.next-1)
	}
	return n, nil
}

// LandedIn is the number of slices of open block seq that have landed.
func (a *Window) LandedIn(seq uint64) (uint64, error) {
	if len(a.open) == 0 || seq < a.open[0].seq || seq >= a.next {
		return 0, errorf("block %d is not open", seq)
	}
	return a.open[seq-a.open[0].seq].count, nil
}

// Slice is Geometry's Slice with the slices per block computed once: one
// division per call instead of two (a receive loop's per-message cost).
func (a *Window) Slice(n uint64) (block, off, length uint64) {
	block, k := n/a.s, n%a.s
	off = k * a.g.SliceBytes
	return block, off, min(a.g.SliceBytes, a.g.BlockBytes-off)
}

// LandAt records that n bytes starting at stream byte off have arrived; off
// must start a slice.
func (a *Window) LandAt(off, n uint64) error {
	seq, slot, err := a.g.Locate(off)
	if err != nil {
		return err
	}
	return a.Land(seq*a.s+slot, n)
}

// Land records that n bytes of slice sl have arrived.
func (a *Window) Land(sl uint64, n uint64) error {
	seq, k := sl/a.s, sl%a.s
	off := k * a.g.SliceBytes
	full := min(a.g.SliceBytes, a.g.BlockBytes-off)
	if len(a.open) == 0 || seq < a.open[0].seq || seq >= a.next {
		return errorf("slice %d belongs to block %d, which is not open", sl, seq)
	}
	b := a.open[seq-a.open[0].seq]
	if b.present[k/64]&(1<<(k%64)) != 0 {
		return errorf("slice %d arrived twice", sl)
	}
	if n > full {
		return errorf("slice %d carries %d bytes, at most %d fit", sl, n, full)
	}
	if err := a.checkEnd(sl, seq*a.g.BlockBytes+off, n, full); err != nil {
		return err
	}
	b.present[k/64] |= 1 << (k % 64)
	b.count++
	b.bytes += n
	a.landed += n
	return nil
}
