package dada

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Snapshot is a viewer's read-only copy of both rings' shared state (what dada_dbmonitor
// and dada_dbxferinfo show). It takes no locks.
type Snapshot struct {
	Data   RingState `json:"data"`
	Header RingState `json:"header"`
}

// RingState is one ring's sync fields and semaphore values.
type RingState struct {
	Key       Key             `json:"key"`
	NBufs     int             `json:"nbufs"`
	BufSize   int             `json:"bufsz"`
	WBufNext  uint64          `json:"wBufNext"`
	WBufCurr  uint64          `json:"wBufCurr"`
	WState    int32           `json:"wState"`
	WXfer     uint64          `json:"wXfer"`
	SemWrite  int             `json:"semWrite"` // connection semaphore IPCBUF_WRITE (1 = unlocked)
	SemRead   int             `json:"semRead"`  // connection semaphore IPCBUF_READ (free reader slots)
	Readers   []ReaderState   `json:"readers"`
	Slots     [Xfers]XferSlot `json:"slots"`
	OnDevice  int32           `json:"onDevice"`
	HugePages bool            `json:"hugePages"`
}

// ReaderState is one reader slot's sync fields and data semaphores.
type ReaderState struct {
	RBufs   uint64 `json:"rBufs"`
	RState  int32  `json:"rState"`
	RXfer   uint64 `json:"rXfer"`
	SODAck  int    `json:"sodAck"`
	EODAck  int    `json:"eodAck"`
	Full    int    `json:"full"`
	Clear   int    `json:"clear"`
	ConnSem int    `json:"connSem"`
}

// XferSlot is one transfer slot: [s_buf,s_byte] => [e_buf,e_byte] eod.
type XferSlot struct {
	SBuf  uint64 `json:"sBuf"`
	SByte uint64 `json:"sByte"`
	EBuf  uint64 `json:"eBuf"`
	EByte uint64 `json:"eByte"`
	EOD   bool   `json:"eod"`
}

// Snapshot reads both rings' state.
func (h *HDU) Snapshot() (Snapshot, error) {
	if !h.enter() {
		return Snapshot{}, ErrClosed
	}
	defer h.exit()
	d, err := h.Data.state()
	if err != nil {
		return Snapshot{}, err
	}
	hd, err := h.Header.state()
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Data: d, Header: hd}, nil
}

func (r *Ring) state() (RingState, error) {
	s := r.sync
	st := RingState{
		Key: r.key, NBufs: r.nbufs, BufSize: r.bufsz,
		WBufNext: s.wBufNext(), WBufCurr: s.wBufCurr(), WState: s.wState(), WXfer: s.wXfer(),
		OnDevice: s.onDeviceID(), HugePages: r.huge,
	}
	var err error
	if st.SemWrite, err = semValue(r.connSem, semWrite); err != nil {
		return st, fmt.Errorf("read semaphores of ring %s: %w", r.key, semErr(err))
	}
	if st.SemRead, err = semValue(r.connSem, semRead); err != nil {
		return st, fmt.Errorf("read semaphores of ring %s: %w", r.key, semErr(err))
	}
	for i, id := range r.dataSem {
		rs := ReaderState{RBufs: s.rBufs(i), RState: s.rState(i), RXfer: s.rXfer(i)}
		vals := []*int{&rs.SODAck, &rs.EODAck, &rs.Full, &rs.Clear, &rs.ConnSem}
		for num, p := range vals {
			if *p, err = semValue(id, num); err != nil {
				return st, fmt.Errorf("read semaphores of reader %d of ring %s: %w", i, r.key, semErr(err))
			}
		}
		st.Readers = append(st.Readers, rs)
	}
	for x := uint64(0); x < Xfers; x++ {
		st.Slots[x] = XferSlot{SBuf: s.sBuf(x), SByte: s.sByte(x), EBuf: s.eBuf(x), EByte: s.eByte(x), EOD: s.eod(x)}
	}
	return st, nil
}

// WriteMonitorSummary prints dada_dbmonitor's summary of both rings.
func (s Snapshot) WriteMonitorSummary(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "HEADER BLOCK:\nNumber of buffers: %d\nBuffer size: %d\nTotal buffer memory: %s\n",
		s.Header.NBufs, s.Header.BufSize, memSize(s.Header.NBufs*s.Header.BufSize))
	fmt.Fprintf(&b, "DATA BLOCK:\nNumber of readers: %d\nNumber of buffers: %d\nBuffer size: %d\nTotal buffer memory: %s\n\n",
		len(s.Data.Readers), s.Data.NBufs, s.Data.BufSize, memSize(s.Data.NBufs*s.Data.BufSize))
	_, err := io.WriteString(w, b.String())
	return err
}

func memSize(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d KB", n>>10)
}

// MonitorHeading returns dada_dbmonitor's two heading lines (one DATA column group per
// reader, headed DATA0, DATA1, ... when there is more than one).
func (s Snapshot) MonitorHeading() string {
	var l1, l2 strings.Builder
	l1.WriteString("HEADER               ")
	l2.WriteString("FRE FUL CLR  W  R")
	n := len(s.Data.Readers)
	for i := 0; i < n; i++ {
		name := "DATA"
		if n > 1 {
			name = fmt.Sprintf("DATA%d", i)
		}
		if i < n-1 {
			name = fmt.Sprintf("%-27s", name)
		}
		l1.WriteString(name)
		l2.WriteString("    FRE FUL CLR     W     R")
	}
	return l1.String() + "\n" + l2.String()
}

// MonitorLine returns one dada_dbmonitor line: FRE (nbufs - FULL), FUL, CLR, W (w_buf_curr)
// and R (r_bufs) for the header ring's first reader and for each data reader.
func (s Snapshot) MonitorLine() string {
	var b strings.Builder
	hr := ReaderState{}
	if len(s.Header.Readers) > 0 {
		hr = s.Header.Readers[0]
	}
	fmt.Fprintf(&b, "%3d %3d %3d %2d %2d", s.Header.NBufs-hr.Full, hr.Full, hr.Clear, s.Header.WBufCurr, hr.RBufs)
	for _, r := range s.Data.Readers {
		fmt.Fprintf(&b, "    %3d %3d %3d %5d %5d", s.Data.NBufs-r.Full, r.Full, r.Clear, s.Data.WBufCurr, r.RBufs)
	}
	return b.String()
}

// WriteXferInfo prints what dada_dbxferinfo shows for one ring.
func (st RingState) WriteXferInfo(out io.Writer) error {
	w := &strings.Builder{}
	fmt.Fprintf(w, "ring %s: nbufs=%d bufsz=%d w_buf_curr=%d w_buf_next=%d w_state=%s w_xfer=%d write_lock=%d free_reader_slots=%d\n",
		st.Key, st.NBufs, st.BufSize, st.WBufCurr, st.WBufNext, StateName(st.WState), st.WXfer, st.SemWrite, st.SemRead)
	fmt.Fprintln(w, "reader  r_buf   SOD  EOD  FULL  CLEAR  CONN  r_xfer  r_state")
	for i, r := range st.Readers {
		fmt.Fprintf(w, "%6d %6d %5d %4d %5d %6d %5d %7d  %s\n", i, r.RBufs, r.SODAck, r.EODAck, r.Full, r.Clear, r.ConnSem, r.RXfer, StateName(r.RState))
	}
	for x, sl := range st.Slots {
		mark := ""
		if st.WXfer%Xfers == uint64(x) {
			mark += " W"
		}
		for i, r := range st.Readers {
			if r.RXfer%Xfers == uint64(x) {
				mark += fmt.Sprintf(" R%d", i)
			}
		}
		fmt.Fprintf(w, "slot %d: [%d,%d] => [%d,%d] eod=%d%s\n", x, sl.SBuf, sl.SByte, sl.EBuf, sl.EByte, b2u(sl.EOD), mark)
	}
	_, err := io.WriteString(out, w.String())
	return err
}

// PeekHeader returns the oldest header on the header ring that some reader has not yet
// consumed, trimmed at the first NUL, polling until one is pending (like dada_header). It
// takes no locks.
func (h *HDU) PeekHeader(ctx context.Context) ([]byte, error) {
	for {
		hdr, ok, err := h.peekHeader()
		if err != nil || ok {
			return hdr, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for a header on ring %s: %w", h.key, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (h *HDU) peekHeader() ([]byte, bool, error) {
	if !h.enter() {
		return nil, false, ErrClosed
	}
	defer h.exit()
	r, s := h.Header, h.Header.sync
	minR := s.rBufs(0)
	for i := 1; i < r.nreaders; i++ {
		minR = min(minR, s.rBufs(i))
	}
	if s.wBufCurr() <= minR {
		return nil, false, nil
	}
	out := bytes.Clone(r.blocks[minR%uint64(r.nbufs)])
	if i := bytes.IndexByte(out, 0); i >= 0 {
		out = out[:i]
	}
	return out, true, nil
}
