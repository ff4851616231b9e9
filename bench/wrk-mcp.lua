-- wrk-mcp.lua - wrk script for bench/protocol.sh and bench/replicas.sh:
-- POSTs one MCP JSON-RPC request over and over, each with its own id, on an
-- open Streamable HTTP session or as stateless 2026-07-28 requests, and
-- reports throughput, p50/p99 latency and every bad answer.
--
-- wrk -t2 -c64 -d10s -s bench/wrk-mcp.lua URL -- METHOD SESSION PROTOCOL [ARGS]
--   METHOD    "ping", "tools/list", "tools/call:<tool>", or "GET:<path>"
--             (bench/rest.sh: a REST GET, good when 200 with a "tool")
--   ARGS      tools/call's arguments as JSON text (default {})
--   SESSION   Mcp-Session-Id from initialize, "-" to send none
--   PROTOCOL  MCP-Protocol-Version negotiated at initialize; 2026-07-28
--             sends stateless requests instead: no session, the
--             per-request _meta (protocolVersion, clientCapabilities,
--             clientInfo) and the Mcp-Method / Mcp-Name headers
--
-- done() prints one line for the driver to parse:
--   MCPBENCH requests=N duration_us=N rps=X p50_us=N p99_us=N ... errors=N
-- errors = non-200 responses + 200s without a JSON-RPC "result" + socket
-- errors and timeouts.  A run with errors > 0 is not a valid measurement.
-- notfound = the 404s among the non-200s: on a session, "session not
-- found" (a replica that does not know the session), which a shared
-- session store must make 0.  The first bad answer and the first 404 are
-- printed with the replica that gave them when a proxy names it in an
-- X-Upstream header (bench/peers/nginx-rr.conf.in does).

local threads = {}

function setup(thread)
	table.insert(threads, thread)
	thread:set("tid", #threads)
end

function init(args)
	method = args[1] or "ping"
	local session = args[2] or "-"
	local protocol = args[3] or "2025-11-25"
	arguments = args[4] or "{}"
	tool = nil
	ok_mark = '"result"'
	if method:sub(1, 4) == "GET:" then
		ok_mark = '"tool"'
		get_request = wrk.format("GET", method:sub(5),
			{["Accept"] = "application/json"}, nil)
	end
	if method:sub(1, 11) == "tools/call:" then
		tool = method:sub(12)
		method = "tools/call"
	end
	stateless = protocol == "2026-07-28"
	wrk.method = "POST"
	local h = {
		["Content-Type"] = "application/json",
		["Accept"] = "application/json, text/event-stream",
		["MCP-Protocol-Version"] = protocol,
	}
	if stateless then
		h["Mcp-Method"] = method
		if tool then
			h["Mcp-Name"] = tool
		end
	end
	if session ~= "-" then
		h["Mcp-Session-Id"] = session
	end
	local authorization = args[5] or "-"
	if authorization ~= "-" then
		h["Authorization"] = "Bearer " .. authorization
	end
	-- Request line, Host and the headers above, without the blank line
	-- that ends them: request() adds Content-Length and the body.
	prefix = wrk.format(nil, nil, h, nil):gsub("\r\n$", "")
	-- ids are tid * 1e9 + n: unique across threads for any run length
	-- this benchmark can reach.
	next_id = tid * 1000000000
	non200 = 0
	notfound = 0
	no_result = 0
	first_bad = ""
	first_404 = ""
end

local META = '"_meta":{"io.modelcontextprotocol/protocolVersion":'
	.. '"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},'
	.. '"io.modelcontextprotocol/clientInfo":'
	.. '{"name":"sextant-bench","version":"1.0"}}'

function request()
	if get_request then
		return get_request
	end
	next_id = next_id + 1
	local params = {}
	if tool then
		table.insert(params, string.format('"name":"%s","arguments":%s',
			tool, arguments))
	end
	if stateless then
		table.insert(params, META)
	end
	local body
	if #params > 0 then
		body = string.format(
			'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{%s}}',
			next_id, method, table.concat(params, ","))
	else
		body = string.format(
			'{"jsonrpc":"2.0","id":%d,"method":"%s"}', next_id, method)
	end
	return prefix .. "Content-Length: " .. #body .. "\r\n\r\n" .. body
end

-- "<status> [upstream <addr>] <first 200 bytes of the body>"
local function describe(status, headers, body)
	local up = headers["X-Upstream"] or headers["x-upstream"]
	local s = tostring(status)
	if up then
		s = s .. " upstream " .. up
	end
	return s .. " " .. body:sub(1, 200):gsub("%s+", " ")
end

function response(status, headers, body)
	if status ~= 200 then
		non200 = non200 + 1
		if status == 404 then
			notfound = notfound + 1
			if first_404 == "" then
				first_404 = describe(status, headers, body)
			end
		end
	elseif not body:find(ok_mark, 1, true) then
		no_result = no_result + 1
	else
		return
	end
	if first_bad == "" then
		first_bad = describe(status, headers, body)
	end
end

function done(summary, latency, requests)
	local non200, notfound, no_result, bad, bad404 = 0, 0, 0, "", ""
	for _, t in ipairs(threads) do
		non200 = non200 + (t:get("non200") or 0)
		notfound = notfound + (t:get("notfound") or 0)
		no_result = no_result + (t:get("no_result") or 0)
		if bad == "" then
			bad = t:get("first_bad") or ""
		end
		if bad404 == "" then
			bad404 = t:get("first_404") or ""
		end
	end
	local e = summary.errors
	local sock = e.connect + e.read + e.write + e.timeout
	local secs = summary.duration / 1e6
	io.write(string.format(
		"MCPBENCH requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d"
			.. " max_us=%d non200=%d notfound=%d no_result=%d connect=%d"
			.. " read=%d write=%d timeout=%d errors=%d\n",
		summary.requests, summary.duration, summary.requests / secs,
		latency:percentile(50), latency:percentile(99), latency.max,
		non200, notfound, no_result, e.connect, e.read, e.write,
		e.timeout, non200 + no_result + sock))
	if bad ~= "" then
		io.write("MCPBENCH first_bad_response: " .. bad .. "\n")
	end
	if bad404 ~= "" then
		io.write("MCPBENCH first_404_response: " .. bad404 .. "\n")
	end
end
