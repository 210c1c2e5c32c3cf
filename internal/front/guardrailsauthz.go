package front

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
)

// guardrailMetadataKeys are the metadata entries that change which guardrails run on a key's
// or team's calls: LiteLLM's _GUARDRAIL_MODIFICATION_KEYS. The top-level guardrails field of
// /key/* and /team/* is kept in metadata.guardrails, so it is covered too.
var guardrailMetadataKeys = []string{"guardrails", "disable_global_guardrails", "disable_global_guardrail", "opted_out_global_guardrails"}

// msgNoModifyGuardrails is LiteLLM's refusal of a guardrail change (can_modify_guardrails); every
// refusal starts with it, so a client matching LiteLLM's message matches mcpgw's.
const msgNoModifyGuardrails = "Your team does not have permission to modify guardrails."

// guardrailEntries returns metadata's guardrail entries, decoded; an entry that is null, an
// empty list or an empty object is left out, as is metadata that is not a JSON object.
func guardrailEntries(metadata json.RawMessage) map[string]any {
	var m map[string]json.RawMessage
	if len(metadata) == 0 || json.Unmarshal(metadata, &m) != nil {
		return nil
	}
	out := map[string]any{}
	for _, k := range guardrailMetadataKeys {
		var v any
		if raw, ok := m[k]; !ok || json.Unmarshal(raw, &v) != nil {
			continue
		}
		switch x := v.(type) {
		case nil:
			continue
		case []any:
			if len(x) == 0 {
				continue
			}
		case map[string]any:
			if len(x) == 0 {
				continue
			}
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// guardrailsChanged reports whether after's guardrail entries differ from before's.
func guardrailsChanged(before, after json.RawMessage) bool {
	return !reflect.DeepEqual(guardrailEntries(before), guardrailEntries(after))
}

// modifyGuardrails reads a team's metadata.guardrails.modify_guardrails (LiteLLM's object form
// of metadata.guardrails); set is false when the team does not say.
func modifyGuardrails(metadata json.RawMessage) (allowed, set bool) {
	var m struct {
		Guardrails json.RawMessage `json:"guardrails"`
	}
	if len(metadata) == 0 || json.Unmarshal(metadata, &m) != nil {
		return false, false
	}
	var g struct {
		Modify *bool `json:"modify_guardrails"`
	}
	if len(m.Guardrails) == 0 || m.Guardrails[0] != '{' || json.Unmarshal(m.Guardrails, &g) != nil || g.Modify == nil {
		return false, false
	}
	return *g.Modify, true
}

// mayModifyGuardrails decides a change of the guardrails of a key or team that belongs to teams
// (a key's team before and after the change, or the team itself; "" for none), LiteLLM's rule
// (can_modify_guardrails): the proxy admin always; anyone else (who may make the rest of the
// change) unless the caller's own team or one of teams says
// metadata.guardrails.modify_guardrails: false. A team that says nothing allows it, as in
// LiteLLM, so keys and teams created by LiteLLM's API calls keep working; an admin protects
// a team's guardrails by setting the flag false. It returns the refusal's message ("" when
// allowed).
func (m manager) mayModifyGuardrails(ctx context.Context, teams ...string) (string, error) {
	if m.admin() {
		return "", nil
	}
	if id := m.caller.TeamID; id != "" {
		forbids, err := m.teamForbidsGuardrailChanges(ctx, id)
		if err != nil || forbids {
			return msgNoModifyGuardrails, err
		}
	}
	for _, id := range teams {
		if id == "" || id == m.caller.TeamID {
			continue
		}
		forbids, err := m.teamForbidsGuardrailChanges(ctx, id)
		if err != nil {
			return "", err
		}
		if forbids {
			return msgNoModifyGuardrails + " Team '" + id + "' sets metadata.guardrails.modify_guardrails to false: " +
				"only the proxy admin may change its guardrails.", nil
		}
	}
	return "", nil
}

// teamForbidsGuardrailChanges reports whether team id says modify_guardrails: false.
func (m manager) teamForbidsGuardrailChanges(ctx context.Context, id string) (bool, error) {
	t, found, err := m.keys.cfg.Store.LookupTeam(ctx, id)
	if err != nil || !found {
		return false, err
	}
	allowed, set := modifyGuardrails(t.Metadata)
	return set && !allowed, nil
}

// allowGuardrails answers 403 (or the store's failure) when the change from before to after
// alters guardrails the caller may not change (mayModifyGuardrails over teams); it reports
// whether to go on.
func (k *Keys) allowGuardrails(w http.ResponseWriter, r *http.Request, before, after json.RawMessage, teams ...string) bool {
	if !guardrailsChanged(before, after) {
		return true
	}
	msg, err := managerOf(r).mayModifyGuardrails(r.Context(), teams...)
	switch {
	case err != nil:
		k.fail(r.Context(), w, err)
		return false
	case msg != "":
		forbid(w, msg)
		return false
	}
	return true
}
