package status

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// QPCounters are one queue pair's Prometheus counters, looked up by label
// once per session instead of for every message, and what landed on it
// since they were last brought up to date.
type QPCounters struct {
	bytes, messages prometheus.Counter
	newBytes        uint64
	newMessages     uint64
}

// QueuePairs returns the counters of queue pairs 0 to n-1.
func (t *Tracker) QueuePairs(n int) []QPCounters {
	c := make([]QPCounters, n)
	for qp := range c {
		q := strconv.Itoa(qp)
		c[qp] = QPCounters{bytes: t.bytes.WithLabelValues(q), messages: t.messages.WithLabelValues(q)}
	}
	return c
}

// Add notes one message of n bytes landed; Landed counts it.
func (c *QPCounters) Add(n uint64) {
	c.newBytes += n
	c.newMessages++
}

// Landed counts what the queue pairs' counters noted since the last call
// (once per batch of completions, not per message) and clears the notes.
func (t *Tracker) Landed(cs []QPCounters) {
	var total uint64
	for i := range cs {
		c := &cs[i]
		if c.newMessages == 0 {
			continue
		}
		c.bytes.Add(float64(c.newBytes))
		c.messages.Add(float64(c.newMessages))
		total += c.newBytes
		c.newBytes, c.newMessages = 0, 0
	}
	if total == 0 {
		return
	}
	t.mu.Lock()
	t.st.BytesReceived += total
	t.mu.Unlock()
}
