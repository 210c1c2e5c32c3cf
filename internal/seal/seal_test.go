package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/allocstest"
)

const (
	testKey      = "test-salt-key-0123456789"
	pContinue    = "mcp:interaction:repeatable:v1"
	pListTools   = "mcp.catalog.list.v1:tools/list"
	pSession     = "mcp:session:v1"
	alphabetURL  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	testTTL      = time.Minute
	secretMarker = "SECRET-PAYLOAD-do-not-leak-0123456789"
)

var t0 = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func newSealer(t testing.TB, key string, purposes ...string) *Sealer {
	t.Helper()
	if len(purposes) == 0 {
		purposes = []string{pContinue, pListTools, pSession}
	}
	s, err := New(key, purposes...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s.WithClock(fixedClock(t0))
}

func mustSeal(t testing.TB, s *Sealer, purpose string, payload []byte) string {
	t.Helper()
	tok, err := s.Seal(purpose, payload, testTTL)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return tok
}

// referenceSeal builds a token from the documented format, independently of Seal.
func referenceSeal(t testing.TB, saltKey, purpose string, nonce []byte, expiryMs int64, payload []byte) string {
	t.Helper()
	key, err := hkdf.Key(sha256.New, []byte(saltKey), nil, "mcpgw/seal/v1/"+purpose, 32)
	if err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	plain := binary.BigEndian.AppendUint64(nil, uint64(expiryMs))
	plain = append(plain, payload...)
	aad := append([]byte{1}, purpose...)
	raw := append([]byte{1}, nonce...)
	raw = aead.Seal(raw, nonce, plain, aad)
	return base64.RawURLEncoding.EncodeToString(raw)
}

func TestRoundTrip(t *testing.T) {
	s := newSealer(t, testKey)
	cases := []struct {
		purpose string
		payload []byte
	}{
		{pContinue, []byte(`{"upstream_state":"opaque:tools/call"}`)},
		{pListTools, []byte("cursor:42")},
		{pSession, []byte("session-abc")},
		{pSession, nil},
		{pContinue, bytes.Repeat([]byte{0, 0xff}, 1000)},
		{pListTools, bytes.Repeat([]byte("x"), MaxPayloadBytes)},
	}
	for _, c := range cases {
		tok := mustSeal(t, s, c.purpose, c.payload)
		if len(tok) > MaxTokenBytes {
			t.Fatalf("%s: token length %d > MaxTokenBytes", c.purpose, len(tok))
		}
		got, err := s.Open(c.purpose, tok)
		if err != nil {
			t.Fatalf("%s: Open: %v", c.purpose, err)
		}
		if !bytes.Equal(got, c.payload) {
			t.Fatalf("%s: payload mismatch", c.purpose)
		}
	}
}

func TestReferenceFormat(t *testing.T) {
	s := newSealer(t, testKey)
	nonce := []byte("0123456789ab")
	tok := referenceSeal(t, testKey, pContinue, nonce, t0.Add(time.Second).UnixMilli(), []byte("hello"))
	got, err := s.Open(pContinue, tok)
	if err != nil || string(got) != "hello" {
		t.Fatalf("Open(reference token) = %q, %v", got, err)
	}
	// And Seal's output has the documented shape.
	raw, err := base64.RawURLEncoding.Strict().DecodeString(mustSeal(t, s, pContinue, []byte("hello")))
	if err != nil {
		t.Fatal(err)
	}
	if raw[0] != 1 || len(raw) != Overhead+len("hello") {
		t.Fatalf("raw token: version %d, len %d", raw[0], len(raw))
	}
}

func TestCrossReplica(t *testing.T) {
	a := newSealer(t, testKey, pContinue, pListTools)
	b := newSealer(t, testKey, pListTools, pContinue, pSession) // different order, superset
	tok := mustSeal(t, a, pContinue, []byte("state"))
	if got, err := b.Open(pContinue, tok); err != nil || string(got) != "state" {
		t.Fatalf("other replica: %q, %v", got, err)
	}
	// Repeatable until expiry.
	for range 3 {
		if _, err := a.Open(pContinue, tok); err != nil {
			t.Fatalf("reopen: %v", err)
		}
	}
}

func TestNonceIsRandom(t *testing.T) {
	s := newSealer(t, testKey)
	a := mustSeal(t, s, pSession, []byte("same"))
	b := mustSeal(t, s, pSession, []byte("same"))
	if a == b {
		t.Fatal("sealing the same payload twice gave the same token")
	}
}

func TestRejections(t *testing.T) {
	s := newSealer(t, testKey)
	other := newSealer(t, "another-salt-key")
	good := mustSeal(t, s, pContinue, []byte("payload"))
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	reencode := func(f func([]byte) []byte) string {
		r := f(append([]byte(nil), raw...))
		return base64.RawURLEncoding.EncodeToString(r)
	}
	cases := []struct {
		name    string
		sealer  *Sealer
		purpose string
		token   string
		want    error
	}{
		{"wrong purpose", s, pListTools, good, ErrInvalid},
		{"wrong purpose session", s, pSession, good, ErrInvalid},
		{"foreign key", other, pContinue, good, ErrInvalid},
		{"empty", s, pContinue, "", ErrInvalid},
		{"padded", s, pContinue, good + "=", ErrInvalid},
		{"std alphabet", s, pContinue, strings.NewReplacer("-", "+", "_", "/").Replace(good) + "+/", ErrInvalid},
		{"non-ascii", s, pContinue, good[:len(good)-1] + "é", ErrInvalid},
		{"whitespace", s, pContinue, " " + good, ErrInvalid},
		{"newline inside", s, pContinue, good[:10] + "\n" + good[10:], ErrInvalid},
		{"crlf inside", s, pContinue, good[:5] + "\r\n" + good[5:], ErrInvalid},
		{"trailing newline", s, pContinue, good + "\n", ErrInvalid},
		{"trailing bits set", s, pContinue, nonCanonical(t, good), ErrInvalid},
		{"prefixed", s, pContinue, "mcp_state_v1." + good, ErrInvalid},
		{"appended byte", s, pContinue, reencode(func(r []byte) []byte { return append(r, 0) }), ErrInvalid},
		{"version 0", s, pContinue, reencode(func(r []byte) []byte { r[0] = 0; return r }), ErrInvalid},
		{"version 2", s, pContinue, reencode(func(r []byte) []byte { r[0] = 2; return r }), ErrInvalid},
		{"only header", s, pContinue, reencode(func(r []byte) []byte { return r[:Overhead-1] }), ErrInvalid},
		{"unknown purpose", s, "nope", good, ErrPurpose},
		{"nil sealer", nil, pContinue, good, ErrNoKey},
		{"zero sealer", &Sealer{}, pContinue, good, ErrNoKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.sealer.Open(c.purpose, c.token)
			if !errors.Is(err, c.want) || got != nil {
				t.Fatalf("Open = %q, %v; want %v", got, err, c.want)
			}
		})
	}
}

// nonCanonical re-spells tok with non-zero unused trailing bits, which lenient base64 would accept.
func nonCanonical(t *testing.T, tok string) string {
	t.Helper()
	if len(tok)%4 == 0 {
		t.Fatal("token has no partial final quantum")
	}
	last := strings.IndexByte(alphabetURL, tok[len(tok)-1])
	mut := tok[:len(tok)-1] + string(alphabetURL[last|1])
	if mut == tok {
		mut = tok[:len(tok)-1] + string(alphabetURL[last^1])
	}
	if _, err := base64.RawURLEncoding.DecodeString(mut); err != nil {
		t.Fatalf("lenient decoder rejects %q: %v", mut, err)
	}
	return mut
}

func TestTruncation(t *testing.T) {
	s := newSealer(t, testKey)
	tok := mustSeal(t, s, pSession, []byte("truncate me"))
	for n := range len(tok) {
		if _, err := s.Open(pSession, tok[:n]); !errors.Is(err, ErrInvalid) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	for n := range len(raw) {
		if _, err := s.Open(pSession, base64.RawURLEncoding.EncodeToString(raw[:n])); !errors.Is(err, ErrInvalid) {
			t.Fatalf("raw truncated to %d: %v", n, err)
		}
	}
}

func TestEveryByteFlip(t *testing.T) {
	s := newSealer(t, testKey)
	tok := mustSeal(t, s, pSession, []byte("x"))
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	// Every position of the decoded token, every single-bit flip and a whole-byte flip.
	for i := range raw {
		for _, mask := range []byte{1, 2, 4, 8, 16, 32, 64, 128, 0xff} {
			r := append([]byte(nil), raw...)
			r[i] ^= mask
			if _, err := s.Open(pSession, base64.RawURLEncoding.EncodeToString(r)); !errors.Is(err, ErrInvalid) {
				t.Fatalf("raw byte %d ^ %#x: %v", i, mask, err)
			}
		}
	}
	// Every character of the encoded token replaced by every other alphabet character.
	for i := range len(tok) {
		for _, c := range []byte(alphabetURL) {
			if c == tok[i] {
				continue
			}
			mut := tok[:i] + string(c) + tok[i+1:]
			if _, err := s.Open(pSession, mut); !errors.Is(err, ErrInvalid) {
				t.Fatalf("char %d -> %q: %v", i, c, err)
			}
		}
	}
}

func TestExpiry(t *testing.T) {
	base, err := New(testKey, pContinue)
	if err != nil {
		t.Fatal(err)
	}
	minter := base.WithClock(fixedClock(t0))
	tok, err := minter.Seal(pContinue, []byte("p"), testTTL)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	raw[len(raw)-1] ^= 1
	tampered := base64.RawURLEncoding.EncodeToString(raw)

	cases := []struct {
		name  string
		at    time.Time
		token string
		want  error
	}{
		{"fresh", t0, tok, nil},
		{"1ms before expiry", t0.Add(testTTL - time.Millisecond), tok, nil},
		{"at expiry", t0.Add(testTTL), tok, ErrExpired},
		{"long after", t0.Add(24 * time.Hour), tok, ErrExpired},
		{"expired and tampered", t0.Add(24 * time.Hour), tampered, ErrInvalid},
		{"fresh and tampered", t0, tampered, ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := base.WithClock(fixedClock(c.at)).Open(pContinue, c.token)
			if !errors.Is(err, c.want) {
				t.Fatalf("Open = %v, want %v", err, c.want)
			}
			if c.want == nil && string(got) != "p" {
				t.Fatalf("payload %q", got)
			}
			if c.want != nil && got != nil {
				t.Fatalf("payload returned with error")
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	cases := []struct {
		name     string
		key      string
		purposes []string
		want     error
	}{
		{"empty key", "", []string{pContinue}, ErrNoKey},
		{"empty key no purposes", "", nil, ErrNoKey},
		{"no purposes", testKey, nil, ErrPurpose},
		{"empty purpose", testKey, []string{pContinue, ""}, ErrPurpose},
		{"duplicate purpose", testKey, []string{pContinue, pListTools, pContinue}, ErrPurpose},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(c.key, c.purposes...)
			if !errors.Is(err, c.want) || s != nil {
				t.Fatalf("New = %v, %v; want %v", s, err, c.want)
			}
		})
	}
	if !strings.Contains(ErrNoKey.Error(), "LITELLM_SALT_KEY") {
		t.Fatalf("ErrNoKey text %q does not name LITELLM_SALT_KEY", ErrNoKey)
	}
}

func TestSealErrors(t *testing.T) {
	s := newSealer(t, testKey)
	cases := []struct {
		name    string
		sealer  *Sealer
		purpose string
		payload []byte
		ttl     time.Duration
		want    error
	}{
		{"unknown purpose", s, "nope", nil, testTTL, ErrPurpose},
		{"empty purpose", s, "", nil, testTTL, ErrPurpose},
		{"zero ttl", s, pSession, nil, 0, ErrTTL},
		{"negative ttl", s, pSession, nil, -time.Second, ErrTTL},
		{"too large", s, pSession, make([]byte, MaxPayloadBytes+1), testTTL, ErrTooLarge},
		{"nil sealer", nil, pSession, nil, testTTL, ErrNoKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok, err := c.sealer.Seal(c.purpose, c.payload, c.ttl)
			if !errors.Is(err, c.want) || tok != "" {
				t.Fatalf("Seal = %q, %v; want %v", tok, err, c.want)
			}
		})
	}
}

func TestPurposes(t *testing.T) {
	in := []string{pSession, pContinue}
	s, err := New(testKey, in...)
	if err != nil {
		t.Fatal(err)
	}
	in[0] = "mutated"
	got := s.Purposes()
	if len(got) != 2 || got[0] != pSession || got[1] != pContinue {
		t.Fatalf("Purposes = %q", got)
	}
	got[0] = "mutated"
	if s.Purposes()[0] != pSession {
		t.Fatal("Purposes exposes internal slice")
	}
	if _, err := s.Seal(pSession, nil, testTTL); err != nil {
		t.Fatalf("caller's slice mutation leaked in: %v", err)
	}
	if (*Sealer)(nil).Purposes() != nil {
		t.Fatal("nil Sealer has purposes")
	}
}

func TestConfidentiality(t *testing.T) {
	s := newSealer(t, testKey)
	payload := []byte(secretMarker)
	tok := mustSeal(t, s, pContinue, payload)
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, payload) || strings.Contains(tok, secretMarker) {
		t.Fatal("payload visible in token")
	}
	// No 8-byte window of the payload survives, in raw form or in any base64 alignment.
	for i := 0; i+8 <= len(payload); i++ {
		if bytes.Contains(raw, payload[i:i+8]) {
			t.Fatalf("payload fragment %q in raw token", payload[i:i+8])
		}
	}
	for shift := range 3 {
		enc := base64.RawURLEncoding.EncodeToString(append(make([]byte, shift), payload...))
		frag := enc[8 : len(enc)-4]
		if strings.Contains(tok, frag) {
			t.Fatalf("base64 of payload (shift %d) in token", shift)
		}
	}
	// The expiry is encrypted too.
	exp := binary.BigEndian.AppendUint64(nil, uint64(t0.Add(testTTL).UnixMilli()))
	if bytes.Contains(raw, exp) {
		t.Fatal("expiry visible in token")
	}
}

func TestOversizedRejectedQuickly(t *testing.T) {
	s := newSealer(t, testKey)
	huge := strings.Repeat("A", 16<<20)
	justOver := strings.Repeat("A", MaxTokenBytes+1)
	for _, tok := range []string{huge, justOver} {
		if _, err := s.Open(pContinue, tok); !errors.Is(err, ErrInvalid) {
			t.Fatalf("len %d: %v", len(tok), err)
		}
		allocs := allocstest.Least(100, func() { _, _ = s.Open(pContinue, tok) })
		if allocs != 0 {
			t.Fatalf("len %d: %v allocs, want 0 (no decoding)", len(tok), allocs)
		}
	}
	start := time.Now()
	for range 1000 {
		_, _ = s.Open(pContinue, huge)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("1000 opens of a 16 MiB token took %v", d)
	}
	// Exactly MaxTokenBytes is decoded (and then fails authentication).
	atMax := strings.Repeat("A", MaxTokenBytes)
	if _, err := s.Open(pContinue, atMax); !errors.Is(err, ErrInvalid) {
		t.Fatalf("at max: %v", err)
	}
}

func TestAllocs(t *testing.T) {
	s := newSealer(t, testKey)
	payload := bytes.Repeat([]byte("p"), 200)
	tok := mustSeal(t, s, pContinue, payload)
	if a := allocstest.Least(200, func() { _, _ = s.Seal(pContinue, payload, testTTL) }); a > 2 {
		t.Errorf("Seal: %v allocs, want <= 2", a)
	}
	if a := allocstest.Least(200, func() { _, _ = s.Open(pContinue, tok) }); a > 1 {
		t.Errorf("Open: %v allocs, want <= 1", a)
	}
}

func TestConcurrent(t *testing.T) {
	base, err := New(testKey, pContinue, pListTools, pSession)
	if err != nil {
		t.Fatal(err)
	}
	purposes := base.Purposes()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			s := base
			if g%2 == 0 {
				s = base.WithClock(fixedClock(time.Now())) // copies share keys
			}
			for i := range 200 {
				p := purposes[(g+i)%len(purposes)]
				payload := []byte{byte(g), byte(i), 'z'}
				tok, err := s.Seal(p, payload, time.Hour)
				if err != nil {
					errs <- err
					return
				}
				got, err := base.Open(p, tok)
				if err != nil || !bytes.Equal(got, payload) {
					errs <- errors.Join(errors.New("round trip failed"), err)
					return
				}
				if _, err := base.Open(purposes[(g+i+1)%len(purposes)], tok); !errors.Is(err, ErrInvalid) {
					errs <- errors.Join(errors.New("cross-purpose open"), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// fuzzSeeds returns deterministic valid tokens (fixed nonces) keyed by token, with their payloads.
func fuzzSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	exp := t0.Add(time.Hour).UnixMilli()
	for i, p := range [][]byte{nil, []byte("x"), []byte(`{"k":"v"}`), bytes.Repeat([]byte{0xAA}, 100)} {
		nonce := bytes.Repeat([]byte{byte(i + 1)}, 12)
		seeds[referenceSeal(t, testKey, pContinue, nonce, exp, p)] = p
	}
	return seeds
}

func FuzzOpen(f *testing.F) {
	s := newSealer(f, testKey, pContinue)
	valid := fuzzSeeds(f)
	for tok := range valid {
		f.Add(tok, []byte("payload"))
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		raw[len(raw)/2] ^= 0x10
		f.Add(base64.RawURLEncoding.EncodeToString(raw), []byte{})
		f.Add(tok[:len(tok)-3], []byte{0})
	}
	f.Add("", []byte(nil))
	f.Add("AQ", []byte("a"))
	f.Add(strings.Repeat("A", 50), bytes.Repeat([]byte{0}, 300))
	f.Add("mcp_state_v1.AAAA", []byte("\xff"))

	f.Fuzz(func(t *testing.T, token string, payload []byte) {
		got, err := s.Open(pContinue, token)
		if err == nil {
			want, known := valid[token]
			if !known {
				t.Fatalf("Open accepted unknown token %q", token)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("seed token payload mismatch")
			}
		} else if !errors.Is(err, ErrInvalid) {
			t.Fatalf("Open error %v, want ErrInvalid", err)
		}

		tok, err := s.Seal(pContinue, payload, testTTL)
		if len(payload) > MaxPayloadBytes {
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("oversized payload: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Seal: %v", err)
		}
		out, err := s.Open(pContinue, tok)
		if err != nil || !bytes.Equal(out, payload) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func BenchmarkSeal(b *testing.B) {
	s := newSealer(b, testKey)
	payload := bytes.Repeat([]byte("p"), 200)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, err := s.Seal(pContinue, payload, testTTL); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	s := newSealer(b, testKey)
	payload := bytes.Repeat([]byte("p"), 200)
	tok := mustSeal(b, s, pContinue, payload)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, err := s.Open(pContinue, tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenOversized(b *testing.B) {
	s := newSealer(b, testKey)
	tok := strings.Repeat("A", 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = s.Open(pContinue, tok)
	}
}
