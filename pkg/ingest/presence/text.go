package presence

import (
	"strconv"
	"strings"
)

// String is the record as one line of text: its block, bytes, granules and
// the runs of missing granules, e.g.
//
//	seq=3 expected=65536 received=49152 zero_filled=16384 granule=8192 granules=8 missing_granules=2 missing=1,5
func (r Record) String() string {
	var b strings.Builder
	for _, kv := range []struct {
		k string
		v uint64
	}{{"seq", r.Seq}, {"expected", r.Expected}, {"received", r.Received}, {"zero_filled", r.Expected - r.Received},
		{"granule", r.Granule}, {"granules", r.Granules}, {"missing_granules", r.MissingGranules()}} {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv.k + "=" + strconv.FormatUint(kv.v, 10))
	}
	b.WriteString(" missing=")
	runs := r.Missing()
	if len(runs) == 0 {
		b.WriteString("-")
	}
	for i, run := range runs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(run.First, 10))
		if run.Last != run.First {
			b.WriteString("-" + strconv.FormatUint(run.Last, 10))
		}
	}
	if r.Last {
		b.WriteString(" last")
	}
	return b.String()
}
