package mcp

import "testing"

func TestErrorCodes(t *testing.T) {
	if CodeHeaderMismatch != -32020 || CodeMissingClientCapability != -32021 || CodeUnsupportedProtocolVersion != -32022 ||
		CodeResourceNotFoundLegacy != -32002 || CodeURLElicitationRequiredLegacy != -32042 {
		t.Fatal("error code constants changed")
	}
	tests := []struct {
		code                     int64
		modern, reserved, legacy bool
	}{
		{-32020, true, true, false},
		{-32021, true, true, false},
		{-32022, true, true, false},
		{-32023, false, true, false},
		{-32042, false, true, false},
		{-32099, false, true, false},
		{-32100, false, false, false},
		{-32019, false, false, true},
		{-32002, false, false, true},
		{-32001, false, false, true},
		{-32000, false, false, true},
		{-32601, false, false, false},
		{-32602, false, false, false},
		{-32603, false, false, false},
		{0, false, false, false},
		{32020, false, false, false},
	}
	for _, tt := range tests {
		if got := IsModernErrorCode(tt.code); got != tt.modern {
			t.Errorf("IsModernErrorCode(%d) = %v", tt.code, got)
		}
		if got := IsSpecReservedErrorCode(tt.code); got != tt.reserved {
			t.Errorf("IsSpecReservedErrorCode(%d) = %v", tt.code, got)
		}
		if got := IsLegacyImplementationErrorCode(tt.code); got != tt.legacy {
			t.Errorf("IsLegacyImplementationErrorCode(%d) = %v", tt.code, got)
		}
	}
}
