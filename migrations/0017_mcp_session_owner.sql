-- 0017_mcp_session_owner.sql - who opened each shared MCP session: the
-- gateway's owner string ("key:<16 hex>" for an API key, "tok:<32 hex>"
-- for an access token's sub and client_id, "" without credentials).  A
-- request of another owner finds no such session on any replica (MCP
-- authorization: sessions bound to the principal).  Sessions stored
-- before this migration have none: only credential-less requests match.
ALTER TABLE mcp_sessions ADD COLUMN owner text NOT NULL DEFAULT '';
