package sender

import (
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

func TestSenderConfigValidate(t *testing.T) {
	ok := Config{Mode: wire.ModeWrite, QPs: 4, MsgBytes: 65536, Bytes: 1, Source: NoFillSource{}}
	ok.defaults()
	if err := ok.Validate(); err != nil || ok.AckTimeout != fabric.DefaultAckTimeout {
		t.Fatalf("valid config: %v (ACK timeout %d)", err, ok.AckTimeout)
	}
	for name, c := range map[string]Config{
		"ack timeout":  {Mode: wire.ModeWrite, QPs: 4, MsgBytes: 65536, Bytes: 1, Source: NoFillSource{}, AckTimeout: 31},
		"no length":    {Mode: wire.ModeWrite, QPs: 4, MsgBytes: 65536, Source: NoFillSource{}},
		"no source":    {Mode: wire.ModeWrite, QPs: 4, MsgBytes: 65536, Bytes: 1},
		"qps":          {Mode: wire.ModeWrite, QPs: 65, MsgBytes: 65536, Bytes: 1, Source: NoFillSource{}},
		"post list":    {Mode: wire.ModeWrite, QPs: 4, MsgBytes: 65536, Bytes: 1, Source: NoFillSource{}, PostList: -1},
		"tx depth":     {Mode: wire.ModeWrite, QPs: 4, MsgBytes: 65536, Bytes: 1, Source: NoFillSource{}, TxDepth: -1},
		"pin and cpus": {Mode: wire.ModeWrite, QPs: 4, MsgBytes: 65536, Bytes: 1, Source: NoFillSource{}, Pin: PinCurrent, PostCPUs: []int{0, 1}},
		"cpus > qps":   {Mode: wire.ModeWrite, QPs: 2, MsgBytes: 65536, Bytes: 1, Source: NoFillSource{}, PostCPUs: []int{0, 1, 0}},
		"cpu < 0":      {Mode: wire.ModeWrite, QPs: 2, MsgBytes: 65536, Bytes: 1, Source: NoFillSource{}, PostCPUs: []int{0, -1}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: invalid config accepted", name)
		}
	}
}
