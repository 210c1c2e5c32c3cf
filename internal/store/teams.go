package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Team roles of a member, LiteLLM's.
const (
	TeamRoleAdmin = "admin"
	TeamRoleUser  = "user"
)

// Membership is one user's role in one team.
type Membership struct {
	TeamID string
	UserID string
	Role   string // TeamRoleAdmin or TeamRoleUser
}

// Team is one stored team, with its members.
type Team struct {
	TeamID              string
	Alias               string
	OrganizationID      string
	Metadata            json.RawMessage // a JSON object
	Permission          Permission
	Members             []Membership // ordered by user_id
	Blocked             bool
	RPMLimit            *int64
	MaxParallelRequests *int64
	MCPRPMLimit         map[string]int64
	CreatedAt           time.Time
	UpdatedAt           time.Time
	// Spend is what the team's keys' calls have cost so far (kept by RecordSpend, never
	// written by CreateTeam or UpdateTeam); MaxBudget, when set, is the spend past which
	// their tool calls are refused.
	Spend     float64
	MaxBudget *float64
	// Budget is the period after which Spend returns to 0 (budget_duration): CreateTeam and
	// UpdateTeam (when Budget.Duration changes) start it, its first reset one period later.
	Budget Budget
}

const teamColumns = `team_id, team_alias, organization_id, metadata, object_permission, blocked, rpm_limit,
	max_parallel_requests, mcp_rpm_limit, created_at, updated_at`

// teamReadColumns are what reads of a team select: teamColumns, then what RecordSpend keeps.
const teamReadColumns = teamColumns + `, spend, max_budget, budget_duration, budget_reset_at`

// CreateTeam stores t (a fresh UUID as its id when TeamID is empty) with its members, all or
// nothing: a team_id or team_alias in use, an organization_id that does not exist or a member
// with a bad role is a RefError and nothing is written. A member that is not a user yet is
// created as an internal_user, as LiteLLM does.
func (s *Store) CreateTeam(ctx context.Context, t Team) (Team, error) {
	if t.TeamID == "" {
		t.TeamID = NewID()
	}
	now := s.nowMillis()
	t.CreatedAt, t.UpdatedAt, t.Metadata = now, now, json.RawMessage(metadataText(t.Metadata))
	members := t.Members
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(teamCacheKey(t.TeamID))
		if taken, err := exists(ctx, tx, `SELECT COUNT(*) FROM teams WHERE team_id = $1`, t.TeamID); err != nil || taken {
			return errors.Join(err, boolErr(taken, refErr(ErrExists, "team_id", "team_id '%s' already exists", t.TeamID)))
		}
		if err := teamAliasFree(ctx, tx, t.Alias); err != nil {
			return err
		}
		if err := checkRefs(ctx, tx, "", t.OrganizationID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO teams (`+teamColumns+`, max_budget)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			t.TeamID, nullString(t.Alias), t.OrganizationID, string(t.Metadata), permissionText(t.Permission),
			t.Blocked, t.RPMLimit, t.MaxParallelRequests, limitsText(t.MCPRPMLimit), now.UnixMilli(), now.UnixMilli(), t.MaxBudget)
		if err != nil {
			return uniqueRefused(fmt.Errorf("store: creating a team: %w", err), "team_alias", "team_alias",
				"team_alias '"+t.Alias+"' already in use: team aliases must be unique")
		}
		if t.Budget.Duration != "" {
			if err := setBudget(ctx, tx, "teams", "team_id", t.TeamID, &t.Budget, now); err != nil {
				return err
			}
		}
		if err := addMembers(ctx, tx, s.nowMillis(), t.TeamID, members); err != nil {
			return err
		}
		t.Members, err = teamMembers(ctx, tx, t.TeamID)
		return err
	})
	if err != nil {
		return Team{}, err
	}
	return t, nil
}

func teamAliasFree(ctx context.Context, tx *tx, alias string) error {
	if alias == "" {
		return nil
	}
	taken, err := exists(ctx, tx, `SELECT COUNT(*) FROM teams WHERE team_alias = $1`, alias)
	if err != nil || !taken {
		return err
	}
	return refErr(ErrDuplicateAlias, "team_alias", "team_alias '%s' already in use: team aliases must be unique", alias)
}

// GetTeam returns the team with id and its members (a RefError matching ErrNotFound when
// none), read from the database.
func (s *Store) GetTeam(ctx context.Context, id string) (Team, error) {
	t, err := readTeam(ctx, s.reads(), id)
	if err != nil {
		return Team{}, err
	}
	if t.Members, err = teamMembers(ctx, s.reads(), id); err != nil {
		return Team{}, err
	}
	return t, nil
}

// readTeam reads the team with id on q, without its members; none is a RefError
// (ErrNotFound).
func readTeam(ctx context.Context, q querier, id string) (Team, error) {
	return queryRow(ctx, q, "a team", scanTeam, notFound("team_id", "team_id '%s' does not exist", id),
		`SELECT `+teamReadColumns+` FROM teams WHERE team_id = $1`, id)
}

// LookupTeam returns the team with id through this replica's lookup cache (see
// Options.CacheTTL); found is false for no such team.
func (s *Store) LookupTeam(ctx context.Context, id string) (Team, bool, error) {
	return lookupCached(ctx, s, teamCacheKey(id), func() (Team, error) { return s.GetTeam(ctx, id) })
}

// UpdateTeam changes the team with id by change, in one transaction (read, changed, written
// back whole). A team_alias in use, an organization_id that does not exist or a missing team
// is a RefError and nothing is written. The id, members and created_at are not changed.
func (s *Store) UpdateTeam(ctx context.Context, id string, change func(*Team)) (Team, error) {
	var t Team
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(teamCacheKey(id))
		var err error
		if t, err = readTeam(ctx, tx, id); err != nil {
			return err
		}
		old := t
		change(&t)
		t.TeamID, t.CreatedAt, t.UpdatedAt = id, old.CreatedAt, s.nowMillis()
		t.Metadata = json.RawMessage(metadataText(t.Metadata))
		if t.Alias != old.Alias {
			if err := teamAliasFree(ctx, tx, t.Alias); err != nil {
				return err
			}
		}
		if t.OrganizationID != old.OrganizationID {
			if err := checkRefs(ctx, tx, "", t.OrganizationID); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE teams SET team_alias = $1, organization_id = $2, metadata = $3,
			object_permission = $4, blocked = $5, rpm_limit = $6, max_parallel_requests = $7, mcp_rpm_limit = $8,
			updated_at = $9, max_budget = $11 WHERE team_id = $10`,
			nullString(t.Alias), t.OrganizationID, string(t.Metadata), permissionText(t.Permission), t.Blocked,
			t.RPMLimit, t.MaxParallelRequests, limitsText(t.MCPRPMLimit), t.UpdatedAt.UnixMilli(), id, t.MaxBudget)
		if err != nil {
			return uniqueRefused(fmt.Errorf("store: updating a team: %w", err), "team_alias", "team_alias",
				"team_alias '"+t.Alias+"' already in use: team aliases must be unique")
		}
		if t.Budget.Duration == old.Budget.Duration {
			t.Budget = old.Budget
		} else if err := setBudget(ctx, tx, "teams", "team_id", id, &t.Budget, t.UpdatedAt); err != nil {
			return err
		}
		t.Members, err = teamMembers(ctx, tx, id)
		return err
	})
	if err != nil {
		return Team{}, err
	}
	return t, nil
}

// DeleteTeams deletes every team in ids with its keys and memberships, as LiteLLM does; all
// or none: a team that does not exist is a RefError (ErrNotFound) and nothing is deleted.
func (s *Store) DeleteTeams(ctx context.Context, ids []string) error {
	return s.deleteWithKeys(ctx, "teams", "team_id", "a team", teamCacheKey, ids)
}

// deleteWithKeys deletes the rows of table (teams or users) whose col (its id column, also
// the column of team_members and keys that refers to it) is in ids, with their memberships and
// keys, in one transaction; a row that does not exist is a RefError (ErrNotFound, naming the
// field col+"s") and nothing is deleted. what names one row in errors ("a team").
func (s *Store) deleteWithKeys(ctx context.Context, table, col, what string, cacheKey func(string) string, ids []string) error {
	return s.inTx(ctx, func(tx *tx) error {
		for _, id := range ids {
			tx.touch(cacheKey(id))
			// The row goes first: a concurrent writer referring to it waits on its lock.
			if err := execOne(ctx, tx, "deleting "+what,
				notFound(col+"s", col+" '%s' does not exist (nothing was deleted)", id),
				`DELETE FROM `+table+` WHERE `+col+` = $1`, id); err != nil {
				return err
			}
			if err := deleteMemberships(ctx, tx, col, id); err != nil {
				return err
			}
			if err := deleteKeysWhere(ctx, tx, col, id); err != nil {
				return err
			}
			if table == "users" { // a deleted user's upstream tokens go with it
				if err := deleteUserOAuthTokens(ctx, tx, id); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// TeamQuery selects teams for ListTeams; empty filters match every team.
type TeamQuery struct {
	OrganizationID string
	UserID         string // teams this user is a member of
	Offset, Limit  int
}

// ListTeams returns one page of the teams matching q (oldest first) with their members.
func (s *Store) ListTeams(ctx context.Context, q TeamQuery) ([]Team, error) {
	cond, args := ` WHERE (CAST($1 AS TEXT) = '' OR organization_id = $1)
		AND (CAST($2 AS TEXT) = '' OR team_id IN (SELECT team_id FROM team_members WHERE user_id = $2))`, []any{q.OrganizationID, q.UserID}
	out, err := queryRows(ctx, s.db, "listing teams", scanTeam, `SELECT `+teamReadColumns+` FROM teams`+cond+
		` ORDER BY created_at, team_id LIMIT $3 OFFSET $4`, append(args, q.Limit, q.Offset)...)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Members, err = teamMembers(ctx, s.db, out[i].TeamID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func scanTeam(r scanner) (Team, error) {
	var (
		t                  Team
		alias              sql.NullString
		meta, perm, limits string
		rpm, maxPar        sql.NullInt64
		created, updated   int64
		budget             sql.NullFloat64
		period             sql.NullString
		reset              sql.NullInt64
	)
	if err := r.Scan(&t.TeamID, &alias, &t.OrganizationID, &meta, &perm, &t.Blocked, &rpm, &maxPar, &limits,
		&created, &updated, &t.Spend, &budget, &period, &reset); err != nil {
		return Team{}, err
	}
	var err error
	t.Alias, t.Metadata = alias.String, json.RawMessage(meta)
	if t.Permission, err = parsePermission(perm); err != nil {
		return Team{}, err
	}
	if t.MCPRPMLimit, err = parseLimits(limits); err != nil {
		return Team{}, err
	}
	t.RPMLimit, t.MaxParallelRequests = nullInt(rpm), nullInt(maxPar)
	t.CreatedAt, t.UpdatedAt = fromMillis(created), fromMillis(updated)
	t.MaxBudget = nullFloat(budget)
	t.Budget = scanBudget(period, reset)
	return t, nil
}
