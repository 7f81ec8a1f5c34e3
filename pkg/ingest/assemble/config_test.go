package assemble

import (
	"context"
	"testing"
)

// A configuration that cannot assemble a stream is refused before any
// worker starts.
func TestConfigValidate(t *testing.T) {
	m := &memWriter{blocks: [][]byte{make([]byte, 8), make([]byte, 8)}}
	good := Config{Writer: m, Block: func(i int) []byte { return m.blocks[i] }, BlockBytes: 8, RingBlocks: 2, Window: 2}
	if err := good.Validate(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	for name, change := range map[string]func(*Config){
		"no writer":         func(c *Config) { c.Writer = nil },
		"no blocks":         func(c *Config) { c.Block = nil },
		"empty blocks":      func(c *Config) { c.BlockBytes = 0 },
		"no window":         func(c *Config) { c.Window = 0 },
		"window > ring":     func(c *Config) { c.Window = 3 },
		"negative MaxAhead": func(c *Config) { c.MaxAhead = -1 },
	} {
		c := good
		change(&c)
		if _, err := New(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
