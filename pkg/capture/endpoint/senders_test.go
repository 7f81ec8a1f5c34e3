package endpoint

import (
	"net"
	"net/netip"
	"testing"
)

func TestSenderFilter(t *testing.T) {
	f, err := NewSenderFilter([]netip.Prefix{netip.MustParsePrefix("198.18.0.7/24"), netip.MustParsePrefix("2001:db8::/32")})
	if err != nil {
		t.Fatal(err)
	}
	tcp := func(s string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(s), Port: 4000} }
	for _, tc := range []struct {
		addr net.Addr
		want bool
	}{
		{tcp("198.18.0.1"), true},
		{tcp("198.18.0.255"), true},
		{tcp("::ffff:198.18.0.9"), true}, // an IPv4 sender on a dual-stack listener
		{tcp("198.18.1.1"), false},
		{tcp("10.88.0.5"), false},
		{tcp("2001:db8::5"), true},
		{tcp("2001:db9::5"), false},
		{&net.UnixAddr{Name: "/x", Net: "unix"}, false},
	} {
		if got := f.Allows(tc.addr); got != tc.want {
			t.Errorf("Allows(%v) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if got := f.String(); got != "198.18.0.0/24, 2001:db8::/32" {
		t.Errorf("String() = %q, want the masked networks", got)
	}
	var none *SenderFilter
	if !none.Allows(tcp("10.0.0.1")) || none.String() != "any" {
		t.Error("a nil filter must allow every sender")
	}
	if _, err := NewSenderFilter(nil); err == nil {
		t.Error("an empty allowlist was accepted")
	}
}
