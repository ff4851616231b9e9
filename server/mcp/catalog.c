/*
 * catalog.c - the registries of resources, resource templates and
 * prompts.  Filled at start-up, read-only afterwards (see catalog.h).
 * The skill files (skills.c) follow the registered resources in every
 * mode: they are compiled in, and catalog_reset does not drop them.
 */
#include "mcp/catalog.h"

#include <string.h>

#include "mcp/skills.h"

/* Fixed capacities: every entry is compiled in, so these only need to
 * exceed what the code registers. */
#define MAX_RESOURCES 256
#define MAX_TEMPLATES 64
#define MAX_PROMPTS   128

static const struct resource_def *resources[MAX_RESOURCES];
static size_t nresources;
static const struct resource_template_def *templates[MAX_TEMPLATES];
static size_t ntemplates;
static const struct prompt_def *prompts[MAX_PROMPTS];
static size_t nprompts;

int
catalog_add_resource(const struct resource_def *def)
{
	if (nresources == MAX_RESOURCES)
		return STATUS_FULL;
	resources[nresources++] = def;
	return STATUS_OK;
}

int
catalog_add_template(const struct resource_template_def *def)
{
	if (ntemplates == MAX_TEMPLATES)
		return STATUS_FULL;
	templates[ntemplates++] = def;
	return STATUS_OK;
}

int
catalog_add_prompt(const struct prompt_def *def)
{
	if (nprompts == MAX_PROMPTS)
		return STATUS_FULL;
	if (catalog_prompt_find(def->name) != NULL)
		return STATUS_EXISTS;
	prompts[nprompts++] = def;
	return STATUS_OK;
}

void
catalog_reset(void)
{
	nresources = ntemplates = nprompts = 0;
}

size_t
catalog_resource_count(void)
{
	return nresources + skills_resource_count();
}

const struct resource_def *
catalog_resource_at(size_t i)
{
	return i < nresources ? resources[i]
			      : skills_resource_at(i - nresources);
}

size_t
catalog_template_count(void)
{
	return ntemplates;
}

const struct resource_template_def *
catalog_template_at(size_t i)
{
	return i < ntemplates ? templates[i] : NULL;
}

size_t
catalog_prompt_count(void)
{
	return nprompts;
}

const struct prompt_def *
catalog_prompt_at(size_t i)
{
	return i < nprompts ? prompts[i] : NULL;
}

const struct prompt_def *
catalog_prompt_find(const char *name)
{
	size_t i;

	for (i = 0; i < nprompts; i++)
		if (strcmp(prompts[i]->name, name) == 0)
			return prompts[i];
	return NULL;
}

int
catalog_read(const char *uri, json_t **contents)
{
	size_t i;
	int rc;

	*contents = NULL;
	for (i = 0; i < catalog_resource_count(); i++) {
		const struct resource_def *d = catalog_resource_at(i);

		if (d != NULL && strcmp(d->uri, uri) == 0)
			return d->read(uri, contents);
	}
	for (i = 0; i < ntemplates; i++) {
		rc = templates[i]->read(uri, contents);
		if (rc != STATUS_NOTFOUND)
			return rc;
	}
	return STATUS_NOTFOUND;
}
