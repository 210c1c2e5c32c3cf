package benchfig

import (
	"os"
	"slices"
	"strconv"
	"strings"
)

// LoadAverage is /proc/loadavg's first three fields ("?" where unreadable).
func LoadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Load1 is /proc/loadavg's first field, the one-minute load average (0 where unreadable).
func Load1() float64 {
	f := strings.Fields(LoadAverage()) // "?" where unreadable: ParseFloat fails
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return v
}

// Median is the median of v (0 for none); v is left as it was.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Rounded is v rounded to the nearest integers, for reporting.
func Rounded(v []float64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x + 0.5)
	}
	return out
}
