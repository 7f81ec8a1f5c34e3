package udp

import "time"

// DefaultGather is the longest a receive loop lets datagrams gather in its socket before it
// reads them (Config.Gather).
const DefaultGather = 2 * time.Millisecond

const (
	// minGathered is the fewest datagrams worth a sleep: at a slower rate a sleep before the
	// read adds a wake-up instead of saving one.
	minGathered = 4
	// minGatherSleep is the shortest sleep worth taking; the kernel's timer slack (50 µs)
	// blurs shorter ones.
	minGatherSleep = 50 * time.Microsecond
	// bufferShare: a sleep may fill 1/bufferShare of the socket's receive buffer; the rest
	// absorbs a stream that speeds up, or a sleep that overruns.
	bufferShare = 4
	// datagramOverhead is what the kernel is taken to charge a socket's buffer per datagram
	// beyond twice its payload (its sk_buff and the slack of the page it lands in): a guess
	// on the safe side of what loopback and NIC drivers charge.
	datagramOverhead = 1024
	// rateWindow is the least time the arrival rate is measured over: a burst read in two
	// calls, or a read just after a full one, does not make a rate of its own.
	rateWindow = 10 * time.Millisecond
)

// gatherer decides how long a receive loop sleeps before its next read. A stream that
// fills less than a batch between two reads would otherwise wake the loop for every datagram
// or two, and each wake-up is a thread switch that costs more than the datagrams' copy. It
// measures the arrival rate from the reads themselves (datagrams read over at least
// rateWindow) and sleeps long enough for a batch to arrive (target), never longer than
// max; after a full batch (more may wait), or on a stream too slow to gather minGathered
// datagrams in max, it reads at once. A sender that sends in bursts (spead2_send sends a
// heap at a time) is read a burst or two per wake-up once the sleep spans its period. Its
// sleeps hold at most a batch in the socket, and never more datagrams (of the window's mean
// size) than a quarter of the socket's receive buffer takes.
type gatherer struct {
	max    time.Duration // 0: never sleep
	batch  int
	buffer int       // the socket's receive buffer, bytes (0: unknown, no limit)
	since  time.Time // when the current rate window began
	count  int       // datagrams read in it
	bytes  uint64    // their bytes
	rate   float64   // datagrams per second over the last window; 0 until one ended
	target int       // datagrams a sleep gathers: the batch, or fewer when the buffer is small
	full   bool      // the previous read filled the batch
}

// newGatherer starts a gatherer for reads of up to batch datagrams from a socket with a
// receive buffer of buffer bytes, sleeping at most max (max ≤ 0 never sleeps).
func newGatherer(max time.Duration, batch, buffer int, now time.Time) *gatherer {
	return &gatherer{max: max, batch: batch, buffer: buffer, since: now, target: batch}
}

// observe records a read that returned n datagrams of bytes in all at now.
func (g *gatherer) observe(now time.Time, n int, bytes uint64) {
	g.full = n >= g.batch
	g.count += n
	g.bytes += bytes
	if dt := now.Sub(g.since); dt >= rateWindow {
		g.rate = float64(g.count) / dt.Seconds()
		g.target = g.batch
		if g.buffer > 0 && g.count > 0 {
			perDatagram := 2*g.bytes/uint64(g.count) + datagramOverhead
			g.target = min(g.batch, int(uint64(g.buffer/bufferShare)/perDatagram))
		}
		g.since, g.count, g.bytes = now, 0, 0
	}
}

// sleep is how long to sleep before the next read: 0 reads at once (and a read that finds
// nothing then waits for the next datagram).
func (g *gatherer) sleep() time.Duration {
	if g.max <= 0 || g.full || g.target < minGathered || g.rate*g.max.Seconds() < minGathered {
		return 0
	}
	d := time.Duration(float64(g.target) / g.rate * float64(time.Second))
	if d > g.max {
		d = g.max
	}
	if d < minGatherSleep {
		return 0
	}
	return d
}
