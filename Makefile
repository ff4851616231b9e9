# Sextant - MCP gateway for observability.  One non-recursive Makefile.
#
#   make            build/sextant (optimised, -Werror)
#   make run        install what running needs (as root), build, serve
#   make test       install what testing needs (as root), ASan+UBSan build,
#                   unit + integration tests, one summary line
#   make asan       build/asan/sextant
#   make fuzz       libFuzzer harnesses (clang), FUZZ_SECONDS each
#   make bench      bench/protocol.sh
#   make check-layout  who may include whom (scripts/check-layout.sh)
#   make format / format-check / clean
#   V=1             the whole commands instead of "  CC    lib/base/buf.c"

.DEFAULT_GOAL := all
VERSION := 0.1.0
CC ?= gcc
CLANG ?= clang
PKGS := libmicrohttpd jansson libpq openssl libcurl zlib libprotobuf-c cjose

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wpointer-arith -Wformat=2 -Wvla \
	-Wno-missing-field-initializers
# User CFLAGS are added to the warning set, never replace it.
BASE_CFLAGS := $(WARN) -D_GNU_SOURCE -DSEXTANT_VERSION='"$(VERSION)"' \
	-Ilib -Iserver -MMD -MP $(PKG_CFLAGS)
OPT_CFLAGS := -O2 -g -fno-omit-frame-pointer
SAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined
LDLIBS := $(PKG_LIBS) -lpthread -lm

# Quiet by default, kernel style: one short line per step (the compiler's
# warnings and errors still show in full); V=1 echoes the commands.
# $(call say,STEP,WHAT) is a recipe line of its own.
ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-5s %s\n' '$(1)' '$(2)'
endif

# ---- sources, one list per room (each folder's README says what it holds;
# scripts/check-layout.sh checks who may include whom) -----------------------
BASE_SRC := $(addprefix lib/base/,status.c buf.c base64.c log.c pool.c \
	expo.c auth.c seal.c sse.c timerange.c redact.c clock.c strdist.c \
	curlx.c)
JSON_SRC := $(addprefix lib/json/,jsonload.c jsondump.c jsonschema.c)
CONF_SRC := $(addprefix lib/conf/,toml.c config.c)
# ---- [migrate] schema migrations (lib/pg/migrate, migrations/*.sql) -------
# The SQL files are embedded as C strings (scripts/gen-embed.sh) in a
# generated source compiled into libsextant like any lib source (objects
# land in <variant>/obj/build/gen/).  The directory is a prerequisite so
# that adding or removing a file regenerates it.
MIGRATE_SQL := $(sort $(wildcard migrations/*.sql))
build/gen/migrations.c: $(MIGRATE_SQL) migrations scripts/gen-embed.sh
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)sh scripts/gen-embed.sh migrate_sql $(MIGRATE_SQL) > $@.tmp && mv $@.tmp $@
PG_SRC := $(addprefix lib/pg/,pg.c pglisten.c migrate.c sessdb.c) \
	build/gen/migrations.c
# ---- [otlp] OTLP/HTTP payload decoding (lib/otlp, proto/) -----------------
# protoc-c (Debian's protobuf-c-compiler) turns the .proto subset in proto/
# into build/gen/otlp/opentelemetry/proto/.../*.pb-c.[ch], compiled into
# libsextant like the other sources (and kept out of format-check).
OTLP_PROTO := $(addprefix proto/opentelemetry/proto/,common/v1/common.proto \
	resource/v1/resource.proto trace/v1/trace.proto \
	metrics/v1/metrics.proto collector/trace/v1/trace_service.proto \
	collector/metrics/v1/metrics_service.proto)
OTLP_GEN := build/gen/otlp
OTLP_GEN_C := $(patsubst proto/%.proto,$(OTLP_GEN)/%.pb-c.c,$(OTLP_PROTO))
OTLP_GEN_H := $(OTLP_GEN_C:.c=.h)
OTLP_SRC := $(addprefix lib/otlp/,otlp.c otlp_json.c otlp_rows.c store.c) \
	$(OTLP_GEN_C)
BASE_CFLAGS += -I$(OTLP_GEN)
$(OTLP_GEN_C) $(OTLP_GEN_H) &: $(OTLP_PROTO)
	@mkdir -p $(OTLP_GEN)
	$(call say,PROTO,$(OTLP_GEN))
	$(Q)protoc-c --proto_path=proto --c_out=$(OTLP_GEN) $(OTLP_PROTO)
# What includes the generated headers waits for them (a clean tree has no
# .d files to say so yet).
$(foreach v,build build/asan build/fuzz,$(patsubst %.c,$(v)/obj/%.o,\
	$(filter lib/%,$(OTLP_SRC)) $(OTLP_GEN_C))) \
	build/test/test_otlp build/asan/test/test_otlp \
	build/fuzz/fuzz_otlp: $(OTLP_GEN_H)
# ---------------------------------------------------------------------------
PROM_SRC := $(addprefix lib/prom/,promql.c grafana.c)
TELEMETRY_SRC := $(addprefix lib/telemetry/,spanquery.c spanlist.c \
	pointquery.c spansearch.c servicequery.c genai.c rollup.c promcalls.c merge.c render.c health.c \
	timeline.c recentids.c)
TELEMETRY_SRC += lib/telemetry/meshquery.c
TELEMETRY_SRC += lib/telemetry/resourcequery.c
TELEMETRY_SRC += lib/telemetry/tracesummary.c
TELEMETRY_SRC += lib/telemetry/spanread.c
DEMO_SRC := lib/demo/demo.c
LIB_SRC := $(BASE_SRC) $(JSON_SRC) $(CONF_SRC) $(PG_SRC) $(OTLP_SRC) \
	$(PROM_SRC) $(TELEMETRY_SRC) $(DEMO_SRC)
LIB_SRC += lib/kube/kube.c
LIB_SRC += $(addprefix lib/oauth/,oauth.c jwks.c fetch.c tokcache.c prm.c)

# ---- [skills] the Skills extension (SEP-2640): the files of
# server/mcp/skills/<name>/ (a SKILL.md and what it refers to), embedded like
# the migrations (scripts/gen-embed.sh) and served by server/mcp/skills.c at
# skill://sextant/<name>/...  The directories are prerequisites so that
# adding or removing a file regenerates it.
SKILL_FILES := $(sort $(shell find server/mcp/skills -type f ! -name '.*'))
build/gen/skills.c: $(SKILL_FILES) $(sort $(dir $(SKILL_FILES))) \
		scripts/gen-embed.sh
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)sh scripts/gen-embed.sh skills_files $(SKILL_FILES) > $@.tmp && mv $@.tmp $@
# ---- [apps] the MCP Apps extension (SEP-1865): each server/ui/apps/<app>.html
# with the server/ui/lib/ modules and styles it names inlined
# (scripts/gen-apps.sh), embedded like the skills and served by
# server/mcp/apps.c at ui://sextant/<app>.
APP_PAGES := $(sort $(wildcard server/ui/apps/*.html))
APP_LIB := $(sort $(wildcard server/ui/lib/*))
build/gen/apps.c: $(APP_PAGES) $(APP_LIB) server/ui/apps server/ui/lib \
		scripts/gen-apps.sh scripts/gen-embed.sh
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)sh scripts/gen-apps.sh build/gen/apps $(APP_PAGES) && \
	sh scripts/gen-embed.sh apps_files \
		$(patsubst server/ui/apps/%,build/gen/apps/%,$(APP_PAGES)) \
		> $@.tmp && mv $@.tmp $@
# ---- [citations] get_citations' index (server/tools/tool_mesh_ui.c): every
# "## " section of Sextant's own documentation and of the curated
# docs/citations/<domain>.md, embedded by scripts/gen-citations.sh.
CITE_DOCS := README.md $(sort $(wildcard docs/*.md)) \
	$(sort $(wildcard server/mcp/skills/investigate/*.md))
CITE_CURATED := $(sort $(wildcard docs/citations/*.md))
build/gen/citations.c: $(CITE_DOCS) $(CITE_CURATED) docs docs/citations \
		server/mcp/skills/investigate scripts/gen-citations.sh
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)sh scripts/gen-citations.sh $(CITE_DOCS) -- $(CITE_CURATED) > $@.tmp && mv $@.tmp $@
# ---- [ui] the web console (server/rest/ui.c): server/ui/console/ and the
# drawing modules of server/ui/lib/, embedded under a content hash
# (scripts/gen-ui.sh) so their URLs can be cached for good.
UI_FILES := $(sort $(shell cd server/ui && find console lib -type f \
	! -name '.*' ! -name index.html ! -name README.md))
build/gen/ui.c: $(addprefix server/ui/,$(UI_FILES) console/index.html) \
		server/ui/console server/ui/lib scripts/gen-ui.sh \
		scripts/gen-embed.sh
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)cd server/ui && sh ../../scripts/gen-ui.sh console/index.html \
		$(UI_FILES) > ../../$@.tmp && mv ../../$@.tmp ../../$@
SERVER_SRC := server/boot/boot.c \
	$(addprefix server/core/,server.c maintain.c instances.c demo_data.c) \
	$(addprefix server/http/,http.c ingest.c) \
	$(addprefix server/transport/,transport.c legacy_sse.c stdio_mcp.c) \
	$(addprefix server/mcp/,rpc.c dispatch.c reqmeta.c session.c \
		sessstore.c tasks.c call.c tools.c catalog.c skills.c gateway.c \
		prompts.c) \
	build/gen/skills.c \
	$(addprefix server/tools/,tool_common.c tool_core.c tool_query.c \
		tool_query_otlp.c tool_spans.c tool_genai.c tool_spans_services.c tool_spans_span.c \
		tool_grafana.c tool_detail.c) \
	$(addprefix server/conformance/,conformance_fixtures.c \
		tool_conformance.c tool_conformance_2026.c)
SERVER_SRC += server/tools/tool_mesh_ui.c build/gen/citations.c
SERVER_SRC += server/tools/tool_mesh_istio.c
SERVER_SRC += server/tools/tool_mesh_graph.c
SERVER_SRC += server/tools/tool_mesh_resource.c
SERVER_SRC += server/tools/tool_mesh_traces.c
SERVER_SRC += server/rest/routes.c server/rest/params.c server/rest/rest.c
SERVER_SRC += server/rest/openapi.c
SERVER_SRC += server/mcp/apps.c build/gen/apps.c
SERVER_SRC += server/rest/ui.c build/gen/ui.c
MAIN_SRC := server/main.c
# Tool definitions: server/tools/<set>/<name>.json, and the conformance
# set's in server/conformance/ (the set is the folder's name); the shapes
# their output schemas share ($defs) in TOOLDEF_DEFS.
TOOLDEF_JSON := $(sort $(wildcard server/tools/*/*.json server/conformance/*.json))
TOOLDEF_DEFS := server/tools/defs.json

# test/unit/test_<name>.c; lib tests link libsextant only, server tests both.
LIB_TESTS := toml config jsonschema pool log expo auth sse buf store pg \
	migrate otlp demo merge timerange rollup pointquery spanquery render \
	redact seal servicequery spanlist genai promql grafana promcalls \
	pglisten sessdb jsonload jsondump strdist health timeline recentids
LIB_TESTS += kube
LIB_TESTS += meshquery
LIB_TESTS += resourcequery
LIB_TESTS += tracesummary
LIB_TESTS += oauth
LIB_TESTS += spanread
SERVER_TESTS := session rpc dispatch tools stdio_mcp legacy_sse reqmeta \
	tasks sessstore phrases citations
SERVER_TESTS += openapi
SERVER_TESTS += restparams
UNIT_TESTS := $(LIB_TESTS) $(SERVER_TESTS)
FUZZERS := toml jsonrpc jsonschema otlp merge timerange rollup redact \
	grafana seal note jsonload jsondump
FUZZERS += oauth

# ---- variants: build/ (release) and build/asan/ ----------------------------
B := build
BA := build/asan

# The directories too: a definition added with an old mtime (copied,
# unpacked) changes its directory's, so the table is regenerated.
$(B)/gen/tooldefs.c: $(TOOLDEF_DEFS) $(TOOLDEF_JSON) \
		$(sort $(dir $(TOOLDEF_JSON))) scripts/gen-tooldefs.sh
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)sh scripts/gen-tooldefs.sh $(TOOLDEF_DEFS) $(TOOLDEF_JSON) > $@.tmp \
		&& mv $@.tmp $@

# The quiet lines name the source, or the output when there is no one
# source, with the variant's tag: "  CC    lib/base/buf.c [asan]".
define variant # $(1)=dir $(2)=cflags $(3)=tag in the quiet lines
$(1)/obj/%.o: %.c
	@mkdir -p $$(@D)
	$$(call say,CC,$$<$(3))
	$$(Q)$$(CC) $(2) $$(BASE_CFLAGS) $$(CFLAGS) -c $$< -o $$@
$(1)/obj/gen/tooldefs.o: $(B)/gen/tooldefs.c
	@mkdir -p $$(@D)
	$$(call say,CC,$$<$(3))
	$$(Q)$$(CC) $(2) $$(BASE_CFLAGS) $$(CFLAGS) -c $$< -o $$@
$(1)/libsextant.a: $$(patsubst %.c,$(1)/obj/%.o,$$(LIB_SRC))
	@rm -f $$@
	$$(call say,AR,$$@)
	$$(Q)ar rcs $$@ $$^
$(1)/libserver.a: $$(patsubst %.c,$(1)/obj/%.o,$$(SERVER_SRC)) $(1)/obj/gen/tooldefs.o
	@rm -f $$@
	$$(call say,AR,$$@)
	$$(Q)ar rcs $$@ $$^
$(1)/sextant: $(1)/obj/server/main.o $(1)/libserver.a $(1)/libsextant.a
	$$(call say,LD,$$@)
	$$(Q)$$(CC) $(2) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
$$(addprefix $(1)/test/test_,$$(LIB_TESTS)): $(1)/test/test_%: test/unit/test_%.c $(1)/libsextant.a
	@mkdir -p $$(@D)
	$$(call say,CCLD,$$@)
	$$(Q)$$(CC) $(2) $$(BASE_CFLAGS) -Itest/unit $$(CFLAGS) -o $$@ $$< \
		$(1)/libsextant.a $$(LDLIBS) -lcmocka
$$(addprefix $(1)/test/test_,$$(SERVER_TESTS)): $(1)/test/test_%: test/unit/test_%.c $(1)/libserver.a $(1)/libsextant.a
	@mkdir -p $$(@D)
	$$(call say,CCLD,$$@)
	$$(Q)$$(CC) $(2) $$(BASE_CFLAGS) -Itest/unit $$(CFLAGS) -o $$@ $$< \
		$(1)/libserver.a $(1)/libsextant.a $$(LDLIBS) -lcmocka
endef
$(eval $(call variant,$(B),$(OPT_CFLAGS),))
$(eval $(call variant,$(BA),$(SAN_CFLAGS), [asan]))

.PHONY: all asan run test unit integration fuzz fuzz-run bench format \
	format-check clean check-config check-layout
all: $(B)/sextant
asan: $(BA)/sextant

# Each target that needs packages asks scripts/deps.sh for its own set
# (run: the build and the PostgreSQL server; test: that and the test tools)
# before make reads the pkg-config flags again in the sub-make.
run:
	@sh scripts/deps.sh run
	@$(MAKE) --no-print-directory all
	@sh scripts/run.sh

unit: $(addprefix $(BA)/test/test_,$(UNIT_TESTS))

test:
	@sh scripts/deps.sh test
	@$(MAKE) --no-print-directory asan unit
	@sh test/run.sh

# ---- fuzzing (clang libFuzzer + ASan/UBSan) --------------------------------
FUZZ_SECONDS ?= 60
FZ := build/fuzz
FUZZ_CFLAGS := -O1 -g -fsanitize=fuzzer-no-link,address,undefined
$(FZ)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(call say,CC,$< [fuzz])
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(BASE_CFLAGS) -Wno-unknown-warning-option -Wno-string-concatenation -c $< -o $@
$(FZ)/obj/gen/tooldefs.o: $(B)/gen/tooldefs.c
	@mkdir -p $(@D)
	$(call say,CC,$< [fuzz])
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(BASE_CFLAGS) -c $< -o $@
FZ_OBJ := $(patsubst %.c,$(FZ)/obj/%.o,$(LIB_SRC) $(SERVER_SRC)) $(FZ)/obj/gen/tooldefs.o
# Named only by the pattern rule below: kept, not deleted as intermediates
.SECONDARY: $(FZ_OBJ)
$(FZ)/fuzz_%: test/fuzz/fuzz_%.c $(FZ_OBJ)
	$(call say,CCLD,$@)
	$(Q)$(CLANG) -O1 -g -fsanitize=fuzzer,address,undefined $(BASE_CFLAGS) \
		-Wno-unknown-warning-option -o $@ $(filter %.c %.o,$^) $(LDLIBS)
# Built and run by a sub-make, after deps.sh (which may install clang).
fuzz:
	@sh scripts/deps.sh fuzz
	@$(MAKE) --no-print-directory fuzz-run
fuzz-run: $(addprefix $(FZ)/fuzz_,$(FUZZERS))
	@for f in $(FUZZERS); do \
		mkdir -p $(FZ)/corpus/$$f; \
		echo "fuzz_$$f: $(FUZZ_SECONDS)s"; \
		$(FZ)/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			$(FZ)/corpus/$$f test/fuzz/corpus/$$f || exit 1; \
	done

bench:
	@sh scripts/deps.sh bench
	@$(MAKE) --no-print-directory all
	sh bench/protocol.sh

FORMAT_SRC = $(wildcard lib/*/*.[ch] server/*.[ch] server/*/*.[ch] test/unit/*.[ch] test/fuzz/*.c)
format:
	$(call say,FMT,$(words $(FORMAT_SRC)) files)
	$(Q)clang-format -i $(FORMAT_SRC)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_SRC) && echo "format-check: ok"

check-layout:
	@sh scripts/check-layout.sh

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
