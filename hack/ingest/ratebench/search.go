package main

import (
	"errors"
	"fmt"
	"math"
)

// outcome is what one run at a requested rate gave.
type outcome struct {
	lossFree bool
	achieved float64 // the rate the sender reached, bytes/s
}

// trialFunc runs the stream at rate bytes/s against one receiver.
type trialFunc func(rate float64) (outcome, error)

// searchParams say how the highest loss-free rate is looked for: up from Start by Factor
// until a run loses packets, the sender falls short of the rate it was asked for (by more
// than SenderShort) or Max is reached; down by Factor from a lossy Start until Min; then
// Bisect runs halving the gap (geometrically) between the highest loss-free rate and the
// lowest lossy one.
type searchParams struct {
	Start, Min, Max float64
	Factor          float64
	Bisect          int
	SenderShort     float64 // e.g. 0.1: the sender reached less than 90 % of the rate
}

// found is a search's result: the highest loss-free rate asked for (Requested) and the rate
// the sender reached at it (Rate); SenderBound when the sender, not the receiver, set the
// ceiling (or Max did: AtMax); Trials the runs made.
type found struct {
	Requested, Rate float64
	SenderBound     bool
	AtMax           bool // SenderBound because the search reached Max
	Trials          int
}

// errNoLossFree is returned when even Min loses packets.
var errNoLossFree = errors.New("no loss-free rate")

func (p searchParams) validate() error {
	if p.Min <= 0 || p.Start < p.Min || p.Max < p.Start || p.Factor <= 1 || p.Bisect < 0 {
		return fmt.Errorf("rate search: want 0 < min %.0f <= start %.0f <= max %.0f, factor %.2f > 1, bisect %d >= 0",
			p.Min, p.Start, p.Max, p.Factor, p.Bisect)
	}
	return nil
}

// search finds the highest loss-free rate of one receiver.
func search(p searchParams, trial trialFunc) (found, error) {
	if err := p.validate(); err != nil {
		return found{}, err
	}
	s := &searcher{p: p, trial: trial}
	o, err := s.run(p.Start)
	if err != nil {
		return found{}, err
	}
	if o.lossFree {
		err = s.up(p.Start, o)
	} else {
		err = s.down(p.Start)
	}
	if err != nil {
		return found{}, err
	}
	if s.best.Requested == 0 {
		return s.best, fmt.Errorf("%w at %.0f MiB/s or above", errNoLossFree, p.Min/mib)
	}
	if !s.best.SenderBound && s.bad > 0 {
		err = s.bisect()
	}
	return s.best, err
}

// searcher is one search's state: the best loss-free run so far and the lowest lossy rate.
type searcher struct {
	p     searchParams
	trial trialFunc
	best  found
	bad   float64 // lowest lossy rate asked for; 0: none yet
}

// run makes one trial and notes its result.
func (s *searcher) run(rate float64) (outcome, error) {
	o, err := s.trial(rate)
	s.best.Trials++
	if err != nil {
		return o, err
	}
	switch {
	case !o.lossFree && (s.bad == 0 || rate < s.bad):
		s.bad = rate
	case o.lossFree && rate > s.best.Requested:
		s.best.Requested, s.best.Rate = rate, o.achieved
		s.best.SenderBound = o.achieved < (1-s.p.SenderShort)*rate
	}
	return o, nil
}

// up steps the rate up from a loss-free rate until a loss, the sender's ceiling or Max.
func (s *searcher) up(rate float64, o outcome) error {
	for o.lossFree && !s.best.SenderBound {
		if rate >= s.p.Max {
			s.best.SenderBound, s.best.AtMax = true, true // the search's ceiling, not the receiver's
			return nil
		}
		rate = math.Min(rate*s.p.Factor, s.p.Max)
		var err error
		if o, err = s.run(rate); err != nil {
			return err
		}
	}
	return nil
}

// down steps the rate down from a lossy rate until a loss-free one or below Min.
func (s *searcher) down(rate float64) error {
	for s.best.Requested == 0 {
		rate /= s.p.Factor
		if rate < s.p.Min {
			return nil
		}
		if _, err := s.run(rate); err != nil {
			return err
		}
	}
	return nil
}

// bisect narrows the gap between the best loss-free rate and the lowest lossy one.
func (s *searcher) bisect() error {
	for range s.p.Bisect {
		mid := math.Sqrt(s.best.Requested * s.bad)
		if _, err := s.run(mid); err != nil {
			return err
		}
		if s.best.SenderBound {
			return nil
		}
	}
	return nil
}
