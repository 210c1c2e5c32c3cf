package catalog_test

import (
	"testing"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/catalog/catalogtest"
)

func TestMemoryListCacheContract(t *testing.T) {
	catalogtest.ListCache(t, func() catalog.ListCache { return catalog.NewMemoryListCache() })
}

func TestMemorySnapshotsContract(t *testing.T) {
	catalogtest.Snapshots(t, func() catalog.Snapshots { return catalog.NewMemorySnapshots() })
}
