package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ringcap/ringcap/pkg/dada"
)

func init() { register(newRingCmd) }

func newRingCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "ring",
		Short: "Create, inspect, write and read PSRDADA ring buffers (dada_db compatible)",
		// A capture's reader containers get their ring's key in RINGCAP_RING_KEY: -k defaults to it.
		PersistentPreRunE: keyFromEnv,
	}
	c.AddCommand(newRingCreateCmd(), newRingDestroyCmd(), newRingInfoCmd(), newRingMonitorCmd(),
		newRingWriteCmd(), newRingReadCmd(), newRingHeaderCmd())
	return c
}

func addKeyFlag(fs *pflag.FlagSet) *dada.Key {
	k := dada.DefaultKey
	fs.VarP((*keyValue)(&k), "key", "k", "ring key in hexadecimal (header ring uses key+1); default $"+envRingKey+" when set (a capture's readers get it), else")
	return &k
}

// envRingKey holds the key of the ring a RingCapture's reader containers read.
const envRingKey = "RINGCAP_RING_KEY"

// keyFromEnv gives a ring command without -k the key in $RINGCAP_RING_KEY, when set.
func keyFromEnv(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags().Lookup("key")
	v := os.Getenv(envRingKey)
	if f == nil || f.Changed || v == "" {
		return nil
	}
	if err := f.Value.Set(v); err != nil {
		return fmt.Errorf("%s=%q, the default of -k: %w", envRingKey, v, err)
	}
	return nil
}

func newRingCreateCmd() *cobra.Command {
	cfg := dada.DefaultConfig()
	var persist, roundHuge, destroy bool
	c := &cobra.Command{
		Use:   "create",
		Short: "Create a ring and its header ring (like dada_db)",
		Example: "  ringcap ring create -k dada -b 1048576 -n 8 -r 2\n" +
			"  ringcap ring create -k eada -b 2097152 -n 16 --hugepages -l",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if destroy { // dada_db -d
				if err := dada.Destroy(cfg.Key); err != nil {
					return err
				}
				outln(cmd.ErrOrStderr(), "Destroyed DADA data and header blocks")
				return nil
			}
			if roundHuge && cfg.HugePages {
				b, err := dada.RoundToHugePages(cfg.BufSize, cfg.HugePageSize)
				if err != nil {
					return err
				}
				cfg.BufSize = b
			}
			h, err := dada.Create(cfg)
			if err != nil {
				return err
			}
			errw := cmd.ErrOrStderr()
			outf(errw, "Created DADA data block with nbufs=%d bufsz=%d nread=%d\n", cfg.NBufs, cfg.BufSize, cfg.Readers)
			outf(errw, "Created DADA header block with nhdrs = %d, hdrsz = %d bytes, nread=%d\n", dada.Xfers, cfg.HeaderBufSize, cfg.Readers)
			if !persist {
				return h.Close()
			}
			<-cmd.Context().Done()
			if err := h.Destroy(); err != nil {
				return err
			}
			outln(errw, "Destroyed DADA data and header blocks")
			return nil
		},
	}
	fs := c.Flags()
	fs.VarP((*keyValue)(&cfg.Key), "key", "k", "ring key in hexadecimal (header ring uses key+1)")
	fs.Uint64VarP(&cfg.BufSize, "bufsz", "b", cfg.BufSize, "data block size in bytes")
	fs.Uint64VarP(&cfg.NBufs, "nbufs", "n", cfg.NBufs, "number of data blocks")
	fs.Uint64VarP(&cfg.HeaderBufSize, "hdrsz", "a", cfg.HeaderBufSize, "header block size in bytes (>= 4096; 8 header blocks)")
	fs.IntVarP(&cfg.Readers, "readers", "r", cfg.Readers, fmt.Sprintf("number of readers (1..%d)", dada.MaxReaders))
	fs.BoolVarP(&cfg.Lock, "lock", "l", false, "lock the ring in memory (SHM_LOCK)")
	fs.BoolVarP(&cfg.PageIn, "page", "p", false, "zero every block after creation (fault pages in)")
	fs.BoolVar(&cfg.HugePages, "hugepages", false, "back data blocks with huge pages (SHM_HUGETLB); block size must be a multiple of the huge page size")
	fs.Var((*byteSize)(&cfg.HugePageSize), "hugepage-size", "with --hugepages: the huge page size, e.g. 2M or 1G (default: the kernel's, Hugepagesize in /proc/meminfo)")
	fs.BoolVar(&roundHuge, "round", false, "with --hugepages: round the block size up to the huge page size")
	fs.BoolVarP(&persist, "persist", "w", false, "stay until SIGINT/SIGTERM, then destroy the ring")
	fs.BoolVarP(&destroy, "destroy", "d", false, "destroy the ring instead (dada_db -d; same as ring destroy)")
	return c
}

// keyValue adapts a *dada.Key to pflag.
type keyValue dada.Key

func (k *keyValue) String() string { return dada.Key(*k).String() }
func (k *keyValue) Type() string   { return "hexkey" }
func (k *keyValue) Set(s string) error {
	v, err := dada.ParseKey(s)
	if err != nil {
		return err
	}
	*k = keyValue(v)
	return nil
}

func newRingDestroyCmd() *cobra.Command {
	var key *dada.Key
	c := &cobra.Command{
		Use:   "destroy",
		Short: "Remove a ring and its header ring (like dada_db -d)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := dada.Destroy(*key); err != nil {
				return err
			}
			outln(cmd.ErrOrStderr(), "Destroyed DADA data and header blocks")
			return nil
		},
	}
	key = addKeyFlag(c.Flags())
	return c
}

func newRingInfoCmd() *cobra.Command {
	var key *dada.Key
	var asJSON bool
	c := &cobra.Command{
		Use:   "info",
		Short: "Show a ring's geometry, contiguity and shared state (like dada_dbmeminfo and dada_dbxferinfo)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withRing(*key, dada.ConnectOptions{Contiguous: true}, func(h *dada.HDU) error {
				snap, err := h.Snapshot()
				if err != nil {
					return err
				}
				_, contig, reason := h.Data.Contiguous()
				out := &stickyWriter{w: cmd.OutOrStdout()}
				if asJSON {
					err := json.NewEncoder(out).Encode(struct {
						Key              string        `json:"key"`
						Contiguous       bool          `json:"contiguous"`
						ContiguousReason string        `json:"contiguousReason"`
						PageSize         int           `json:"pageSize"`
						Snapshot         dada.Snapshot `json:"snapshot"`
					}{key.String(), contig, reason, h.Data.PageSize(), snap})
					if err != nil {
						return fmt.Errorf("info: %w", err)
					}
					return nil
				}
				outf(out, "data ring %s: nbufs=%d bufsz=%d readers=%d total=%d bytes, page size %d, huge pages %v\n",
					h.Data.Key(), h.Data.NBufs(), h.Data.BufSize(), h.Data.Readers(), h.Data.NBufs()*h.Data.BufSize(), h.Data.PageSize(), h.Data.HugePages())
				outf(out, "contiguous: %v (%s)\n", contig, reason)
				outf(out, "header ring %s: nbufs=%d bufsz=%d\n\n", h.Header.Key(), h.Header.NBufs(), h.Header.BufSize())
				_ = snap.Data.WriteXferInfo(out)
				outln(out)
				_ = snap.Header.WriteXferInfo(out)
				return out.check("info")
			})
		},
	}
	key = addKeyFlag(c.Flags())
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newRingMonitorCmd() *cobra.Command {
	var key *dada.Key
	var interval time.Duration
	var count int
	c := &cobra.Command{
		Use:   "monitor",
		Short: "Print FRE FUL CLR W R per ring and reader once a second (like dada_dbmonitor)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withRing(*key, dada.ConnectOptions{}, func(h *dada.HDU) error {
				out := &stickyWriter{w: cmd.OutOrStdout()}
				snap, err := h.Snapshot()
				if err != nil {
					return err
				}
				_ = snap.WriteMonitorSummary(out)
				outln(out, snap.MonitorHeading())
				t := time.NewTicker(interval)
				defer t.Stop()
				for i := 0; count == 0 || i < count; i++ {
					if i > 0 {
						select {
						case <-cmd.Context().Done():
							return nil
						case <-t.C:
						}
						if snap, err = h.Snapshot(); err != nil {
							return err
						}
					}
					outln(out, snap.MonitorLine())
					if err := out.check("monitor"); err != nil {
						return err
					}
				}
				return out.check("monitor")
			})
		},
	}
	key = addKeyFlag(c.Flags())
	c.Flags().DurationVar(&interval, "interval", time.Second, "time between lines")
	c.Flags().IntVarP(&count, "count", "c", 0, "stop after this many lines (0: until interrupted)")
	return c
}

func newRingHeaderCmd() *cobra.Command {
	var key *dada.Key
	var wait time.Duration
	var unread bool
	c := &cobra.Command{
		Use:   "header",
		Short: "Print the header of the observation the writer wrote last (takes no locks)",
		Long: "Prints the header the writer wrote last: the current observation's, or the last one's once it has\n" +
			"ended, whether or not readers have read it. It waits until the first header is written.\n" +
			"With --unread it prints what dada_header prints instead: the oldest header some reader slot has\n" +
			"not read yet (a slot nobody reads from keeps that at its first unread observation), waiting\n" +
			"until one is pending.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withRing(*key, dada.ConnectOptions{}, func(h *dada.HDU) error {
				ctx := cmd.Context()
				if wait > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, wait)
					defer cancel()
				}
				peek := h.LatestHeader
				if unread {
					peek = h.PeekHeader
				}
				hdr, err := peek(ctx)
				if err != nil {
					return err
				}
				if _, err = cmd.OutOrStdout().Write(hdr); err != nil {
					return fmt.Errorf("write header: %w", err)
				}
				return nil
			})
		},
	}
	key = addKeyFlag(c.Flags())
	c.Flags().DurationVar(&wait, "wait", 0, "give up when no header is there after this long (0: wait until interrupted)")
	c.Flags().BoolVar(&unread, "unread", false, "print the oldest header a reader slot has not read yet (like dada_header)")
	return c
}

// withRing connects to the ring at key, runs fn on it and disconnects.
func withRing(key dada.Key, o dada.ConnectOptions, fn func(h *dada.HDU) error) error {
	h, err := dada.Connect(key, o)
	if err != nil {
		return err
	}
	defer func() { _ = h.Close() }()
	return fn(h)
}

// stickyWriter keeps the first write error, so that a command printing many lines checks
// once whether its output went anywhere.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

// check returns the first write error, saying which command's output failed.
func (s *stickyWriter) check(cmd string) error {
	if s.err != nil {
		return fmt.Errorf("%s: write output: %w", cmd, s.err)
	}
	return nil
}

// outf and outln write command output; a failing terminal is not worth an error (commands
// whose output is their result check it with a stickyWriter).
func outf(w io.Writer, format string, a ...any) { _, _ = fmt.Fprintf(w, format, a...) }
func outln(w io.Writer, a ...any)               { _, _ = fmt.Fprintln(w, a...) }
