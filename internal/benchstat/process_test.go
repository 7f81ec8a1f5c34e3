package benchstat

import (
	"errors"
	"sync/atomic"
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

// MeasureThread counts the work of fn's thread, not another goroutine's spinning meanwhile.
func TestMeasureThread(t *testing.T) {
	var stop atomic.Bool
	spun := make(chan struct{})
	go func() { // another thread's work during fn
		defer close(spun)
		for !stop.Load() {
		}
	}()
	p0, err := ProcessCPU()
	if err != nil {
		t.Fatal(err)
	}
	c, err := MeasureThread(func() error { time.Sleep(100 * time.Millisecond); return nil })
	stop.Store(true)
	<-spun
	if err != nil {
		t.Fatal(err)
	}
	p1, err := ProcessCPU()
	if err != nil {
		t.Fatal(err)
	}
	if spent := float64(p1 - p0); c.CPU > spent/4 || c.Wall < 100e6 {
		t.Errorf("a 100 ms sleep beside a spinning goroutine: thread %+v, process %.0f ns; want the thread's CPU a small part of the process's", c, spent)
	}
	busy, err := MeasureThread(func() error {
		for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		}
		return nil
	})
	if err != nil || busy.CPU <= 0 {
		t.Errorf("a 20 ms busy loop on the thread: %+v, %v; want some CPU time", busy, err)
	}
}
