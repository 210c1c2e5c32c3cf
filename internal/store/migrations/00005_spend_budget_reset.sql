-- +goose Up
-- Budget periods on keys and teams, LiteLLM's budget_duration and budget_reset_at: the period
-- as given ("30d"), the same in milliseconds (so a write can move the reset on in SQL), and
-- when spend next returns to 0 (unix milliseconds). All NULL: spend never resets.
ALTER TABLE keys ADD COLUMN budget_duration TEXT;
ALTER TABLE keys ADD COLUMN budget_duration_ms BIGINT;
ALTER TABLE keys ADD COLUMN budget_reset_at BIGINT;
ALTER TABLE teams ADD COLUMN budget_duration TEXT;
ALTER TABLE teams ADD COLUMN budget_duration_ms BIGINT;
ALTER TABLE teams ADD COLUMN budget_reset_at BIGINT;
CREATE INDEX keys_budget_reset_at ON keys (budget_reset_at);
CREATE INDEX teams_budget_reset_at ON teams (budget_reset_at);

-- +goose Down
DROP INDEX teams_budget_reset_at;
DROP INDEX keys_budget_reset_at;
ALTER TABLE teams DROP COLUMN budget_reset_at;
ALTER TABLE teams DROP COLUMN budget_duration_ms;
ALTER TABLE teams DROP COLUMN budget_duration;
ALTER TABLE keys DROP COLUMN budget_reset_at;
ALTER TABLE keys DROP COLUMN budget_duration_ms;
ALTER TABLE keys DROP COLUMN budget_duration;
