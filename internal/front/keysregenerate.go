package front

import (
	"bytes"
	"net/http"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
)

// regenerateFields are /key/regenerate's body fields: the key, any /key/generate field (applied
// as /key/update applies it) and LiteLLM's two caller-chosen secrets, named only to be refused
// with a reason.
var regenerateFields = append([]string{"key", "new_key", "new_master_key"}, generateFields...)

// decodeRegenerate decodes a /key/regenerate body (pathRef "") or a /key/{key}/regenerate one
// (pathRef the path's key; the body may then be empty) into the key's token and the change to
// apply with the new secret. A key named in both must be the same key.
func decodeRegenerate(body []byte, pathRef string, now time.Time) (string, func(*store.Key), error) {
	if pathRef != "" && len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	m, err := decodeObject("", body, regenerateFields)
	if err != nil {
		return "", nil, err
	}
	if !isNull(m["new_key"]) {
		return "", nil, bad("new_key", "new_key: not accepted: the gateway mints every secret itself (sk- and 256 random bits, "+
			"so its stored hash cannot be reversed by guessing); leave new_key out and read the new secret from the answer's \"key\"")
	}
	if !isNull(m["new_master_key"]) {
		return "", nil, bad("new_master_key", "new_master_key: not accepted: the master key is general_settings.master_key in the config file; change it there")
	}
	bodyRef, err := optID(m, "key")
	if err != nil {
		return "", nil, err
	}
	var token string
	for _, ref := range []string{pathRef, bodyRef} {
		if ref == "" {
			continue
		}
		t, err := tokenOf("key", ref)
		if err != nil {
			return "", nil, err
		}
		if token != "" && t != token {
			return "", nil, bad("key", "key: the path and the body name different keys")
		}
		token = t
	}
	if token == "" {
		return "", nil, bad("key", "key: required")
	}
	for _, f := range []string{"key", "new_key", "new_master_key"} {
		delete(m, f)
	}
	nk, err := decodeKeyFields(m, now)
	if err != nil {
		return "", nil, err
	}
	return token, keyChange(m, nk), nil
}

// regeneratedJSON is /key/regenerate's answer: the key as /key/generate answers it (the new
// secret in "key", its hash in "token") and, as LiteLLM names it there, the hash in "token_id".
type regeneratedJSON struct {
	keyJSON
	TokenID string `json:"token_id"`
}

// regenerate serves POST /key/regenerate and POST /key/{key}/regenerate.
func (k *Keys) regenerate(w http.ResponseWriter, r *http.Request, body []byte) {
	token, change, err := decodeRegenerate(body, r.PathValue("key"), k.cfg.Now())
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	if !k.allowKeyChange(w, r, token, change, true) {
		return
	}
	secret, stored, err := k.cfg.Store.Regenerate(r.Context(), token, change)
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	out := regeneratedJSON{keyJSON: toJSON(stored), TokenID: stored.Token}
	out.Key = secret
	writeJSON(w, http.StatusOK, out)
}

// hideKeyInPath serves a /key/{key}/... route with the key in the request's path replaced by its
// token (or "not-a-key" when it is not one), so a secret in the URL reaches neither the
// authenticator (the custom_auth webhook is sent the path) nor any message.
func hideKeyInPath(prefix, suffix string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		shown := "not-a-key"
		if t, err := tokenOf("key", r.PathValue("key")); err == nil {
			shown = t
		}
		u := *r.URL
		u.Path, u.RawPath = prefix+shown+suffix, ""
		r2 := r.WithContext(r.Context())
		r2.URL = &u
		r2.RequestURI = u.RequestURI()
		next(w, r2)
	}
}
