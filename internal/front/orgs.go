package front

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
)

type orgJSON struct {
	OrganizationID    string           `json:"organization_id"`
	OrganizationAlias string           `json:"organization_alias"`
	Metadata          json.RawMessage  `json:"metadata"`
	ObjectPermission  store.Permission `json:"object_permission"`
	CreatedAt         time.Time        `json:"created_at"`
	UpdatedAt         time.Time        `json:"updated_at"`
}

func orgToJSON(o store.Organization) orgJSON {
	return orgJSON{OrganizationID: o.OrganizationID, OrganizationAlias: o.Alias, Metadata: o.Metadata,
		ObjectPermission: o.Permission, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
}

func (k *Keys) orgNew(w http.ResponseWriter, r *http.Request, body []byte) {
	o, err := decodeOrgNew(body)
	if err == nil {
		o, err = k.cfg.Store.CreateOrganization(r.Context(), o)
	}
	k.answer(w, r, orgToJSON(o), err)
}

func (k *Keys) orgUpdate(w http.ResponseWriter, r *http.Request, body []byte) {
	id, change, err := decodeOrgUpdate(body)
	var o store.Organization
	if err == nil {
		o, err = k.cfg.Store.UpdateOrganization(r.Context(), id, change)
	}
	k.answer(w, r, orgToJSON(o), err)
}

func (k *Keys) orgDelete(w http.ResponseWriter, r *http.Request, body []byte) {
	ids, err := decodeIDList(body, "organization_ids")
	if err == nil {
		err = k.cfg.Store.DeleteOrganizations(r.Context(), ids)
	}
	k.answer(w, r, map[string]any{"deleted_organizations": ids}, err)
}

// orgInfo answers the organisation with its first teams (LiteLLM's /organization/info shape:
// the organisation's fields and "teams").
func (k *Keys) orgInfo(w http.ResponseWriter, r *http.Request, _ []byte) {
	id, err := requiredParam(r.URL.Query(), "organization_id")
	var o store.Organization
	if err == nil {
		o, err = k.cfg.Store.GetOrganization(r.Context(), id)
	}
	var teams []store.Team
	if err == nil {
		teams, err = k.cfg.Store.ListTeams(r.Context(), store.TeamQuery{OrganizationID: id, Limit: maxEmbedded})
	}
	k.answer(w, r, struct {
		orgJSON
		Teams []teamJSON `json:"teams"`
	}{orgToJSON(o), convert(teams, teamToJSON)}, err)
}

func (k *Keys) orgList(w http.ResponseWriter, r *http.Request, _ []byte) {
	offset, limit, _, err := decodeQuery(r.URL.Query(), []string{"page", "size"})
	var orgs []store.Organization
	if err == nil {
		orgs, err = k.cfg.Store.ListOrganizations(r.Context(), offset, limit)
	}
	k.answer(w, r, convert(orgs, orgToJSON), err)
}
