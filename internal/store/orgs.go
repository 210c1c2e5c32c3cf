package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Organization is one stored organisation.
type Organization struct {
	OrganizationID string
	Alias          string // required and unique
	Metadata       json.RawMessage
	Permission     Permission
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

const orgColumns = `organization_id, organization_alias, metadata, object_permission, created_at, updated_at`

// CreateOrganization stores o (a fresh UUID as its id when OrganizationID is empty); an id or
// organization_alias in use is a RefError and nothing is written.
func (s *Store) CreateOrganization(ctx context.Context, o Organization) (Organization, error) {
	if o.OrganizationID == "" {
		o.OrganizationID = NewID()
	}
	now := s.nowMillis()
	o.CreatedAt, o.UpdatedAt, o.Metadata = now, now, json.RawMessage(metadataText(o.Metadata))
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(orgCacheKey(o.OrganizationID))
		if taken, err := exists(ctx, tx, `SELECT COUNT(*) FROM organizations WHERE organization_id = $1`, o.OrganizationID); err != nil || taken {
			return errors.Join(err, boolErr(taken, refErr(ErrExists, "organization_id", "organization_id '%s' already exists", o.OrganizationID)))
		}
		if err := orgAliasFree(ctx, tx, o.Alias); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO organizations (`+orgColumns+`) VALUES ($1, $2, $3, $4, $5, $6)`,
			o.OrganizationID, o.Alias, string(o.Metadata), permissionText(o.Permission), now.UnixMilli(), now.UnixMilli())
		return uniqueRefused(err, "organization_alias", "organization_alias",
			"organization_alias '"+o.Alias+"' already in use: organization aliases must be unique")
	})
	if err != nil {
		return Organization{}, err
	}
	return o, nil
}

func orgAliasFree(ctx context.Context, tx *tx, alias string) error {
	taken, err := exists(ctx, tx, `SELECT COUNT(*) FROM organizations WHERE organization_alias = $1`, alias)
	if err != nil || !taken {
		return err
	}
	return refErr(ErrDuplicateAlias, "organization_alias",
		"organization_alias '%s' already in use: organization aliases must be unique", alias)
}

// GetOrganization returns the organisation with id (a RefError matching ErrNotFound when none),
// read from the database.
func (s *Store) GetOrganization(ctx context.Context, id string) (Organization, error) {
	return readOrg(ctx, s.reads(), id)
}

// readOrg reads the organisation with id on q; none is a RefError (ErrNotFound).
func readOrg(ctx context.Context, q querier, id string) (Organization, error) {
	return queryRow(ctx, q, "an organization", scanOrg, notFound("organization_id", "organization_id '%s' does not exist", id),
		`SELECT `+orgColumns+` FROM organizations WHERE organization_id = $1`, id)
}

// LookupOrganization returns the organisation with id through this replica's lookup cache;
// found is false for none.
func (s *Store) LookupOrganization(ctx context.Context, id string) (Organization, bool, error) {
	return lookupCached(ctx, s, orgCacheKey(id), func() (Organization, error) { return s.GetOrganization(ctx, id) })
}

// UpdateOrganization changes the organisation with id by change in one transaction; a missing
// organisation or an alias in use is a RefError and nothing is written.
func (s *Store) UpdateOrganization(ctx context.Context, id string, change func(*Organization)) (Organization, error) {
	var o Organization
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(orgCacheKey(id))
		var err error
		if o, err = readOrg(ctx, tx, id); err != nil {
			return err
		}
		old := o
		change(&o)
		o.OrganizationID, o.CreatedAt, o.UpdatedAt = id, old.CreatedAt, s.nowMillis()
		o.Metadata = json.RawMessage(metadataText(o.Metadata))
		if o.Alias != old.Alias {
			if err := orgAliasFree(ctx, tx, o.Alias); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE organizations SET organization_alias = $1, metadata = $2,
			object_permission = $3, updated_at = $4 WHERE organization_id = $5`,
			o.Alias, string(o.Metadata), permissionText(o.Permission), o.UpdatedAt.UnixMilli(), id)
		return uniqueRefused(err, "organization_alias", "organization_alias",
			"organization_alias '"+o.Alias+"' already in use: organization aliases must be unique")
	})
	if err != nil {
		return Organization{}, err
	}
	return o, nil
}

// DeleteOrganizations deletes every organisation in ids, all or none. An organisation that
// does not exist is a RefError (ErrNotFound); one that teams, users or keys still belong to
// is refused (ErrInUse) rather than leaving them pointing at nothing or deleting them
// silently: the caller deletes or moves them first.
func (s *Store) DeleteOrganizations(ctx context.Context, ids []string) error {
	return s.inTx(ctx, func(tx *tx) error {
		for _, id := range ids {
			tx.touch(orgCacheKey(id))
			// The row goes first: a concurrent writer referring to it waits on its lock, and
			// is then either counted below or refused.
			if err := execOne(ctx, tx, "deleting an organization",
				notFound("organization_ids", "organization_id '%s' does not exist (nothing was deleted)", id),
				`DELETE FROM organizations WHERE organization_id = $1`, id); err != nil {
				return err
			}
			for _, table := range [...]string{"teams", "users", "keys"} {
				used, err := exists(ctx, tx, `SELECT COUNT(*) FROM `+table+` WHERE organization_id = $1`, id)
				if err != nil {
					return err
				}
				if used {
					return refErr(ErrInUse, "organization_ids",
						"organization_id '%s' still has %s: delete them or move them to another organization first (nothing was deleted)", id, table)
				}
			}
		}
		return nil
	})
}

// ListOrganizations returns one page of the organisations, oldest first.
func (s *Store) ListOrganizations(ctx context.Context, offset, limit int) ([]Organization, error) {
	return queryRows(ctx, s.db, "listing organizations", scanOrg, `SELECT `+orgColumns+` FROM organizations
		ORDER BY created_at, organization_id LIMIT $1 OFFSET $2`, limit, offset)
}

func scanOrg(r scanner) (Organization, error) {
	var (
		o                Organization
		meta, perm       string
		created, updated int64
	)
	if err := r.Scan(&o.OrganizationID, &o.Alias, &meta, &perm, &created, &updated); err != nil {
		return Organization{}, err
	}
	var err error
	o.Metadata = json.RawMessage(meta)
	if o.Permission, err = parsePermission(perm); err != nil {
		return Organization{}, err
	}
	o.CreatedAt, o.UpdatedAt = fromMillis(created), fromMillis(updated)
	return o, nil
}
