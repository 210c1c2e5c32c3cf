package upstream

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("MCPGW_FAKE_STDIO"); mode != "" {
		os.Exit(fakeStdioServer(mode))
	}
	goleak.VerifyTestMain(m)
}
