package mcp

import "testing"

func TestErrorCodes(t *testing.T) {
	if CodeHeaderMismatch != -32020 || CodeMissingClientCapability != -32021 || CodeUnsupportedProtocolVersion != -32022 ||
		CodeResourceNotFoundLegacy != -32002 || CodeURLElicitationRequiredLegacy != -32042 {
		t.Fatal("error code constants changed")
	}
	tests := []struct {
		code   int64
		modern bool
	}{
		{-32020, true},
		{-32021, true},
		{-32022, true},
		{-32023, false},
		{-32042, false},
		{-32099, false},
		{-32100, false},
		{-32019, false},
		{-32002, false},
		{-32001, false},
		{-32000, false},
		{-32601, false},
		{-32602, false},
		{-32603, false},
		{0, false},
		{32020, false},
	}
	for _, tt := range tests {
		if got := IsModernErrorCode(tt.code); got != tt.modern {
			t.Errorf("IsModernErrorCode(%d) = %v", tt.code, got)
		}
	}
}
