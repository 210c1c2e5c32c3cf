package benchfig

import (
	"slices"
	"testing"
)

func TestMedianAndRounded(t *testing.T) {
	in := []float64{5, 1, 3}
	for _, tc := range []struct {
		v    []float64
		want float64
	}{{nil, 0}, {in, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tc.v); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
	if !slices.Equal(in, []float64{5, 1, 3}) {
		t.Fatalf("Median reordered its input: %v", in)
	}
	if got := Rounded([]float64{1.4, 1.5, 2.49}); !slices.Equal(got, []int{1, 2, 2}) {
		t.Fatalf("Rounded = %v", got)
	}
	if LoadAverage() == "" {
		t.Fatal("LoadAverage is empty")
	}
}
