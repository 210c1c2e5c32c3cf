package identity

import (
	"strings"
	"unicode/utf8"
)

// PermitWeakEnv names the environment variable that lets the gateway start with a weak or unset
// master key; the package never reads the environment itself (Config.PermitWeak carries it).
const PermitWeakEnv = "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY"

// MinMasterKeyLen is the shortest master key, in characters, that is not weak.
const MinMasterKeyLen = 16

// WeakKeyReason returns why key is unusable as a master key ("" when it is strong enough). The
// reason never contains the key. Weak means: unset; shorter than MinMasterKeyLen characters; a
// well-known example key (case-insensitive); fewer than 6 distinct characters; or only digits
// after an optional "sk-" prefix (the sk-1234… family).
func WeakKeyReason(key string) string {
	switch {
	case key == "":
		return "unset"
	case utf8.RuneCountInString(key) < MinMasterKeyLen:
		return "shorter than 16 characters"
	case isExampleKey(key):
		return "a well-known example key"
	case distinctRunes(key) < 6:
		return "fewer than 6 distinct characters"
	case allDigits(strings.TrimPrefix(key, "sk-")):
		return "only digits after sk-"
	}
	return ""
}

// isExampleKey reports whether key is one of the keys that documentation, tutorials and
// generated configs use as placeholders. Most are also caught by the length rule; listing them
// states the intent and catches the long ones.
func isExampleKey(key string) bool {
	switch strings.ToLower(key) {
	case "sk-1234", "sk-12345", "sk-123456", "sk-1234567890", "sk-master", "sk-master-key",
		"sk-test", "sk-test-key", "sk-admin", "sk-admin-key", "sk-litellm", "sk-litellm-master-key",
		"sk-my-master-key", "sk-your-master-key", "sk-your-key", "sk-changeme", "sk-change-me",
		"sk-password", "sk-secret", "sk-xxxxxxxx", "changeme", "change-me", "password", "secret",
		"master-key", "my-master-key", "your-master-key", "litellm-master-key", "sk-1234567890abcdef",
		"sk-your-master-key-here", "your-master-key-here":
		return true
	}
	return false
}

func distinctRunes(s string) int {
	seen := make(map[rune]struct{}, 8)
	for _, r := range s {
		seen[r] = struct{}{}
	}
	return len(seen)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
