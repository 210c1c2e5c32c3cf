package front

import "net/http"

// JWKS serves GET /.well-known/jwks.json: the public keys that verify the
// signed identities the gateway sends upstream. Set returns the JSON Web Key
// Set; without it (no signing key) the route is 404. The keys are public:
// no credential is asked.
type JWKS struct {
	Set []byte
}

// Register adds GET /.well-known/jwks.json to mux.
func (j *JWKS) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /.well-known/jwks.json", j.serve)
}

func (j *JWKS) serve(w http.ResponseWriter, _ *http.Request) {
	if len(j.Set) == 0 {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "no identity signing key is configured"})
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	// Verifiers may cache it briefly; a rotation publishes the new key
	// before it signs only if operators add it ahead (see docs).
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(j.Set)
}
