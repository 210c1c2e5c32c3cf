package fault

import "testing"

func TestEveryClassHasItsTableName(t *testing.T) {
	seen := map[string]bool{}
	for c := Class(1); c < numClasses; c++ {
		n := c.String()
		if n == "" || seen[n] {
			t.Fatalf("class %d has name %q (empty or repeated)", c, n)
		}
		seen[n] = true
	}
	if Timeout.String() != "timeout" || LimitExceeded.String() != "limit_exceeded" || Class(0).String() != "" {
		t.Fatal("names differ from the fault table")
	}
}
