package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/presence"
	"github.com/ringcap/ringcap/pkg/pattern"
)

type ringWriteOpts struct {
	key          *dada.Key
	seed         uint64
	seedSet      bool
	bytes        uint64
	file         string
	observations int
	headerFile   string
	headers      []string
	newStyle     bool
	wait         time.Duration
	fileHeader   string
}

func newRingWriteCmd() *cobra.Command {
	o := &ringWriteOpts{}
	c := &cobra.Command{
		Use:   "write",
		Short: "Write observations into a ring from a file or the deterministic test pattern",
		Long: "Writes each observation as PSRDADA's writers (dada_junkdb, dada_diskdb) do: a header, then the data,\n" +
			"the last block ending it. The header starts from --header-file (else a minimal one: HDR_VERSION 1.0,\n" +
			"INSTRUMENT ringcap, SOURCE test_pattern, NBIT 8, NPOL 1, NDIM 1); ring write then sets\n" +
			"  HDR_SIZE      the header ring's block size (the header's size in bytes)\n" +
			"  OBS_OFFSET    0 (byte offset of the observation's first byte)\n" +
			"  FILE_SIZE     the observation's data bytes, where known (as dada_junkdb and dada_diskdb set it)\n" +
			"  UTC_START     now (YYYY-MM-DD-hh:mm:ss, UTC), unless the header has one\n" +
			"  RINGCAP_SEED  with --seed: the pattern's seed (ringcap ring read --verify SEED)\n" +
			"and last the --header settings. No TRANSFER_SIZE: PSRDADA's dada_dbib would then skip its closing\n" +
			"handshake and dada_ibdb wait forever for the end of the data. See docs/headers.md.\n\n" +
			"-f takes a regular file's bytes (its size when ring write starts, in FILE_SIZE; one that ends sooner\n" +
			"fails the command), or reads any other input (a pipe, FIFO, /dev/stdin, - for standard input, a\n" +
			"device) to its end as one observation, without FILE_SIZE. An empty input or a failed read fails the\n" +
			"command.\n\n" +
			"A PSRDADA file (dada_dbdisk's, ring read --dada-dir's) starts with its header: --file-header auto (the\n" +
			"default) takes a regular file's first HDR_SIZE bytes as the observation's header when they are one\n" +
			"(header text, a first line KEY value, HDR_SIZE present, no smaller than the text and no larger than\n" +
			"the file) and writes the rest as the data; the file's keys are kept (OBS_OFFSET and UTC_START too),\n" +
			"HDR_SIZE and FILE_SIZE set as above, then the --header settings. --file-header yes fails when the file\n" +
			"has no header; no writes the whole file as data.",
		Example: "  ringcap ring write -k dada --seed 7 --bytes 100000000\n" +
			"  ringcap ring write -k dada -f data.raw --header-file obs.hdr\n" +
			"  ringcap ring write -k dada -f 2026-01-02-03:04:05_0000000000000000.000000.dada\n" +
			"  head -c 10000000 /dev/urandom | ringcap ring write -k dada -f -",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.seedSet = cmd.Flags().Changed("seed")
			if o.seedSet == (o.file != "") {
				return errors.New("give exactly one of --seed (pattern) and --file")
			}
			if o.observations < 1 {
				return errors.New("--observations must be at least 1")
			}
			switch o.fileHeader {
			case fileHeaderAuto, fileHeaderYes, fileHeaderNo:
			default:
				return fmt.Errorf("--file-header %q: want auto, yes or no", o.fileHeader)
			}
			return runRingWrite(cmd.Context(), cmd.InOrStdin(), cmd.ErrOrStderr(), o)
		},
	}
	fs := c.Flags()
	o.key = addKeyFlag(fs)
	fs.Uint64Var(&o.seed, "seed", 0, "write the test pattern with this seed (verify with ring read --verify SEED)")
	o.bytes = 64 << 20
	fs.Var((*byteSize)(&o.bytes), "bytes", "bytes per observation with --seed (e.g. 67108864 or 64M)")
	fs.StringVarP(&o.file, "file", "f", "", "write this file's bytes as each observation (- or a pipe: read to its end, one observation)")
	fs.IntVar(&o.observations, "observations", 1, "number of observations to write, holding the write lock")
	fs.StringVar(&o.headerFile, "header-file", "", "ASCII header to start from (else a minimal one)")
	fs.StringArrayVar(&o.headers, "header", nil, "set a header keyword (KEY=VALUE, repeatable)")
	fs.BoolVar(&o.newStyle, "new-style-header", false, "raise end-of-data on the header ring after every header (PSRDADA 1.1.0 dada_client style)")
	fs.DurationVar(&o.wait, "wait", 0, "wait this long for the ring to be created")
	fs.StringVar(&o.fileHeader, "file-header", fileHeaderAuto, "with -f: the file starts with a PSRDADA header (auto: detect it; yes; no)")
	return c
}

// buildHeader builds an observation's header; fileSize < 0 (a stream's size is not known)
// sets no FILE_SIZE.
func buildHeader(o *ringWriteOpts, in *writeInput, hdrSize int, fileSize int64) ([]byte, error) {
	h, err := baseHeader(o, in)
	if err != nil {
		return nil, err
	}
	sets := [][2]string{{"HDR_SIZE", strconv.Itoa(hdrSize)}}
	if _, err := h.OBSOffset(); in == nil || in.header == nil || err != nil {
		sets = append(sets, [2]string{"OBS_OFFSET", "0"})
	}
	if _, ok := h.Get("UTC_START"); !ok {
		sets = append(sets, [2]string{"UTC_START", time.Now().UTC().Format(dada.UTCStartLayout)})
	}
	if o.seedSet {
		sets = append(sets, [2]string{"RINGCAP_SEED", strconv.FormatUint(o.seed, 10)})
	}
	// What dada_junkdb and dada_diskdb set; not TRANSFER_SIZE (docs/headers.md).
	if fileSize >= 0 {
		sets = append(sets, [2]string{"FILE_SIZE", strconv.FormatInt(fileSize, 10)})
	}
	for _, kv := range o.headers {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--header %q: want KEY=VALUE", kv)
		}
		sets = append(sets, [2]string{k, v})
	}
	for _, kv := range sets {
		if err := h.Set(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	return h.Bytes(hdrSize)
}

// baseHeader is the header an observation starts from: the input's own (a PSRDADA file),
// --header-file, or a minimal one.
func baseHeader(o *ringWriteOpts, in *writeInput) (*dada.Header, error) {
	if in != nil && in.header != nil {
		h, err := dada.ParseHeader(in.header)
		if err != nil {
			return nil, fmt.Errorf("header of %s: %w", in.name, err)
		}
		return h, nil
	}
	h := dada.NewHeader()
	if o.headerFile != "" {
		b, err := os.ReadFile(o.headerFile)
		if err != nil {
			return nil, fmt.Errorf("read header file: %w", err)
		}
		if h, err = dada.ParseHeader(b); err != nil {
			return nil, fmt.Errorf("header file %s: %w", o.headerFile, err)
		}
		return h, nil
	}
	_ = h.Set("HDR_VERSION", "1.0")
	_ = h.Set("INSTRUMENT", "ringcap")
	_ = h.Set("SOURCE", "test_pattern")
	_ = h.Set("NBIT", "8")
	_ = h.Set("NPOL", "1")
	_ = h.Set("NDIM", "1")
	return h, nil
}

func runRingWrite(ctx context.Context, stdin io.Reader, errw io.Writer, o *ringWriteOpts) error {
	var in *writeInput
	if o.file != "" {
		var err error
		if in, err = openWriteInput(ctx, o.file, stdin); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		defer in.close()
		if err := in.takeFileHeader(o.fileHeader); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if in.header != nil && o.headerFile != "" {
			return fmt.Errorf("write: %s starts with a PSRDADA header: give --header-file or that (--file-header no), not both", in.name)
		}
		if in.size < 0 && o.observations > 1 {
			return fmt.Errorf("write: --observations %d: %s is not a regular file, so it can be read only once", o.observations, in.name)
		}
	}
	h, err := dada.ConnectWait(ctx, *o.key, dada.ConnectOptions{}, o.wait)
	if err != nil {
		return err
	}
	defer func() { _ = h.Close() }()
	w, err := h.LockWrite(ctx, dada.WriterOptions{NewStyleHeader: o.newStyle})
	if err != nil {
		return err
	}
	defer func() { _ = w.CloseContext(ctx) }()
	fileSize := int64(o.bytes)
	if in != nil {
		fileSize = in.size
	}
	var total, blocks uint64
	start := time.Now()
	for obs := 0; obs < o.observations; obs++ {
		n, nb, err := writeObservation(ctx, w, o, in, obs, fileSize)
		total += n
		blocks += nb
		if err != nil {
			return fmt.Errorf("observation %d: %w", obs, err)
		}
	}
	if err := w.CloseContext(ctx); err != nil {
		return err
	}
	el := time.Since(start).Seconds()
	outf(errw, "write: bytes=%d blocks=%d observations=%d seconds=%.3f rate=%.3fGB/s\n",
		total, blocks, o.observations, el, float64(total)/el/1e9)
	return nil
}

// writeObservation writes observation obs: its header (FILE_SIZE fileSize, none when -1),
// then the pattern or the input.
func writeObservation(ctx context.Context, w *dada.Writer, o *ringWriteOpts, in *writeInput, obs int, fileSize int64) (uint64, uint64, error) {
	hdr, err := buildHeader(o, in, w.HDU().Header.BufSize(), fileSize)
	if err != nil {
		return 0, 0, err
	}
	if err := w.WriteHeaderContext(ctx, hdr); err != nil {
		return 0, 0, err
	}
	if in == nil {
		return writePattern(ctx, w, o.seed, o.bytes)
	}
	if obs > 0 {
		if err := in.rewind(); err != nil {
			return 0, 0, err
		}
	}
	return in.writeObservation(ctx, w)
}

// writePattern fills blocks in place with the pattern; the last block ends the observation.
func writePattern(ctx context.Context, w *dada.Writer, seed, n uint64) (uint64, uint64, error) {
	return writeBlocks(ctx, w, n, func(b []byte, off uint64) error {
		pattern.Fill(b, seed, off)
		return nil
	})
}

// writeFrom writes n bytes of r (named name in errors) as one observation, read straight
// into each block, one read per block (a regular file fills it in one read), the last
// block ending the observation.
func writeFrom(ctx context.Context, w *dada.Writer, r io.Reader, name string, n uint64) (uint64, uint64, error) {
	return writeBlocks(ctx, w, n, func(b []byte, off uint64) error {
		if k, err := io.ReadFull(r, b); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return fmt.Errorf("read %s: it ended at byte %d, short of the %d bytes it had when ring write started", name, off+uint64(k), n)
			}
			return readFailed(ctx, name, off+uint64(k), err)
		}
		return nil
	})
}

// writeBlocks writes an observation of n bytes, each block filled in place by fill (its
// bytes and their offset in the observation); the block holding byte n-1 ends it (no
// empty block after exactly whole blocks), and an empty observation is an end of data.
func writeBlocks(ctx context.Context, w *dada.Writer, n uint64, fill func(b []byte, off uint64) error) (uint64, uint64, error) {
	if n == 0 {
		return 0, 0, w.EndOfDataContext(ctx)
	}
	var off, blocks uint64
	for off < n {
		b, err := w.OpenBlock(ctx)
		if err != nil {
			return off, blocks, err
		}
		c := min(uint64(len(b.Data)), n-off)
		if err := fill(b.Data[:c], off); err != nil {
			return off, blocks, err
		}
		off += c
		blocks++
		if off == n {
			err = w.MarkFilledEOD(int(c))
		} else {
			err = w.MarkFilled(int(c))
		}
		if err != nil {
			return off, blocks, err
		}
	}
	return off, blocks, nil
}

type ringReadOpts struct {
	key       *dada.Key
	wait      time.Duration
	seed      uint64
	verify    bool
	out       string
	headerOut string
	single    bool
	dadaDir   string
	presence  io.Writer // --presence: where the records go as text (nil: not a presence ring)
}

type readStats struct{ bytes, blocks, observations, mismatches uint64 }

func newRingReadCmd() *cobra.Command {
	o := &ringReadOpts{}
	var presenceText bool
	c := &cobra.Command{
		Use:   "read",
		Short: "Read observations from a ring into a file or verify the test pattern",
		Long: "Takes a reader slot and reads observations until interrupted (or one with -s). Prints a final line\n" +
			"read: bytes=N blocks=N observations=N mismatches=N and exits non-zero on any mismatch.\n\n" +
			"--dada-dir DIR writes PSRDADA files as dada_dbdisk does: per observation, files named\n" +
			"UTC_START_OBS_OFFSET.FILE_NUMBER.dada (OBS_OFFSET 16 digits, FILE_NUMBER 6), each the header\n" +
			"(HDR_SIZE bytes; OBS_OFFSET, FILE_SIZE and FILE_NUMBER for that file) then up to FILE_SIZE data\n" +
			"bytes (no FILE_SIZE: 10 s at BYTES_PER_SECOND). A file is written as NAME.part and renamed when\n" +
			"complete and synced; a failure (a full disk) fails the command with the observation byte and\n" +
			"leaves the .part file, which a ring read resuming the observation continues.",
		Example: "  ringcap ring read -k dada --verify 7 -s\n  ringcap ring read -k dada --wait 30s -o capture.raw\n" +
			"  ringcap ring read -k dada --dada-dir /data",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.verify = cmd.Flags().Changed("verify")
			if presenceText {
				o.presence = cmd.OutOrStdout()
			}
			return runRingRead(cmd.Context(), cmd.ErrOrStderr(), o)
		},
	}
	fs := c.Flags()
	o.key = addKeyFlag(fs)
	fs.DurationVar(&o.wait, "wait", 0, "retry this long until the ring exists")
	fs.Uint64Var(&o.seed, "verify", 0, "verify every byte against the test pattern with this seed")
	fs.StringVarP(&o.out, "output", "o", "", "append the data of every observation to this file")
	fs.StringVar(&o.headerOut, "header-out", "", "write the last header read to this file")
	fs.BoolVarP(&o.single, "single", "s", false, "exit after one observation (like dada_dbdisk -s)")
	fs.StringVar(&o.dadaDir, "dada-dir", "", "write each observation as PSRDADA files in this directory, as dada_dbdisk -D does")
	fs.BoolVar(&presenceText, "presence", false, "the ring is a presence ring (recv --presence-key): print each block's record as a line of text on stdout")
	return c
}

func runRingRead(ctx context.Context, errw io.Writer, o *ringReadOpts) (err error) {
	if o.dadaDir != "" {
		if err := checkDadaDir(o.dadaDir); err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
	h, err := dada.ConnectWait(ctx, *o.key, dada.ConnectOptions{}, o.wait)
	if err != nil {
		return err
	}
	defer func() { _ = h.Close() }()
	out, err := openReadOutput(o.out)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if out != nil {
		defer func() {
			if cerr := out.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}()
	}
	r, err := h.LockRead(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	to := sinks{out, nil}
	if o.dadaDir != "" {
		to.disk = newDadaDir(o.dadaDir, h.Header.BufSize())
		defer to.disk.abort()
	}
	var st readStats
	defer func() {
		outf(errw, "read: bytes=%d blocks=%d observations=%d mismatches=%d\n", st.bytes, st.blocks, st.observations, st.mismatches)
		if err == nil && st.mismatches > 0 {
			err = fmt.Errorf("%d blocks did not match the pattern with seed %d", st.mismatches, o.seed)
		}
	}()
	return readObservations(ctx, errw, r, o, to, &st)
}

// openReadOutput opens --output write-only (nil for none): os.Create opens O_RDWR, which
// makes a pipe (-o /dev/stdout) its own reader, so a consumer that leaves never ends the
// write (no EPIPE).
func openReadOutput(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
}

// readObservations reads observation after observation into to until the context ends
// between two of them, or after one with --single.
func readObservations(ctx context.Context, errw io.Writer, r *dada.Reader, o *ringReadOpts, to sinks, st *readStats) error {
	resumed := sayResumed(errw, r)
	for {
		hdr, err := r.ReadHeader(ctx)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil // interrupted between observations
			}
			return err
		}
		if st.observations > 0 {
			resumed = 0 // only the first observation can be one taken over
		}
		offset, err := startObservation(hdr, o, to, resumed)
		if err != nil {
			return fmt.Errorf("observation %d: %w", st.observations, err)
		}
		if err := readObservation(ctx, errw, r, o, to, offset, st); err != nil {
			return err
		}
		st.observations++
		if err := r.Reset(); err != nil {
			return err
		}
		if o.single {
			return nil
		}
	}
}

// sayResumed says whether LockRead took over an observation in progress, and returns the
// bytes of it the earlier reader consumed (0: none taken over).
func sayResumed(errw io.Writer, r *dada.Reader) uint64 {
	res, ok := r.Resumed()
	if !ok {
		return 0
	}
	how := "closed"
	if res.Killed {
		how = "was killed"
	}
	outf(errw, "read: resuming the observation in progress at byte %d: slot %d's reader %s there\n", res.Offset, res.Slot, how)
	return res.Offset
}

// startObservation handles an observation's header: --header-out, --dada-dir (resumed: the
// bytes of it an earlier reader consumed). It returns the header's OBS_OFFSET (0 if none).
func startObservation(hdr []byte, o *ringReadOpts, to sinks, resumed uint64) (uint64, error) {
	if o.headerOut != "" {
		if err := os.WriteFile(o.headerOut, hdr, 0o644); err != nil {
			return 0, fmt.Errorf("write header: %w", err)
		}
	}
	if o.presence != nil && !presence.IsPresenceHeader(hdr) {
		return 0, fmt.Errorf("--presence: the header has no %s %s: not a presence ring", presence.KeyFormat, presence.FormatName)
	}
	var offset uint64
	if ph, err := dada.ParseHeader(hdr); err == nil {
		if v, err := ph.OBSOffset(); err == nil {
			offset = v
		}
	}
	if to.disk != nil {
		if err := to.disk.begin(hdr, resumed); err != nil {
			return 0, err
		}
	}
	return offset, nil
}

// sinks are where ring read writes the data it reads (each may be nil).
type sinks struct {
	out  *os.File
	disk *dadaDir
}

func readObservation(ctx context.Context, errw io.Writer, r *dada.Reader, o *ringReadOpts, to sinks, offset uint64, st *readStats) error {
	var n uint64
	for {
		b, err := r.NextBlock(ctx)
		if errors.Is(err, io.EOF) {
			if to.disk != nil {
				return to.disk.end()
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("observation %d: %w", st.observations, err)
		}
		if err := printPresence(o.presence, b.Data); err != nil {
			return fmt.Errorf("observation %d block %d: %w", st.observations, b.Seq, err)
		}
		if o.verify {
			if bad, ok := pattern.Verify(b.Data, o.seed, offset+n); !ok {
				st.mismatches++
				if st.mismatches <= 10 {
					outf(errw, "read: mismatch in observation %d block %d at stream byte %d\n", st.observations, b.Seq, offset+n+uint64(bad))
				}
			}
		}
		if to.out != nil {
			if _, err := to.out.Write(b.Data); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		}
		if to.disk != nil {
			if err := to.disk.write(b.Data); err != nil {
				return fmt.Errorf("observation %d: %w", st.observations, err)
			}
		}
		n += uint64(len(b.Data))
		st.bytes += uint64(len(b.Data))
		st.blocks++
		if err := r.MarkCleared(); err != nil {
			return err
		}
	}
}
