-- 0009_mcp_sessions.sql - MCP sessions shared by the gateways of one
-- database: the sessions, their SSE streams and recent events (for
-- Last-Event-ID replay on any replica), the server-to-client requests
-- waiting for an answer, and the replicas themselves (heartbeats, so that
-- a live one ends a dead one's unanswered requests).  Rows are keyed by a
-- hash of the session id: the id is a bearer secret.  See docs/schema.md
-- "MCP sessions" and docs/architecture.md "Sessions across replicas".

-- One row per running gateway; id is random per process start.
CREATE TABLE mcp_replicas (
	id text PRIMARY KEY,		-- 16 hex
	host text NOT NULL,
	pid integer NOT NULL,
	started_at timestamptz NOT NULL DEFAULT now(),
	seen_at timestamptz NOT NULL DEFAULT now() -- heartbeat
);

CREATE TABLE mcp_sessions (
	key text PRIMARY KEY,		-- hex of SHA-256(session id)[0:16]
	version text NOT NULL,		-- negotiated revision
	client_caps jsonb NOT NULL,
	client_info jsonb NOT NULL,
	log_level smallint NOT NULL,	-- RFC 5424 order, 0 = debug
	subscriptions jsonb NOT NULL DEFAULT '{}', -- uri -> true
	rev bigint NOT NULL DEFAULT 1,	-- bumped by every change of the two
	created_at timestamptz NOT NULL DEFAULT now(),
	last_active timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcp_sessions_last_active_idx ON mcp_sessions (last_active);

-- An SSE stream: a POST stream is written by the replica that runs its
-- requests (owner); the standalone (GET) stream by any replica, its
-- numbers taken under the row's lock.  reader: the replica holding the
-- live connection, told of new events by NOTIFY.
CREATE TABLE mcp_streams (
	session_key text NOT NULL REFERENCES mcp_sessions ON DELETE CASCADE,
	id text NOT NULL,		-- 12 hex, the prefix of its event ids
	standalone boolean NOT NULL,
	owner text,			-- NULL: standalone, or taken over
	reader text,
	next_seq bigint NOT NULL DEFAULT 0, -- events below it are stored
	done boolean NOT NULL DEFAULT false,
	requests jsonb,			-- the JSON-RPC ids a POST stream answers
	created_at timestamptz NOT NULL DEFAULT now(),
	done_at timestamptz,
	PRIMARY KEY (session_key, id)
);
CREATE UNIQUE INDEX mcp_streams_standalone_idx ON mcp_streams (session_key)
	WHERE standalone;
CREATE INDEX mcp_streams_open_idx ON mcp_streams (owner) WHERE NOT done;
CREATE INDEX mcp_streams_done_idx ON mcp_streams (done_at) WHERE done;

-- The events of a stream exactly as sent ("id: ...\ndata: ...\n\n"),
-- the newest few hundred per stream.
CREATE TABLE mcp_events (
	session_key text NOT NULL,
	stream_id text NOT NULL,
	seq bigint NOT NULL,
	data text NOT NULL,
	PRIMARY KEY (session_key, stream_id, seq),
	FOREIGN KEY (session_key, stream_id) REFERENCES mcp_streams
		ON DELETE CASCADE
);

-- A server-to-client request (elicitation, sampling, roots) waiting for
-- its answer, which may reach any replica.
CREATE TABLE mcp_pending (
	session_key text NOT NULL REFERENCES mcp_sessions ON DELETE CASCADE,
	id text NOT NULL,		-- our JSON-RPC id, unique per replica
	owner text NOT NULL,		-- the replica whose call waits
	answer jsonb,			-- the client's response, once it came
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (session_key, id)
);
CREATE INDEX mcp_pending_owner_idx ON mcp_pending (owner)
	WHERE answer IS NOT NULL;

-- Stores events p_data, numbered from p_seq, of a POST stream written by
-- p_replica (creating the row on the first flush), drops those below
-- p_first, and
-- wakes the reader when it is another replica.  Returns the reader ('' for
-- none), 'lost' when the stream is no longer p_replica's (taken over) or
-- the numbers do not follow on, or 'gone' when the session is (a flush
-- with events fails the foreign key instead, 23503): nothing is stored
-- then.
CREATE FUNCTION mcp_append(p_replica text, p_session text, p_stream text,
	p_requests jsonb, p_seq bigint, p_data text[], p_first bigint,
	p_done boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	v_reader text;
	v_n integer := coalesce(array_length(p_data, 1), 0);
	v_next bigint;
BEGIN
	IF v_n > 0 THEN
		INSERT INTO mcp_streams (session_key, id, standalone, owner,
			requests, next_seq)
		VALUES (p_session, p_stream, false, p_replica, p_requests,
			p_seq)
		ON CONFLICT DO NOTHING;
	END IF;
	SELECT next_seq, reader INTO v_next, v_reader FROM mcp_streams
	 WHERE session_key = p_session AND id = p_stream
	   AND owner = p_replica AND NOT done
	   FOR UPDATE;
	IF NOT FOUND THEN
		-- not ours, done or not there: lost, unless the session is gone
		PERFORM 1 FROM mcp_sessions WHERE key = p_session;
		RETURN CASE WHEN FOUND THEN 'lost' ELSE 'gone' END;
	END IF;
	IF v_n > 0 AND v_next <> p_seq THEN
		RETURN 'lost';
	END IF;
	IF v_n > 0 THEN
		INSERT INTO mcp_events (session_key, stream_id, seq, data)
		SELECT p_session, p_stream, p_seq + i - 1, d
		  FROM unnest(p_data) WITH ORDINALITY AS u(d, i);
		v_next := p_seq + v_n;
	END IF;
	UPDATE mcp_streams SET next_seq = v_next, done = p_done,
	       done_at = CASE WHEN p_done THEN now() END
	 WHERE session_key = p_session AND id = p_stream;
	IF p_first > 0 THEN
		DELETE FROM mcp_events WHERE session_key = p_session
		   AND stream_id = p_stream AND seq < p_first;
	END IF;
	IF v_reader IS NOT NULL AND v_reader <> p_replica THEN
		PERFORM pg_notify('sextant_r_' || v_reader,
			'e ' || p_session || ' ' || p_stream);
	END IF;
	RETURN coalesce(v_reader, '');
END $$;

-- Appends one message to a session's standalone stream, creating the
-- stream (id p_new_id, with p_prime as its event 0 when not NULL) if the
-- session has none.  The event is encoded here ("id: <stream>-<seq>" and
-- one data line: p_json is compact JSON, without line breaks), events
-- beyond the newest p_keep are dropped, and the reader, when another
-- replica, is woken.  Returns the stream, the event's number and the
-- reader; no row when the session is gone.
CREATE FUNCTION mcp_notify(p_replica text, p_session text, p_new_id text,
	p_prime text, p_json text, p_keep integer,
	OUT stream_id text, OUT seq bigint, OUT reader text)
LANGUAGE plpgsql AS $$
BEGIN
	-- the session stays until commit: a DELETE waits for us, or we for it
	PERFORM 1 FROM mcp_sessions WHERE key = p_session FOR KEY SHARE;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	INSERT INTO mcp_streams (session_key, id, standalone, next_seq)
	VALUES (p_session, p_new_id, true, CASE WHEN p_prime IS NULL THEN 0
		ELSE 1 END)
	ON CONFLICT DO NOTHING;
	IF FOUND AND p_prime IS NOT NULL THEN
		INSERT INTO mcp_events VALUES (p_session, p_new_id, 0, p_prime);
	END IF;
	UPDATE mcp_streams s SET next_seq = s.next_seq + 1
	 WHERE s.session_key = p_session AND s.standalone
	RETURNING s.id, s.next_seq - 1, s.reader INTO stream_id, seq, reader;
	IF NOT FOUND THEN
		RETURN;		-- p_new_id taken by a POST stream of the session
	END IF;
	INSERT INTO mcp_events VALUES (p_session, stream_id, seq,
		'id: ' || stream_id || '-' || seq || E'\ndata: ' || p_json ||
		E'\n\n');
	DELETE FROM mcp_events e WHERE e.session_key = p_session
	   AND e.stream_id = mcp_notify.stream_id AND e.seq <= mcp_notify.seq - p_keep;
	IF reader IS NOT NULL AND reader <> p_replica THEN
		PERFORM pg_notify('sextant_r_' || reader,
			'e ' || p_session || ' ' || stream_id);
	END IF;
END $$;
