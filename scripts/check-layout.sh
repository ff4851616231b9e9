#!/bin/sh
# check-layout.sh - checks that the includes of lib/ and server/ follow the
# rooms: which room may include which, no circle between rooms, include
# circles inside a room only where its README.md says why, and a README.md
# in every room.  POSIX sh and awk only; run from anywhere; exit 0 when the
# tree is clean, 1 on any violation, 2 when it cannot run.
#
# Rooms are the folders of lib/ and server/ (server/main.c forms the room
# "server").  A quoted include names its room relative to lib/
# or server/ ("base/buf.h" = lib/base/buf.h); one that resolves to neither
# (generated headers under build/gen) is ignored, as are <system> headers.
#
# The rules.  R1-R4 are the table below: an include of a header matching
# "included" by a file matching "includer" is refused, unless the includer
# matches "unless includer" or the header matches "unless included"; the
# indented lines under a rule say why, and what to do instead.  Patterns:
# "dir/" is anything under dir, "*" any characters but "/", "{a,b}" a or b,
# "own" the included header's own folder, "-" nothing.
RULES='
# id | includer      | included                                     | unless includer   | unless included
R1   | lib/          | server/                                      | -                 | -
       lib/ is building blocks that know nothing of HTTP or MCP: move the code
       to server/, or pass what lib/ needs in as a parameter or a callback
R2   | server/mcp/   | server/{transport,http,conformance,tools}/   | -                 | server/tools/tool.h
       the session layer reaches transports only through mcp/exchange.h and
       tool handlers only through the tool_fn interface of tools/tool.h: add
       what is missing there
R3   | server/tools/ | server/                                      | -                 | server/tools/ server/core/instances.h
       tools reach the rest of server/ only through tools/tool.h (and
       core/instances.h): take what you need from the call context or a
       call_* function of tools/tool.h
R4   | lib/ server/  | server/tools/tool_*.h server/conformance/*.h | own server/boot/  | server/tools/tool_common.h
       only the boot code names the tool families: add the family to the
       handler table of server/boot/boot.c and reach it through the tool registry
'
# R0, R5, R6 and R7 are checked by the code below:
#   R0  a quoted include names its room ("mcp/call.h", never "call.h" or
#       "../mcp/call.h"), so that this script and a reader see the arrow.
#   R5  no include circle between rooms.
#   R6  inside a room, an include circle between modules (x.c + x.h; A -> B
#       when A.c or A.h includes B.h) only where the room's README.md has a
#       line "Include circle: a b c — why", and no such line for a circle
#       that is gone.
#   R7  every folder of lib/ and server/ holding .c or .h files, and lib/
#       and server/ themselves, has a README.md.

case $0 in
*/*) here=${0%/*} ;;
*) here=. ;;
esac
cd "$here/.." || exit 2
if [ ! -d lib ] || [ ! -d server ]; then
	echo "check-layout: no lib/ and server/ in $(pwd)" >&2
	exit 2
fi

find lib server -type f \( -name '*.c' -o -name '*.h' \) | CHECK_LAYOUT_RULES=$RULES awk '
function dirof(p) {
	if (p !~ /\//)
		return "."
	sub(/\/[^\/]*$/, "", p)
	return p
}
function modof(p) {
	sub(/^.*\//, "", p)
	sub(/\.[ch]$/, "", p)
	return p
}
function trim(s) {
	gsub(/^[ \t]+|[ \t]+$/, "", s)
	return s
}
# p with "." and ".." taken out; "" when it climbs above its start.
function norm(p,    n, part, out, k, i, s) {
	n = split(p, part, "/")
	k = 0
	for (i = 1; i <= n; i++) {
		if (part[i] == "" || part[i] == ".")
			continue
		if (part[i] == "..") {
			if (k == 0)
				return ""
			k--
			continue
		}
		out[++k] = part[i]
	}
	s = ""
	for (i = 1; i <= k; i++)
		s = s (i > 1 ? "/" : "") out[i]
	return s
}
# A pattern as an anchored regex: "*" any characters but "/", "{a,b}" a or
# b, a trailing "/" anything under that folder.
function globre(g,    r, i, c, n) {
	r = "^"
	n = length(g)
	for (i = 1; i <= n; i++) {
		c = substr(g, i, 1)
		if (c == "*")
			r = r "[^/]*"
		else if (c == "{")
			r = r "("
		else if (c == ",")
			r = r "|"
		else if (c == "}")
			r = r ")"
		else if (index(".+?()|$^[]\\", c) > 0)
			r = r "\\" c
		else
			r = r c
	}
	return c == "/" ? r : r "$"
}
# Does path match one of the patterns of list?  owndir: for "own".
function pmatch(list, path, owndir,    n, ps, i, p) {
	n = split(list, ps, /[ \t]+/)
	for (i = 1; i <= n; i++) {
		p = ps[i]
		if (p == "" || p == "-")
			continue
		if (p == "own") {
			if (dirof(path) == owndir)
				return 1
			continue
		}
		if (path ~ globre(p))
			return 1
	}
	return 0
}
function isort(a, n,    i, j, v) {
	for (i = 2; i <= n; i++) {
		v = a[i]
		for (j = i - 1; j > 0 && a[j] > v; j--)
			a[j + 1] = a[j]
		a[j + 1] = v
	}
}
function say(msg) {
	print "check-layout: " msg
	nviol++
}

# A graph g of named nodes: GN[g] nodes GV[g,i], index GI[g,name], edges
# GE[g,i,j] with their witness GW[g,i,j] (the first include line) and count
# GC[g,i,j], out-lists GO[g,i].
function node(g, name) {
	if (!((g, name) in GI)) {
		GI[g, name] = ++GN[g]
		GV[g, GN[g]] = name
		GO[g, GN[g]] = ""
	}
	return GI[g, name]
}
function edge(g, a, b, witness,    i, j) {
	i = node(g, a)
	j = node(g, b)
	if (!((g, i, j) in GE)) {
		GE[g, i, j] = 1
		GW[g, i, j] = witness
		GC[g, i, j] = 0
		GO[g, i] = GO[g, i] " " j
	}
	GC[g, i, j]++
}
# Strongly connected components by reachability: CO[g,i] is the smallest
# node index in the component of i, CS[g,i] its size.
function components(g,    i, j, n, q, seen, h, t, k, nx, x) {
	n = GN[g]
	for (i = 1; i <= n; i++) {
		split("", seen)
		h = 1
		t = 1
		q[1] = i
		seen[i] = 1
		while (h <= t) {
			k = split(GO[g, q[h++]], nx, " ")
			for (x = 1; x <= k; x++)
				if (!(nx[x] in seen)) {
					seen[nx[x]] = 1
					q[++t] = nx[x]
				}
		}
		for (j = 1; j <= n; j++)
			RCH[g, i, j] = (j in seen) ? 1 : 0
	}
	for (i = 1; i <= n; i++) {
		CO[g, i] = i
		for (j = 1; j <= n; j++)
			if (RCH[g, i, j] && RCH[g, j, i]) {
				CO[g, i] = j
				break
			}
	}
	for (i = 1; i <= n; i++)
		CS[g, i] = 0
	for (i = 1; i <= n; i++)
		CS[g, CO[g, i]]++
}
# Shortest path s ... t as node indices separated by spaces ("" if none).
function shortest(g, s, t,    q, prev, h, k, nx, nn, x, u, p) {
	h = 1
	k = 1
	q[1] = s
	prev[s] = 0
	while (h <= k) {
		u = q[h++]
		if (u == t)
			break
		nn = split(GO[g, u], nx, " ")
		for (x = 1; x <= nn; x++)
			if (!(nx[x] in prev)) {
				prev[nx[x]] = u
				q[++k] = nx[x]
			}
	}
	if (!(t in prev))
		return ""
	p = t
	for (u = prev[t]; u != 0; u = prev[u])
		p = u " " p
	return p
}
function hop(g, i, j,    w) {
	w = GW[g, i, j]
	if (GC[g, i, j] > 1)
		w = w " and " (GC[g, i, j] - 1) " more"
	return w
}
function declared(d, k, m) {
	return index(" " DL[d, k] " ", " " m " ") > 0
}

{ isfile[$0] = 1; files[++nfiles] = $0 }

END {
	# The rule table.
	n = split(ENVIRON["CHECK_LAYOUT_RULES"], line, "\n")
	for (i = 1; i <= n; i++) {
		if (line[i] ~ /^[ \t]*(#|$)/)
			continue
		if (line[i] ~ /^[ \t]/ && nr > 0) {
			rwhy[nr] = rwhy[nr] (rwhy[nr] != "" ? " " : "") trim(line[i])
			continue
		}
		if (split(line[i], col, "|") != 5) {
			print "check-layout: bad rule line: " line[i] > "/dev/stderr"
			exit 2
		}
		nr++
		rid[nr] = trim(col[1]); rfrom[nr] = trim(col[2]); rto[nr] = trim(col[3])
		rexfrom[nr] = trim(col[4]); rexto[nr] = trim(col[5]); rwhy[nr] = ""
	}

	isort(files, nfiles)
	for (fi = 1; fi <= nfiles; fi++) {
		f = files[fi]
		room = dirof(f)
		if (!(room in isroom)) {
			isroom[room] = 1
			rooms[++nrooms] = room
		}
		node("M" room, modof(f))
		ln = 0
		while ((rc = (getline l < f)) > 0) {
			ln++
			if (l !~ /^[ \t]*#[ \t]*include[ \t]*"/)
				continue
			ninc++
			p = l
			sub(/^[^"]*"/, "", p)
			sub(/".*$/, "", p)
			where = f ":" ln ": includes \"" p "\""
			t = ""
			if (("lib/" p) in isfile)
				t = "lib/" p
			if (("server/" p) in isfile) {
				if (t != "") {
					say(where ": R0: both lib/" p " and server/" p " exist: room names must be unique across lib/ and server/; rename one room")
					continue
				}
				t = "server/" p
			}
			if (t == "") {
				q = norm(room "/" p)
				if (q != "" && (q in isfile)) {
					r = q
					sub(/^(lib|server)\//, "", r)
					say(where ": R0: an include names its room relative to lib/ or server/: write #include \"" r "\"")
				}
				continue
			}
			for (r = 1; r <= nr; r++)
				if (pmatch(rfrom[r], f, "") && pmatch(rto[r], t, "") &&
				    !pmatch(rexfrom[r], f, dirof(t)) && !pmatch(rexto[r], t, ""))
					say(where ": " rid[r] ": " rwhy[r])
			troom = dirof(t)
			if (troom != room)
				edge("R", room, troom, f ":" ln " includes \"" p "\"")
			else if (t ~ /\.h$/ && modof(t) != modof(f))
				edge("M" room, modof(f), modof(t), f ":" ln " includes \"" p "\"")
		}
		if (rc < 0) {
			print "check-layout: cannot read " f > "/dev/stderr"
			exit 2
		}
		close(f)
	}

	# R5: rooms in a circle.  One shortest circle through each arrow that
	# lies on one, each circle printed once.
	for (i = 1; i <= nrooms; i++)
		node("R", rooms[i])
	components("R")
	for (i = 1; i <= GN["R"]; i++) {
		for (j = 1; j <= GN["R"]; j++) {
			if (!(("R", i, j) in GE) || i == j || CO["R", i] != CO["R", j])
				continue
			k = split(i " " shortest("R", j, i), cyc, " ")
			# rotate to start at the smallest name, so each circle has one key
			best = 1
			for (x = 2; x < k; x++)
				if (GV["R", cyc[x]] < GV["R", cyc[best]])
					best = x
			key = ""
			for (x = 0; x < k - 1; x++)
				key = key " " cyc[1 + (best - 1 + x) % (k - 1)]
			if (key in shown)
				continue
			shown[key] = 1
			m = split(key, c, " ")
			c[m + 1] = c[1]
			names = ""
			why = ""
			for (x = 1; x <= m; x++) {
				names = names GV["R", c[x]] " -> "
				why = why (x > 1 ? "; " : "") hop("R", c[x], c[x + 1])
			}
			say("R5: rooms in a circle: " names GV["R", c[1]] " (" why "): cut one of these arrows")
		}
	}

	# R6: include circles inside a room, against the README.md lines.
	for (ri = 1; ri <= nrooms; ri++) {
		d = rooms[ri]
		g = "M" d
		readme = d "/README.md"
		nd = 0
		rl = 0
		while ((getline l < readme) > 0) {
			rl++
			if (l !~ /Include circle:/)
				continue
			sub(/^.*Include circle:/, "", l)
			x = index(l, "\342\200\224")  # em dash
			if (x == 0)
				x = index(l, " - ")
			if (x > 0)
				l = substr(l, 1, x - 1)
			gsub(/[`,*]/, " ", l)
			gsub(/[ \t]+/, " ", l)
			DL[d, ++nd] = trim(l)
			DW[d, nd] = readme ":" rl
		}
		close(readme)
		components(g)
		for (i = 1; i <= GN[g]; i++) {
			if (CO[g, i] != i || CS[g, i] < 2)
				continue
			k = 0
			split("", mem)
			for (j = 1; j <= GN[g]; j++)
				if (CO[g, j] == i)
					mem[++k] = GV[g, j]
			isort(mem, k)
			list = ""
			for (j = 1; j <= k; j++)
				list = list (j > 1 ? " " : "") mem[j]
			# the declared line holding most of the circle
			bestd = 0
			bestn = 0
			for (x = 1; x <= nd; x++) {
				c0 = 0
				for (j = 1; j <= k; j++)
					if (declared(d, x, mem[j]))
						c0++
				if (c0 > bestn) {
					bestn = c0
					bestd = x
				}
			}
			if (bestn == k)
				continue
			if (bestd == 0) {
				say("R6: " d ": modules in an include circle not declared in " readme ": " list ": break the circle, or say why in a line \"Include circle: " list " — why\"")
				for (j = 1; j <= k; j++)
					extra[j] = 1
			} else {
				more = ""
				for (j = 1; j <= k; j++) {
					extra[j] = !declared(d, bestd, mem[j])
					if (extra[j])
						more = more " " mem[j]
				}
				say("R6: " d ": the include circle declared in " DW[d, bestd] " as \"" DL[d, bestd] "\" is larger today: " list "; also in it:" more ": break those arrows, or declare the whole circle")
			}
			for (j = 1; j <= k; j++) {
				if (!extra[j])
					continue
				a = GI[g, mem[j]]
				for (y = 1; y <= k; y++) {
					b = GI[g, mem[y]]
					if ((g, a, b) in GE)
						print "check-layout:     " mem[j] " -> " mem[y] ": " hop(g, a, b)
					if (!extra[y] && ((g, b, a) in GE))
						print "check-layout:     " mem[y] " -> " mem[j] ": " hop(g, b, a)
				}
			}
		}
		for (x = 1; x <= nd; x++) {
			k = split(DL[d, x], dm, " ")
			if (k < 2) {
				say("R6: " DW[d, x] ": \"Include circle: " DL[d, x] "\" names fewer than two modules: list the modules of the circle, separated by spaces, before the dash")
				continue
			}
			gone = ""
			for (j = 1; j <= k; j++)
				if (!((g, dm[j]) in GI))
					gone = gone " " dm[j]
			if (gone != "") {
				say("R6: " DW[d, x] ": the declared include circle \"" DL[d, x] "\" names modules " d "/ does not have:" gone ": update the line")
				continue
			}
			# the declared modules grouped by the circle each is in today
			split("", grp)
			ngrp = 0
			loose = ""
			for (j = 1; j <= k; j++) {
				a = CO[g, GI[g, dm[j]]]
				if (CS[g, a] < 2) {
					loose = loose " " dm[j]
					continue
				}
				if (!(a in grp)) {
					gk[++ngrp] = a
					grp[a] = ""
				}
				grp[a] = grp[a] (grp[a] != "" ? " " : "") dm[j]
			}
			if (ngrp == 1 && loose == "")
				continue
			if (ngrp == 0) {
				say("R6: " DW[d, x] ": the declared include circle \"" DL[d, x] "\" no longer exists: remove the line")
				continue
			}
			now = ""
			for (j = 1; j <= ngrp; j++)
				now = now (j > 1 ? "; " : "") grp[gk[j]]
			say("R6: " DW[d, x] ": the declared include circle \"" DL[d, x] "\" is not one circle today (circles among these: " now (loose != "" ? "; in none:" loose : "") "): update the line")
		}
	}

	# R7: a README.md in every room, and in lib/ and server/.
	need["lib"] = 1
	need["server"] = 1
	for (i = 1; i <= nrooms; i++)
		need[rooms[i]] = 1
	k = 0
	for (d in need)
		nl[++k] = d
	isort(nl, k)
	for (i = 1; i <= k; i++) {
		if ((getline l < (nl[i] "/README.md")) < 0)
			say("R7: " nl[i] "/ has no README.md: write one (what the room is for, its files one line each, what it may include)")
		close(nl[i] "/README.md")
	}

	if (nviol > 0) {
		print "check-layout: " nviol " violation" (nviol > 1 ? "s" : "") " (" nfiles " files, " ninc + 0 " includes, " nrooms " rooms)"
		exit 1
	}
	print "check-layout: ok (" nfiles " files, " ninc + 0 " includes, " nrooms " rooms)"
	exit 0
}
'
