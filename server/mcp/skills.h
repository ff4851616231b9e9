/*
 * skills.h - the skills this server offers through the Skills extension
 * (SEP-2640, io.modelcontextprotocol/skills): SKILL.md runbooks and their
 * files, compiled in from server/mcp/skills/<name>/ (build/gen/skills.c), each
 * file a resource at skill://sextant/<name>/<path>.
 *
 * The embedded files are parsed and hashed once, on first use
 * (pthread_once), and are read-only afterwards: every function here is
 * thread-safe and quick (no I/O).
 */
#ifndef SEXTANT_SKILLS_H
#define SEXTANT_SKILLS_H

#include <jansson.h>
#include <stddef.h>

#include "base/status.h"
#include "mcp/catalog.h"

#define SKILLS_EXTENSION  "io.modelcontextprotocol/skills"
#define SKILLS_URI_PREFIX "skill://sextant/"

/*
 * Sets *skills to a new array of skill entries, one per SKILL.md:
 * {uri, frontmatter: {name, description}, resources: [{uri, digest:
 * "sha256:<hex>", size}]}, the resources listing every file of the skill
 * (SKILL.md included) with the SHA-256 and length of the bytes
 * resources/read serves.  STATUS_NOMEM, or STATUS_INVALID when an embedded
 * SKILL.md is malformed (a build mistake, logged).  Caller frees with
 * json_decref.
 */
int skills_list(json_t **skills) WUR;

/*
 * Sets *entry to a new skill entry (as in skills_list) for the skill whose
 * SKILL.md is at uri; STATUS_NOTFOUND when no skill is served there, else
 * as skills_list.  uri: borrowed.
 */
int skills_get(const char *uri, json_t **entry) WUR;

/*
 * The skill files as catalog resources (SKILL.md: text/markdown, named
 * and described by its frontmatter).  The definitions live as long as the
 * process.  0 files when the embedded skills are malformed.
 */
size_t skills_resource_count(void);
const struct resource_def *skills_resource_at(size_t i);

#endif
