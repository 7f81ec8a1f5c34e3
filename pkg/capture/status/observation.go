package status

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/dada"
)

// current is the observation in progress or, once it ended, the last one: what
// /status (currentObservation) and the ringcap_observation_* metrics show. It changes
// once per observation (and its bytes are derived from BytesReceived when read), so
// nothing on the receive path touches it.
type current struct {
	began    bool      // an observation has begun (the metrics appear)
	ended    bool      // it ended (/status leaves it out; the metrics keep its last values)
	number   int       // its number
	base     uint64    // BytesReceived when it began
	bytes    uint64    // bytes landed in it, once it ended
	utcStart string    // its header's UTC_START; empty until the header is in the ring
	start    time.Time // utcStart parsed; zero when not known or not parseable
}

// landed are the bytes that landed in the observation, given BytesReceived now.
func (c *current) landed(received uint64) uint64 {
	if c.ended {
		return c.bytes
	}
	return received - c.base
}

// ObservationBegan records that observation n began: it is the current one from now on.
func (t *Tracker) ObservationBegan(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cur = current{began: true, number: n, base: t.st.BytesReceived}
}

// HeaderWritten records the header of the current observation, now in the ring: its
// main keywords (obsheader.StatusFields) go into the status, and its UTC_START into
// currentObservation and ringcap_observation_start_timestamp_seconds.
func (t *Tracker) HeaderWritten(fields map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st.Header = fields
	t.cur.utcStart, t.cur.start = fields["UTC_START"], time.Time{}
	if s, err := time.Parse(dada.UTCStartLayout, t.cur.utcStart); err == nil {
		t.cur.start = s
	}
}

// observationEnded keeps the bytes of the observation that ended; the caller holds t.mu.
func (t *Tracker) observationEnded() {
	if t.cur.began && !t.cur.ended {
		t.cur.bytes, t.cur.ended = t.cur.landed(t.st.BytesReceived), true
	}
}

// currentDoc is /status's currentObservation: nil between observations; the caller
// holds t.mu.
func (t *Tracker) currentDoc() *statusdoc.CurrentObservation {
	if !t.cur.began || t.cur.ended {
		return nil
	}
	return &statusdoc.CurrentObservation{Number: t.cur.number, Bytes: t.cur.landed(t.st.BytesReceived), UTCStart: t.cur.utcStart}
}

var (
	obsNumberDesc = prometheus.NewDesc("ringcap_observation_number",
		"Number of the observation in progress or, between observations, the last one (its RINGCAP_OBSERVATION); absent before the first.", nil, nil)
	obsBytesDesc = prometheus.NewDesc("ringcap_observation_bytes",
		"Bytes that landed in the ring for the observation in progress so far or, between observations, for the last one.", nil, nil)
	obsStartDesc = prometheus.NewDesc("ringcap_observation_start_timestamp_seconds",
		"UTC_START of the observation in progress or the last one, as Unix time; absent until its header is in the ring.", nil, nil)
)

// observationCollector exports the current observation, read under the tracker's lock
// at each scrape.
type observationCollector struct{ t *Tracker }

// Describe sends the three descriptors.
func (c observationCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- obsNumberDesc
	ch <- obsBytesDesc
	ch <- obsStartDesc
}

// Collect sends the current observation's number, bytes and start, those known.
func (c observationCollector) Collect(ch chan<- prometheus.Metric) {
	c.t.mu.Lock()
	cur, received := c.t.cur, c.t.st.BytesReceived
	c.t.mu.Unlock()
	if !cur.began {
		return
	}
	ch <- prometheus.MustNewConstMetric(obsNumberDesc, prometheus.GaugeValue, float64(cur.number))
	ch <- prometheus.MustNewConstMetric(obsBytesDesc, prometheus.GaugeValue, float64(cur.landed(received)))
	if !cur.start.IsZero() {
		ch <- prometheus.MustNewConstMetric(obsStartDesc, prometheus.GaugeValue, float64(cur.start.Unix()))
	}
}
