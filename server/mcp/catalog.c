/*
 * catalog.c - the registries of resources, resource templates and
 * prompts.  Filled at start-up, read-only afterwards (see catalog.h).
 */
#include "mcp/catalog.h"

#include <stdlib.h>
#include <string.h>

/* Fixed capacities: every entry is compiled in, so these only need to
 * exceed what the code registers. */
#define MAX_RESOURCES 256
#define MAX_TEMPLATES 64
#define MAX_PROMPTS   128

struct catalog {
	const struct resource_def *resources[MAX_RESOURCES];
	void *resource_args[MAX_RESOURCES];
	size_t nresources;
	const struct resource_template_def *templates[MAX_TEMPLATES];
	void *template_args[MAX_TEMPLATES];
	size_t ntemplates;
	const struct prompt_def *prompts[MAX_PROMPTS];
	size_t nprompts;
};

int
catalog_new(struct catalog **out)
{
	*out = calloc(1, sizeof(**out));
	return *out != NULL ? STATUS_OK : STATUS_NOMEM;
}

void
catalog_free(struct catalog *cat)
{
	free(cat);
}

int
catalog_add_resource(struct catalog *cat, const struct resource_def *def,
		     void *arg)
{
	if (cat->nresources == MAX_RESOURCES)
		return STATUS_FULL;
	cat->resource_args[cat->nresources] = arg;
	cat->resources[cat->nresources++] = def;
	return STATUS_OK;
}

int
catalog_add_template(struct catalog *cat,
		     const struct resource_template_def *def, void *arg)
{
	if (cat->ntemplates == MAX_TEMPLATES)
		return STATUS_FULL;
	cat->template_args[cat->ntemplates] = arg;
	cat->templates[cat->ntemplates++] = def;
	return STATUS_OK;
}

int
catalog_add_prompt(struct catalog *cat, const struct prompt_def *def)
{
	if (cat->nprompts == MAX_PROMPTS)
		return STATUS_FULL;
	if (catalog_prompt_find(cat, def->name) != NULL)
		return STATUS_EXISTS;
	cat->prompts[cat->nprompts++] = def;
	return STATUS_OK;
}

size_t
catalog_resource_count(const struct catalog *cat)
{
	return cat->nresources;
}

const struct resource_def *
catalog_resource_at(const struct catalog *cat, size_t i)
{
	return i < cat->nresources ? cat->resources[i] : NULL;
}

size_t
catalog_template_count(const struct catalog *cat)
{
	return cat->ntemplates;
}

const struct resource_template_def *
catalog_template_at(const struct catalog *cat, size_t i)
{
	return i < cat->ntemplates ? cat->templates[i] : NULL;
}

size_t
catalog_prompt_count(const struct catalog *cat)
{
	return cat->nprompts;
}

const struct prompt_def *
catalog_prompt_at(const struct catalog *cat, size_t i)
{
	return i < cat->nprompts ? cat->prompts[i] : NULL;
}

const struct prompt_def *
catalog_prompt_find(const struct catalog *cat, const char *name)
{
	for (size_t i = 0; i < cat->nprompts; i++)
		if (strcmp(cat->prompts[i]->name, name) == 0)
			return cat->prompts[i];
	return NULL;
}

int
catalog_read(const struct catalog *cat, const char *uri, json_t **contents)
{
	size_t i;
	int rc;

	*contents = NULL;
	for (i = 0; i < cat->nresources; i++) {
		const struct resource_def *d = cat->resources[i];

		if (strcmp(d->uri, uri) == 0)
			return d->read(uri, cat->resource_args[i], contents);
	}
	for (i = 0; i < cat->ntemplates; i++) {
		rc = cat->templates[i]->read(uri, cat->template_args[i],
					     contents);
		if (rc != STATUS_NOTFOUND)
			return rc;
	}
	return STATUS_NOTFOUND;
}
