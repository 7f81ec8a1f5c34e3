package benchstat

import (
	"errors"
	"testing"
	"time"
)

func TestMeasure(t *testing.T) {
	t.Parallel()
	c, err := Measure(func() error {
		for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Wall < 20e6 || c.CPU <= 0 {
		t.Errorf("a 20 ms busy loop took %+v: want wall ≥ 20 ms and some CPU time", c)
	}
	if p := (Cost{CPU: 10, Wall: 40}).Per(4); p != (Cost{CPU: 2.5, Wall: 10}) {
		t.Errorf("Per(4) of {10 40} = %+v", p)
	}
	want := errors.New("fn failed")
	if _, err := Measure(func() error { return want }); !errors.Is(err, want) {
		t.Errorf("Measure returned %v, want fn's error", err)
	}
}
