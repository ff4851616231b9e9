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
 * Registers the skill files as resources of cat (SKILL.md: text/markdown,
 * named and described by its frontmatter), after whatever cat holds: they
 * are served in every mode, conformance included.  The definitions live
 * as long as the process.  None when the embedded skills are malformed
 * (logged).  STATUS_FULL when cat has no room.
 */
struct catalog;
int skills_register_catalog(struct catalog *cat) WUR;

#endif
