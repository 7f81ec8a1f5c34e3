package affinity

import (
	"slices"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"3", []int{3}},
		{"0,2-3", []int{0, 2, 3}},
		{"5,1", []int{5, 1}},
		{" 1 , 4-5 ", []int{1, 4, 5}},
		{"1023", []int{1023}},
		{"2,2,3", []int{2, 2, 3}},
	} {
		got, err := ParseList(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseList(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestParseListRefuses(t *testing.T) {
	for _, c := range []struct{ in, why string }{
		{"", `"" is not a CPU number`},
		{"a", `"a" is not a CPU number`},
		{"1,", `"" is not a CPU number`},
		{"-1", `"" is not a CPU number`},
		{"1024", `"1024" is not a CPU number (0..1023)`},
		{"+1", `"+1" is not a CPU number`},
		{"3-1", `range "3-1" runs backwards`},
		{"1-2-3", `"2-3" is not a CPU number`},
	} {
		_, err := ParseList(c.in)
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("ParseList(%q) = %v; want an error saying %s", c.in, err, c.why)
		}
	}
}
