package h1serve

import (
	"testing"

	"go.uber.org/goleak"
)

// net/http's server (the differential test's reference) lingers 500 ms
// on a connection it refused.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("net/http.(*conn).closeWriteAndWait"))
}
