package endpoint

import (
	"strings"
	"testing"
)

func TestWithEnv(t *testing.T) {
	env := map[string]string{EnvDevice: "rxe1", EnvPort: "2", EnvGIDIndex: "3"}
	cases := []struct {
		name string
		req  Request
		env  map[string]string
		want Request
		err  string
	}{
		{"flags win", Request{Device: "rxe0", Port: 1, GIDIndex: 0, Source: "flags"}, env, Request{Device: "rxe0", Port: 1, GIDIndex: 0, Source: "flags"}, ""},
		{"env fills the automatic fields", Request{GIDIndex: -1, Source: "flags"}, env, Request{Device: "rxe1", Port: 2, GIDIndex: 3, Source: "the device plugin environment"}, ""},
		{"no env", Request{GIDIndex: -1, Source: "flags"}, nil, Request{GIDIndex: -1, Source: "flags"}, ""},
		{"bad port", Request{GIDIndex: -1}, map[string]string{EnvPort: "one"}, Request{}, "$RINGCAP_RDMA_PORT=\"one\""},
		{"bad GID index", Request{GIDIndex: -1}, map[string]string{EnvGIDIndex: "x"}, Request{}, "$RINGCAP_GID_INDEX=\"x\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.req.WithEnv(func(k string) string { return c.env[k] })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %s", err, c.err)
				}
				return
			}
			if err != nil || got.Device != c.want.Device || got.Port != c.want.Port || got.GIDIndex != c.want.GIDIndex || got.Source != c.want.Source {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}
