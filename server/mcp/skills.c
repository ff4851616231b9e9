/*
 * skills.c - the Skills extension's data (SEP-2640): the files embedded
 * from server/mcp/skills/ become skill:// resources, and each SKILL.md a skill
 * entry whose frontmatter and file manifest are computed once from the
 * embedded bytes, so that what skills/list promises is what
 * resources/read serves.
 */
#include "mcp/skills.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/auth.h"
#include "base/embed.h"
#include "base/log.h"
#include "mcp/catalog.h"

/* build/gen/skills.c (scripts/gen-embed.sh) */
extern const struct embed_file skills_files[];
extern const size_t skills_files_count;

#define SKILLS_SRC_DIR "server/mcp/skills/"
#define MANIFEST       "SKILL.md"

/* Files are compiled in, so this only has to exceed what server/mcp/skills/
 * holds; far below the spec's SHOULD NOT (512 files, 16 MiB per skill). */
#define SKILLS_MAX_FILES 64
#define SKILLS_URI_MAX	 256
/* Agent Skills: name 1-64 characters, description at most 1024. */
#define NAME_MAX_LEN 64
#define DESC_MAX_LEN 1024

struct skill_file {
	char uri[SKILLS_URI_MAX];
	char name[NAME_MAX_LEN + 1];	    /* SKILL.md: frontmatter name */
	char description[DESC_MAX_LEN + 1]; /* SKILL.md: frontmatter */
	char digest[AUTH_HASH_LEN + 1];
	size_t size;
	const char *text; /* the embedded bytes, NUL-terminated */
	bool manifest;	  /* a SKILL.md: one skill */
	struct resource_def def;
};

static struct skill_file files[SKILLS_MAX_FILES];
static size_t nfiles;
static int init_status = STATUS_INVALID;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static int read_file(const char *uri, void *arg, json_t **contents);

/* Agent Skills naming: lowercase alphanumerics and single hyphens, not at
 * either end. */
static bool
name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > NAME_MAX_LEN || s[0] == '-' || s[n - 1] == '-' ||
	    strstr(s, "--") != NULL)
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		      *s == '-'))
			return false;
	return true;
}

/*
 * One `key: "value"` line of the frontmatter, up to the newline at *p
 * (advanced past it).  Only double-quoted values with \" and \\ escapes
 * are accepted, so that the value is exactly what a YAML parser reads.
 */
static bool
frontmatter_line(const char **p, char *key, size_t keylen, char *val,
		 size_t vallen)
{
	const char *s = *p;
	size_t k = 0, v = 0;

	while ((*s >= 'a' && *s <= 'z') || *s == '-' || *s == '_') {
		if (k + 1 >= keylen)
			return false;
		key[k++] = *s++;
	}
	key[k] = '\0';
	if (k == 0 || s[0] != ':' || s[1] != ' ' || s[2] != '"')
		return false;
	for (s += 3; *s != '"'; s++) {
		if (*s == '\0' || *s == '\n' || v + 1 >= vallen)
			return false;
		if (*s == '\\') {
			s++;
			if (*s != '"' && *s != '\\')
				return false;
		}
		val[v++] = *s;
	}
	val[v] = '\0';
	for (s++; *s == ' '; s++)
		;
	if (*s != '\n')
		return false;
	*p = s + 1;
	return true;
}

/* name and description from the frontmatter block that opens text. */
static bool
parse_manifest(struct skill_file *f)
{
	const char *p = f->text;
	char key[32], val[DESC_MAX_LEN + 1];

	if (strncmp(p, "---\n", 4) != 0)
		return false;
	for (p += 4; strncmp(p, "---\n", 4) != 0;) {
		if (!frontmatter_line(&p, key, sizeof(key), val, sizeof(val)))
			return false;
		if (strcmp(key, "name") == 0 && f->name[0] == '\0' &&
		    strlen(val) <= NAME_MAX_LEN)
			memcpy(f->name, val, strlen(val) + 1);
		else if (strcmp(key, "description") == 0 &&
			 f->description[0] == '\0')
			memcpy(f->description, val, strlen(val) + 1);
		else
			return false; /* unknown or repeated key */
	}
	return name_ok(f->name) && f->description[0] != '\0';
}

/* The skill name of a SKILL.md URI: the segment before /SKILL.md. */
static bool
uri_name_is(const char *uri, const char *name)
{
	size_t n = strlen(uri), m = strlen(name), t = strlen("/" MANIFEST);

	return n > t + m && strcmp(uri + n - t, "/" MANIFEST) == 0 &&
	       uri[n - t - m - 1] == '/' &&
	       strncmp(uri + n - t - m, name, m) == 0;
}

static int
init_file(struct skill_file *f, const struct embed_file *e)
{
	const char *rel = e->path + strlen(SKILLS_SRC_DIR);
	const char *base = strrchr(rel, '/');
	int n;

	if (strncmp(e->path, SKILLS_SRC_DIR, strlen(SKILLS_SRC_DIR)) != 0 ||
	    base == NULL)
		return STATUS_INVALID;
	n = snprintf(f->uri, sizeof(f->uri), SKILLS_URI_PREFIX "%s", rel);
	if (n < 0 || (size_t)n >= sizeof(f->uri))
		return STATUS_INVALID;
	f->text = e->text;
	f->size = strlen(e->text);
	if (auth_hash_key(f->text, f->size, f->digest) != STATUS_OK)
		return STATUS_IO;
	f->manifest = strcmp(base + 1, MANIFEST) == 0;
	if (f->manifest &&
	    (!parse_manifest(f) || !uri_name_is(f->uri, f->name)))
		return STATUS_INVALID;
	f->def = (struct resource_def){
		.uri = f->uri,
		.name = f->manifest ? f->name : base + 1,
		.description = f->manifest ? f->description : NULL,
		.mime_type = f->manifest ? "text/markdown" : "text/plain",
		.read = read_file,
	};
	return STATUS_OK;
}

static void
init(void)
{
	size_t i;
	int rc = STATUS_OK;

	if (skills_files_count > SKILLS_MAX_FILES)
		rc = STATUS_LIMIT;
	for (i = 0; rc == STATUS_OK && i < skills_files_count; i++)
		rc = init_file(&files[i], &skills_files[i]);
	if (rc != STATUS_OK) {
		log_error(&(struct log_fields){.duration_ms = -1},
			  "embedded skill %s is malformed (%s): SKILL.md must "
			  "open with --- lines of name: \"...\" and "
			  "description: \"...\", name = its directory",
			  i > 0 ? skills_files[i - 1].path : "(all)",
			  status_str(rc));
		return;
	}
	nfiles = skills_files_count;
	init_status = STATUS_OK;
}

static int
ready(void)
{
	pthread_once(&init_once, init);
	return init_status;
}

static const struct skill_file *
find(const char *uri)
{
	size_t i;

	for (i = 0; i < nfiles; i++)
		if (strcmp(files[i].uri, uri) == 0)
			return &files[i];
	return NULL;
}

static int
read_file(const char *uri, void *arg, json_t **contents)
{
	const struct skill_file *f = ready() == STATUS_OK ? find(uri) : NULL;

	(void)arg;
	*contents = NULL;
	if (f == NULL)
		return STATUS_NOTFOUND;
	*contents = json_pack("[{s:s, s:s, s:s}]", "uri", f->uri, "mimeType",
			      f->def.mime_type, "text", f->text);
	return *contents != NULL ? STATUS_OK : STATUS_NOMEM;
}

/* The entry of the skill whose SKILL.md is m: every file under its
 * directory, SKILL.md first.  NULL on ENOMEM. */
static json_t *
entry(const struct skill_file *m)
{
	size_t dirlen = strlen(m->uri) - strlen(MANIFEST), i;
	json_t *res = json_array(), *o;

	o = json_pack("{s:s, s:{s:s, s:s}, s:o}", "uri", m->uri, "frontmatter",
		      "name", m->name, "description", m->description,
		      "resources", res);
	for (i = 0; o != NULL && i < nfiles; i++) {
		const struct skill_file *f = &files[i];

		if (f != m && strncmp(f->uri, m->uri, dirlen) != 0)
			continue;
		if (json_array_insert_new(
			    res, f == m ? 0 : json_array_size(res),
			    json_pack("{s:s, s:s, s:I}", "uri", f->uri,
				      "digest", f->digest, "size",
				      (json_int_t)f->size)) != 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

int
skills_list(json_t **skills)
{
	json_t *arr = NULL;
	size_t i;
	int rc;

	*skills = NULL;
	if ((rc = ready()) != STATUS_OK)
		return rc;
	arr = json_array();
	for (i = 0; arr != NULL && i < nfiles; i++)
		if (files[i].manifest &&
		    json_array_append_new(arr, entry(&files[i])) != 0) {
			json_decref(arr);
			arr = NULL;
		}
	*skills = arr;
	return arr != NULL ? STATUS_OK : STATUS_NOMEM;
}

int
skills_get(const char *uri, json_t **out)
{
	const struct skill_file *f;
	int rc;

	*out = NULL;
	if ((rc = ready()) != STATUS_OK)
		return rc;
	f = find(uri);
	if (f == NULL || !f->manifest)
		return STATUS_NOTFOUND;
	*out = entry(f);
	return *out != NULL ? STATUS_OK : STATUS_NOMEM;
}

int
skills_register_catalog(struct catalog *cat)
{
	size_t n = ready() == STATUS_OK ? nfiles : 0;

	for (size_t i = 0; i < n; i++) {
		int rc = catalog_add_resource(cat, &files[i].def, NULL);

		if (rc != STATUS_OK)
			return rc;
	}
	return STATUS_OK;
}
