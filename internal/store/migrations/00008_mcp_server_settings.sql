-- +goose Up
-- The settings of a stored MCP server that LiteLLM_MCPServerTable has no column for but a
-- config file's mcp_servers entry has (spec_path, protocol_version, forward_identity,
-- allow_elicitation, allow_sampling, pin_tool_definitions, pinned_tools, guardrails): one
-- JSON object keyed by the config's names, so a setting added later needs no migration.
-- Rows stored before it get '{}' (none set), which is what they meant.
ALTER TABLE mcp_servers ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE mcp_servers DROP COLUMN settings;
