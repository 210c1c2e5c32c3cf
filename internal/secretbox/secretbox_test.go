package secretbox

import (
	"errors"
	"strings"
	"testing"
)

func TestSealOpensOnlyUnderTheSameKeyAndContext(t *testing.T) {
	b, err := New("salt-one")
	if err != nil {
		t.Fatal(err)
	}
	s := b.Seal("srv\x00auth_value", "the-secret")
	if !IsSealed(s) || strings.Contains(s, "the-secret") {
		t.Fatalf("sealed value %q", s)
	}
	if s2 := b.Seal("srv\x00auth_value", "the-secret"); s2 == s {
		t.Fatal("two seals of one value are equal: the nonce is not random")
	}
	got, err := b.Open("srv\x00auth_value", s)
	if err != nil || got != "the-secret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := b.Open("other\x00auth_value", s); !errors.Is(err, ErrOpen) {
		t.Fatalf("another context opened: %v", err)
	}
	other, _ := New("salt-two")
	if _, err := other.Open("srv\x00auth_value", s); !errors.Is(err, ErrOpen) {
		t.Fatalf("another salt key opened: %v", err)
	}
	if _, err := b.Open("srv\x00auth_value", Prefix+"AAAA"); !errors.Is(err, ErrOpen) {
		t.Fatalf("a short value: %v", err)
	}
	if _, err := b.Open("srv", "plain"); err == nil || strings.Contains(err.Error(), "plain") {
		t.Fatalf("an unsealed value: %v", err)
	}
}

func TestNewRefusesAnEmptySaltKey(t *testing.T) {
	if _, err := New("  "); err == nil {
		t.Fatal("New accepted an empty salt key")
	}
}
