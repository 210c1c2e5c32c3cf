package observe

import (
	"testing"

	"go.uber.org/goleak"
)

// The Lines flush timer runs on goroutines of its own: none may outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
