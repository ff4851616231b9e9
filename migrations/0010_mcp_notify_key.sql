-- 0010_mcp_notify_key.sql - the key that signs the session store's
-- notifications that act on their payload alone: "c <key> <id>" (cancel a
-- request) and "x <key> <replica>" (a replica dropped its copy of a
-- deleted session).  Any role that can connect may NOTIFY any channel;
-- only a role that can read this table can sign, and a gateway drops the
-- unsigned ones.  The other notifications only make a gateway read the
-- tables again, which a forgery cannot change.
--
-- One row of 32 random bytes, written by the first gateway that finds
-- none.  Grant it to no role but the gateways'.
CREATE TABLE mcp_notify_key (
	id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
	key bytea NOT NULL CHECK (length(key) = 32)
);
REVOKE ALL ON mcp_notify_key FROM PUBLIC;
