-- 0011_mcp_session_count.sql - the number of stored MCP sessions, so that
-- server.max_sessions holds across every gateway sharing the database
-- without a count(*) per initialize.  One row, kept by statement triggers
-- on mcp_sessions (every insert, delete, sweep and TRUNCATE, by any
-- role), read under its row lock by the insert that checks the limit
-- (lib/pg/sessdb.c sessdb_insert): two gateways creating the last free
-- session at once cannot both pass.

CREATE TABLE mcp_session_count (
	id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
	n bigint NOT NULL		-- rows of mcp_sessions
);
INSERT INTO mcp_session_count (n) SELECT count(*) FROM mcp_sessions;

-- One update per statement, whatever the number of rows: the sweep
-- deletes hundreds at once.
CREATE FUNCTION mcp_session_count_apply() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		UPDATE mcp_session_count SET n = 0;
	ELSE
		UPDATE mcp_session_count SET n = n +
			CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END *
			(SELECT count(*) FROM changed);
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER mcp_sessions_count_insert AFTER INSERT ON mcp_sessions
	REFERENCING NEW TABLE AS changed
	FOR EACH STATEMENT EXECUTE FUNCTION mcp_session_count_apply();
CREATE TRIGGER mcp_sessions_count_delete AFTER DELETE ON mcp_sessions
	REFERENCING OLD TABLE AS changed
	FOR EACH STATEMENT EXECUTE FUNCTION mcp_session_count_apply();
CREATE TRIGGER mcp_sessions_count_truncate AFTER TRUNCATE ON mcp_sessions
	FOR EACH STATEMENT EXECUTE FUNCTION mcp_session_count_apply();
