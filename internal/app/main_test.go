package app_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests. The standard library's resolver is
// the one exception: a DNS lookup whose caller gave up (a stored server naming a host that
// does not resolve here) finishes in the background until its query times out, in goroutines
// the gateway neither starts nor can end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net.(*Resolver).lookupIPAddr.func1"),
		goleak.IgnoreAnyFunction("net.(*Resolver).goLookupIPCNAMEOrder.func3.1"),
		goleak.IgnoreTopFunction("net.(*Resolver).lookupIPAddr.func2"),
	)
}
