package benchfig

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMedianCI(t *testing.T) {
	ten := []float64{1.10, 0.95, 1.30, 1.02, 1.05, 0.99, 1.20, 1.08, 1.04, 1.15} // sorted: 0.95 0.99 1.02 … 1.20 1.30
	twenty := make([]float64, 20)
	for i := range twenty {
		twenty[i] = float64(20 - i) // 20 … 1
	}
	for _, tc := range []struct {
		name     string
		v        []float64
		conf     float64
		lo, hi   float64
		coverage float64
		ok       bool
	}{
		{"none", nil, 0.95, 0, 0, 0, false},
		{"five are too few at 95 %", []float64{1, 2, 3, 4, 5}, 0.95, 0, 0, 0, false},
		{"five suffice at 90 %", []float64{5, 4, 3, 2, 1}, 0.90, 1, 5, 1 - 2.0/32, true},
		{"six: the extremes", []float64{3, 1, 6, 2, 5, 4}, 0.95, 1, 6, 1 - 2.0/64, true},
		{"ten: second from each end", ten, 0.95, 0.99, 1.20, 1 - 2*11.0/1024, true},
		{"twenty: sixth from each end", twenty, 0.95, 6, 15, 1 - 2*21700.0/1048576, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.v)
			lo, hi, cov, ok := MedianCI(tc.v, tc.conf)
			if ok != tc.ok || lo != tc.lo || hi != tc.hi || math.Abs(cov-tc.coverage) > 1e-12 {
				t.Fatalf("MedianCI = %v, %v, %v, %v; want %v, %v, %v, %v", lo, hi, cov, ok, tc.lo, tc.hi, tc.coverage, tc.ok)
			}
			if !slices.Equal(in, tc.v) {
				t.Fatalf("MedianCI reordered its input: %v", tc.v)
			}
		})
	}
}

// The interval holds the true median at least as often as it claims: 4,000 samples of ten
// log-normal ratios whose median is 1 (seeded, so the count is the same every run).
func TestMedianCICoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	const trials = 4000
	held := 0
	v := make([]float64, 10)
	for range trials {
		for i := range v {
			v[i] = math.Exp(0.2 * rng.NormFloat64())
		}
		lo, hi, _, ok := MedianCI(v, 0.95)
		if !ok {
			t.Fatal("ten values gave no interval")
		}
		if lo <= 1 && 1 <= hi {
			held++
		}
	}
	if frac := float64(held) / trials; frac < 0.95 {
		t.Fatalf("the interval held the median in %.3f of the samples, want ≥ 0.95", frac)
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		lo, hi    float64
		ok        bool
		threshold float64
		atLeast   bool
		want      Verdict
	}{
		{1.02, 1.20, true, 1.0, true, Shown},
		{1.00, 1.20, true, 1.0, true, Shown}, // touching from the target's side
		{0.97, 1.20, true, 1.0, true, NotShown},
		{0.80, 0.99, true, 1.0, true, ShownMissed},
		{1.02, 1.20, false, 1.0, true, Undecided},
		{0.70, 0.79, true, 0.8, false, Shown},
		{0.70, 0.80, true, 0.8, false, Shown},
		{0.75, 0.85, true, 0.8, false, NotShown},
		{0.81, 0.95, true, 0.8, false, ShownMissed},
	} {
		if got := Decide(tc.lo, tc.hi, tc.ok, tc.threshold, tc.atLeast); got != tc.want {
			t.Errorf("Decide(%v, %v, %v, %v, %v) = %v, want %v", tc.lo, tc.hi, tc.ok, tc.threshold, tc.atLeast, got, tc.want)
		}
	}
	for v, want := range map[Verdict]string{Undecided: "undecided (too few rounds)", NotShown: "not shown", Shown: "shown", ShownMissed: "shown missed"} {
		if v.String() != want {
			t.Errorf("%d.String() = %q, want %q", v, v.String(), want)
		}
	}
}

func TestSignedRankCI(t *testing.T) {
	one2ten := []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	// ±0.3, ±0.4, …, ±1.0: the 30th smallest of the 136 Walsh averages is −0.5 (the 27 pair
	// sums below −1 and the last of the three equal to it; enumerated apart from this code).
	sixteen := []float64{}
	for i := 3; i <= 10; i++ {
		sixteen = append(sixteen, float64(i)/10, -float64(i)/10)
	}
	for _, tc := range []struct {
		name           string
		v              []float64
		centre, lo, hi float64
		coverage       float64
		ok             bool
	}{
		{"none", nil, 0, 0, 0, 0, false},
		{"five are too few at 95 %", []float64{1, 2, 3, 4, 5}, 0, 0, 0, 0, false},
		{"six: the extreme Walsh averages", []float64{6, 1, 5, 2, 4, 3}, 3.5, 1, 6, 1 - 2.0/64, true},
		// 1…10: Walsh averages (i+j)/2 with i ≤ j; sums 2, 3, 4, 4, 5, 5, 6, 6, 6 are the nine smallest.
		{"ten: the ninth Walsh average from each end", one2ten, 5.5, 3, 8, 1 - 2*25.0/1024, true},
		{"sixteen: the thirtieth", sixteen, 0, -0.5, 0.5, 1 - 2*1452.0/65536, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.v)
			c, lo, hi, cov, ok := SignedRankCI(tc.v, 0.95)
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if ok != tc.ok || !near(c, tc.centre) || !near(lo, tc.lo) || !near(hi, tc.hi) || !near(cov, tc.coverage) {
				t.Fatalf("SignedRankCI = %v, %v, %v, %v, %v; want %v, %v, %v, %v, %v", c, lo, hi, cov, ok, tc.centre, tc.lo, tc.hi, tc.coverage, tc.ok)
			}
			if !slices.Equal(in, tc.v) {
				t.Fatalf("SignedRankCI reordered its input: %v", tc.v)
			}
		})
	}
}

// Like TestMedianCICoverage, for the signed-rank interval of ten log ratios (symmetric).
func TestSignedRankCICoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	const trials = 4000
	held := 0
	v := make([]float64, 10)
	for range trials {
		for i := range v {
			v[i] = 0.2 * rng.NormFloat64()
		}
		_, lo, hi, _, _ := SignedRankCI(v, 0.95)
		if lo <= 0 && 0 <= hi {
			held++
		}
	}
	if frac := float64(held) / trials; frac < 0.94 {
		t.Fatalf("the interval held the centre in %.3f of the samples, want ≥ 0.94 (it claims 0.951)", frac)
	}
}
