package front_test

import (
	"testing"

	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/front/fronttest"
)

func TestMemoryTombstonesContract(t *testing.T) {
	fronttest.Tombstones(t, func() front.Tombstones { return front.NewMemoryTombstones(1000) })
}
