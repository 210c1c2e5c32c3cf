package store

import (
	"context"
	"fmt"
	"time"
)

// AddTeamMembers adds members to the team with id and returns the team, all or nothing: a
// missing team (ErrNotFound), a user already a member (ErrExists) or a bad role is refused and
// nothing is written. A member that is not a user yet is created as an internal_user.
func (s *Store) AddTeamMembers(ctx context.Context, id string, members []Membership) (Team, error) {
	return s.changeMembers(ctx, id, func(tx *tx) error {
		return addMembers(ctx, tx, s.nowMillis(), id, members)
	})
}

// RemoveTeamMembers removes the users in userIDs from the team with id and returns the team,
// all or nothing: a missing team or a user who is not a member is a RefError (ErrNotFound).
// The users and their keys stay.
func (s *Store) RemoveTeamMembers(ctx context.Context, id string, userIDs []string) (Team, error) {
	return s.changeMembers(ctx, id, func(tx *tx) error {
		for _, u := range userIDs {
			tx.touch(userCacheKey(u))
			if err := execOne(ctx, tx, "removing a member",
				notFound("user_id", "user_id '%s' is not a member of team '%s' (nothing was removed)", u, id),
				`DELETE FROM team_members WHERE team_id = $1 AND user_id = $2`, id, u); err != nil {
				return err
			}
		}
		return nil
	})
}

// changeMembers runs change in one transaction with the row of the team with id locked, and
// then returns the team as stored; a missing team is a RefError (ErrNotFound) and nothing is
// written.
func (s *Store) changeMembers(ctx context.Context, id string, change func(*tx) error) (Team, error) {
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(teamCacheKey(id))
		ok, err := lockRow(ctx, tx, "teams", "team_id", id)
		if err != nil {
			return err
		}
		if !ok {
			return refErr(ErrNotFound, "team_id", "team_id '%s' does not exist", id)
		}
		return change(tx)
	})
	if err != nil {
		return Team{}, err
	}
	return s.GetTeam(ctx, id)
}

// addMembers inserts the memberships of team id (which the caller has locked), creating the
// users that do not exist yet.
func addMembers(ctx context.Context, tx *tx, now time.Time, id string, members []Membership) error {
	for _, m := range members {
		if m.Role != TeamRoleAdmin && m.Role != TeamRoleUser {
			return refErr(ErrForeign, "role", "role '%s': want admin or user", m.Role)
		}
		tx.touch(userCacheKey(m.UserID))
		if _, err := tx.ExecContext(ctx, `INSERT INTO users (user_id, user_role, created_at, updated_at)
			VALUES ($1, $2, $3, $3) ON CONFLICT (user_id) DO NOTHING`, m.UserID, UserRoleInternalUser, now.UnixMilli()); err != nil {
			return fmt.Errorf("store: creating a member's user: %w", err)
		}
		if _, err := lockRow(ctx, tx, "users", "user_id", m.UserID); err != nil {
			return err
		}
		taken, err := exists(ctx, tx, `SELECT COUNT(*) FROM team_members WHERE team_id = $1 AND user_id = $2`, id, m.UserID)
		if err != nil {
			return err
		}
		if taken {
			return refErr(ErrExists, "user_id", "user_id '%s' is already a member of team '%s'", m.UserID, id)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO team_members (team_id, user_id, role) VALUES ($1, $2, $3)`,
			id, m.UserID, m.Role); err != nil {
			return fmt.Errorf("store: adding a member: %w", err)
		}
	}
	return nil
}

// deleteMemberships deletes the memberships with col = id (a team's or a user's), forgetting
// the cached lookups of the teams and users on their other side.
func deleteMemberships(ctx context.Context, tx *tx, col, id string) error {
	ms, err := memberships(ctx, tx, col, id)
	if err != nil {
		return err
	}
	for _, m := range ms {
		tx.touch(teamCacheKey(m.TeamID), userCacheKey(m.UserID))
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM team_members WHERE `+col+` = $1`, id); err != nil {
		return fmt.Errorf("store: deleting memberships: %w", err)
	}
	return nil
}

func teamMembers(ctx context.Context, q querier, teamID string) ([]Membership, error) {
	return memberships(ctx, q, "team_id", teamID)
}

// memberships returns the memberships with col (team_id or user_id) = id, ordered by team
// then user.
func memberships(ctx context.Context, q querier, col, id string) ([]Membership, error) {
	return queryRows(ctx, q, "reading memberships", scanMembership, `SELECT team_id, user_id, role FROM team_members
		WHERE `+col+` = $1 ORDER BY team_id, user_id`, id)
}

func scanMembership(r scanner) (Membership, error) {
	var m Membership
	err := r.Scan(&m.TeamID, &m.UserID, &m.Role)
	return m, err
}
