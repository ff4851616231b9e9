/*
 * tool_mesh_istio.c - the "istio" set's manage_istio_config: list, get,
 * create, patch and delete Istio and Gateway API objects through the
 * Kubernetes API (lib/kube), for the one cluster of [kubernetes].
 *
 * Reads are open to any caller.  Writes are off unless [kubernetes]
 * allow_writes, stay within allowed_groups, allowed_kinds and
 * allowed_namespaces, and go in two steps: confirmed=false answers a
 * preview and changes nothing, confirmed=true applies.  A client that
 * declared elicitation is asked instead, whatever confirmed says: the
 * model's confirmed cannot stand in for the person's yes.  Every write
 * applied (or refused by the API) is logged with the caller's identity.
 */
#include "tools/tool_common.h"
#include "tools/tool_mesh_istio.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/log.h"
#include "conf/config.h"
#include "kube/kube.h"
#include "tools/tool.h"

/* JSON shown in a text answer: an object or preview, indented. */
#define SHOWN_JSON_FLAGS (JSON_INDENT(2) | JSON_SORT_KEYS)

enum action {
	A_LIST,
	A_GET,
	A_CREATE,
	A_PATCH,
	A_DELETE
};
static const char *const action_names[] = {"list", "get", "create", "patch",
					   "delete"};

/* One call's arguments, borrowed from args (or from data for create). */
struct req {
	enum action action;
	const char *group, *version, *kind, *ns, *name, *selector;
	bool confirmed;
	json_t *data; /* json_data parsed, owned */
	char plural[72];
	char path[KUBE_PATH_MAX];
	struct kube_config kc;
	struct kube_opts opts;
};

static bool
listed(const struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

/* A kind in allowed_kinds, compared by plural (VirtualService =
 * virtualservices). */
static bool
kind_listed(const struct strlist *l, const char *plural)
{
	char p[72];

	for (size_t i = 0; i < l->n; i++)
		if (kube_plural(l->v[i], p, sizeof(p)) == STATUS_OK &&
		    strcmp(p, plural) == 0)
			return true;
	return false;
}

static void
list_text(const struct strlist *l, char *out, size_t len)
{
	struct buf b;

	buf_init(&b, len > 0 ? len - 1 : 0);
	for (size_t i = 0; i < l->n; i++)
		buf_printf(&b, "%s%s", i > 0 ? ", " : "", l->v[i]);
	snprintf(out, len, "%s", b.data != NULL ? b.data : "");
	buf_free(&b);
}

static const char *
str_at(const json_t *o, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(o, a), b));
}

/* An object's resourceVersion, "?" without one. */
static const char *
rv_of(const json_t *o)
{
	const char *rv = str_at(o, "metadata", "resourceVersion");

	return rv != NULL ? rv : "?";
}

/* The text of an API failure, with what to do about it. */
static json_t *
kube_failed(struct call *call, const struct req *q, const struct kube_error *e)
{
	const char *hint = "";

	log_warn(&(struct log_fields){.request_id = call_request_id(call),
				      .tool = "manage_istio_config",
				      .duration_ms = -1,
				      .status = (int)e->http_status},
		 "kubernetes %s %s: %s (%s)", action_names[q->action], q->path,
		 e->client, e->detail);
	switch (e->kind) {
	case KUBE_FAIL_NOT_FOUND:
		hint = q->name != NULL
			       ? "check the name with action=list in this "
				 "namespace; a kind the cluster does not "
				 "serve (its CRD not installed, another "
				 "version) is not found either"
			       : "check group, version and kind: the cluster "
				 "may not serve them (CRD not installed)";
		break;
	case KUBE_FAIL_CONFLICT:
		hint = q->action == A_CREATE
			       ? "an object of that name exists: patch it, or "
				 "create under another name"
			       : "the object changed since its "
				 "resourceVersion: get it again and retry "
				 "with the new one";
		break;
	case KUBE_FAIL_INVALID:
		hint = "fix json_data where the message says and call again";
		break;
	case KUBE_FAIL_REFUSED:
		hint = "the gateway's token lacks the right: grant its "
		       "service account this verb on the resource (RBAC)";
		break;
	case KUBE_FAIL_CONFIG:
	case KUBE_FAIL_UNAVAILABLE:
		hint = "check [kubernetes] in the gateway's configuration";
		break;
	default: break;
	}
	return tool_result_error("kubernetes %s %s failed (HTTP %ld): %s%s%s",
				 action_names[q->action], q->kind,
				 e->http_status, e->client, hint[0] ? ": " : "",
				 hint);
}

/* A write the configuration does not allow: NULL when allowed. */
static json_t *
write_refused(const struct config *cfg, const struct req *q)
{
	char l[512];

	if (!cfg->kubernetes.allow_writes)
		return tool_result_error(
			"writes are off: the gateway's [kubernetes] "
			"allow_writes is false, so %s is refused; list and "
			"get work, or ask its operator to allow writes",
			action_names[q->action]);
	if (cfg->kubernetes.allowed_kinds.n > 0 &&
	    !kind_listed(&cfg->kubernetes.allowed_kinds, q->plural)) {
		list_text(&cfg->kubernetes.allowed_kinds, l, sizeof(l));
		return tool_result_error(
			"kind \"%s\" may not be written: [kubernetes] "
			"allowed_kinds is %s",
			q->kind, l);
	}
	if (cfg->kubernetes.allowed_namespaces.n > 0 &&
	    !listed(&cfg->kubernetes.allowed_namespaces, q->ns)) {
		list_text(&cfg->kubernetes.allowed_namespaces, l, sizeof(l));
		return tool_result_error(
			"namespace \"%s\" may not be written: [kubernetes] "
			"allowed_namespaces is %s",
			q->ns, l);
	}
	return NULL;
}

/* metadata.<field> of json_data and the argument arg (*v) name the same,
 * or one is absent (*v then takes metadata's); else an error result. */
static json_t *
agree(const json_t *meta, const char *field, const char *arg, const char **v)
{
	const char *m = json_string_value(json_object_get(meta, field));

	if (*v == NULL)
		*v = m;
	else if (m != NULL && strcmp(m, *v) != 0)
		return tool_result_error(
			"json_data: metadata.%s \"%s\" is not %s \"%s\": "
			"give one of them, or the same",
			field, m, arg, *v);
	return NULL;
}

/* create's object: json_data with apiVersion, kind, namespace and name
 * filled from the arguments, or an error result when they disagree. */
static json_t *
create_object(struct req *q)
{
	char api[300], p[72];
	const char *v, *kind;
	json_t *meta, *res;

	if (!json_is_object(q->data))
		return tool_result_error(
			"json_data: expected the object to create as a JSON "
			"object ({\"metadata\": {\"name\": ...}, \"spec\": "
			"...})");
	snprintf(api, sizeof(api), "%s/%s", q->group, q->version);
	v = json_string_value(json_object_get(q->data, "apiVersion"));
	if (v != NULL && strcmp(v, api) != 0)
		return tool_result_error(
			"json_data: apiVersion \"%s\" is not group/version "
			"\"%s\": give group and version to match it",
			v, api);
	kind = json_string_value(json_object_get(q->data, "kind"));
	if (kind != NULL && (kube_plural(kind, p, sizeof(p)) != STATUS_OK ||
			     strcmp(p, q->plural) != 0))
		return tool_result_error(
			"json_data: kind \"%s\" is not \"%s\": give kind to "
			"match it",
			kind, q->kind);
	if (kind == NULL && strcmp(q->kind, q->plural) == 0)
		return tool_result_error(
			"kind \"%s\" is a resource name: create needs the Kind "
			"(\"VirtualService\"), as kind or in json_data",
			q->kind);
	meta = json_object_get(q->data, "metadata");
	if (meta == NULL) {
		meta = json_object();
		json_object_set_new(q->data, "metadata", meta);
	}
	if (!json_is_object(meta))
		return tool_result_error(
			"json_data: metadata must be an object");
	if ((res = agree(meta, "namespace", "namespace", &q->ns)) != NULL ||
	    (res = agree(meta, "name", "object", &q->name)) != NULL)
		return res;
	if (q->ns == NULL || q->name == NULL)
		return tool_result_error(
			"create needs the namespace and the name: give "
			"namespace and object, or metadata.namespace and "
			"metadata.name in json_data");
	if (json_object_get(q->data, "apiVersion") == NULL)
		json_object_set_new(q->data, "apiVersion", json_string(api));
	if (kind == NULL)
		json_object_set_new(q->data, "kind", json_string(q->kind));
	json_object_set_new(meta, "namespace", json_string(q->ns));
	json_object_set_new(meta, "name", json_string(q->name));
	return NULL;
}

/* An object as shown: without managedFields and kubectl's copy of the
 * last applied configuration (the object again). */
static json_t *
shown(const json_t *obj)
{
	json_t *o = json_deep_copy(obj);
	json_t *meta = json_object_get(o, "metadata");

	json_object_del(meta, "managedFields");
	json_object_del(json_object_get(meta, "annotations"),
			"kubectl.kubernetes.io/last-applied-configuration");
	if (json_object_size(json_object_get(meta, "annotations")) == 0)
		json_object_del(meta, "annotations");
	return o;
}

static json_t *
answer_base(const struct req *q, bool applied)
{
	json_t *sc =
		json_pack("{s:s, s:b, s:s}", "action", action_names[q->action],
			  "applied", applied, "kind", q->kind);

	if (sc != NULL && q->ns != NULL)
		json_object_set_new(sc, "namespace", json_string(q->ns));
	if (sc != NULL && q->name != NULL)
		json_object_set_new(sc, "name", json_string(q->name));
	return sc;
}

static void
json_text(struct buf *b, const json_t *v)
{
	char *s = json_dumps(v, SHOWN_JSON_FLAGS);

	if (s == NULL) {
		buf_set_error(b, STATUS_NOMEM);
		return;
	}
	buf_puts(b, s);
	buf_puts(b, "\n");
	free(s);
}

/* The changes of a patch as lines: "replace /spec/x: 1 -> 2". */
static void
changes_text(struct buf *b, const json_t *changes)
{
	size_t i;
	json_t *c;

	json_array_foreach(changes, i, c)
	{
		const char *op = json_string_value(json_object_get(c, "op"));
		char *from = json_dumps(json_object_get(c, "from"),
					JSON_COMPACT | JSON_ENCODE_ANY);
		char *to = json_dumps(json_object_get(c, "to"),
				      JSON_COMPACT | JSON_ENCODE_ANY);
		buf_printf(b, "  %s %s", op,
			   json_string_value(json_object_get(c, "path")));
		if (from != NULL && to != NULL)
			buf_printf(b, ": %s -> %s\n", from, to);
		else
			buf_printf(b, ": %s\n", from != NULL ? from : to);
		free(from);
		free(to);
		if (tool_fit(b) != STATUS_OK)
			break;
	}
}

/* GETs q's path into *ans; an answer of the API that is no object (404,
 * ...) is *result, an error result, with STATUS_OK.  Else the failure
 * (STATUS_CANCELLED, STATUS_NOMEM). */
static int
fetch(struct call *call, const struct req *q, json_t **ans, json_t **result)
{
	struct kube_error e;
	int rc = kube_request(&q->kc, "GET", q->path, NULL, &q->opts, ans, &e);

	if (rc == STATUS_CANCELLED || rc == STATUS_NOMEM)
		return rc;
	if (rc != STATUS_OK)
		*result = kube_failed(call, q, &e);
	return STATUS_OK;
}

/* ---- reads -------------------------------------------------------------- */

static int
do_list(struct call *call, struct req *q, json_t **result)
{
	json_t *ans = NULL, *items, *sc = NULL, *it;
	struct buf b;
	size_t i, n;
	int rc;

	if ((rc = fetch(call, q, &ans, result)) != STATUS_OK || *result != NULL)
		return rc;
	items = json_array();
	n = json_array_size(json_object_get(ans, "items"));
	buf_init(&b, call_text_budget(call));
	buf_printf(&b, "%zu %s object%s in %s%s%s:\n", n, q->kind,
		   n == 1 ? "" : "s",
		   q->ns != NULL ? "namespace " : "all namespaces",
		   q->ns != NULL ? q->ns : "",
		   q->selector != NULL ? " matching the label selector" : "");
	json_array_foreach(json_object_get(ans, "items"), i, it)
	{
		const char *ns = str_at(it, "metadata", "namespace");
		const char *name = str_at(it, "metadata", "name");
		const char *rv = str_at(it, "metadata", "resourceVersion");
		const char *ts = str_at(it, "metadata", "creationTimestamp");
		json_t *row = json_pack("{s:s}", "name", name ? name : "");
		if (ns != NULL)
			json_object_set_new(row, "namespace", json_string(ns));
		if (rv != NULL)
			json_object_set_new(row, "resourceVersion",
					    json_string(rv));
		if (ts != NULL)
			json_object_set_new(row, "created", json_string(ts));
		json_array_append_new(items, row);
		buf_printf(&b, "- %s/%s  resourceVersion %s%s%s\n",
			   ns ? ns : "-", name ? name : "?", rv ? rv : "?",
			   ts ? "  created " : "", ts ? ts : "");
		if (tool_fit(&b) != STATUS_OK) {
			buf_printf(&b, "(the rest in structured content)\n");
			tool_fit(&b);
			break;
		}
	}
	sc = answer_base(q, false);
	json_object_set_new(sc, "items", items);
	json_object_set_new(sc, "more", json_false());
	rc = tool_result_fit(call, &b, sc,
			     (struct tool_rows[]){{.key = "items",
						   .more = "more",
						   .what = "objects",
						   .total = n}},
			     1, "narrow with namespace or label_selector",
			     result);
	buf_free(&b);
	json_decref(ans);
	return rc;
}

static int
do_get(struct call *call, struct req *q, json_t **result)
{
	json_t *ans = NULL, *obj, *sc;
	struct buf b;
	int rc;

	if ((rc = fetch(call, q, &ans, result)) != STATUS_OK || *result != NULL)
		return rc;
	obj = shown(ans);
	json_decref(ans);
	buf_init(&b, call_text_budget(call));
	buf_printf(&b, "%s %s/%s (resourceVersion %s):\n", q->kind, q->ns,
		   q->name, rv_of(obj));
	json_text(&b, obj);
	if (tool_fit(&b) != STATUS_OK)
		buf_puts(&b, "(too long for the text: the object is whole in "
			     "structured content)\n");
	sc = answer_base(q, false);
	json_object_set_new(sc, "object", obj);
	rc = tool_result_fit(call, &b, sc, NULL, 0, NULL, result);
	buf_free(&b);
	return rc;
}

/* ---- writes ---------------------------------------------------------------- */

/* The preview of a write, as text into b and fields of sc; patch reads the
 * object (before) to show the changes. */
static json_t *
preview(struct call *call, struct req *q, struct buf *b, json_t *sc,
	json_t **before)
{
	struct kube_error e;
	json_t *after, *changes;
	int rc;

	*before = NULL;
	if (q->action == A_CREATE) {
		buf_printf(b, "create %s %s/%s:\n", q->kind, q->ns, q->name);
		json_text(b, q->data);
		json_object_set(sc, "object", q->data);
		return NULL;
	}
	rc = kube_request(&q->kc, "GET", q->path, NULL, &q->opts, before, &e);
	if (rc != STATUS_OK)
		return kube_failed(call, q, &e);
	if (q->action == A_DELETE) {
		json_t *obj = shown(*before);
		buf_printf(b, "delete %s %s/%s (resourceVersion %s):\n",
			   q->kind, q->ns, q->name, rv_of(obj));
		json_text(b, obj);
		json_object_set_new(sc, "object", obj);
		return NULL;
	}
	after = kube_merge_patch(*before, q->data);
	changes = kube_diff(*before, after);
	json_decref(after);
	buf_printf(b, "patch %s %s/%s (resourceVersion %s): %zu change%s\n",
		   q->kind, q->ns, q->name, rv_of(*before),
		   json_array_size(changes),
		   json_array_size(changes) == 1 ? "" : "s");
	changes_text(b, changes);
	json_object_set_new(sc, "changes", changes);
	return NULL;
}

/* Asks the person behind an elicitation client: STATUS_OK with *yes,
 * STATUS_UNSUPPORTED (no elicitation: the two steps then), STATUS_AGAIN
 * (2026-07-28: the client answers in its retry), or a failure. */
static int
ask(struct call *call, const struct buf *preview_text, bool *yes)
{
	json_t *resp = NULL, *r;
	char msg[2048];
	int rc;

	*yes = false;
	if (!call_client_has(call, "elicitation"))
		return STATUS_UNSUPPORTED;
	snprintf(msg, sizeof(msg), "Apply this change to the cluster?\n%s",
		 preview_text->data != NULL ? preview_text->data : "");
	rc = call_input(
		call,
		json_pack("{s:{s:s, s:{s:s, s:{s:s, s:{s:{s:s, s:s, s:s}}, "
			  "s:[s]}}}}",
			  "confirm_write", "method", "elicitation/create",
			  "params", "message", msg, "requestedSchema", "type",
			  "object", "properties", "apply", "type", "boolean",
			  "title", "Apply", "description",
			  "true applies the change; false leaves the cluster "
			  "as it is",
			  "required", "apply"),
		&resp);
	if (rc != STATUS_OK)
		return rc;
	r = json_object_get(resp, "confirm_write");
	*yes = json_is_string(json_object_get(r, "action")) &&
	       strcmp(json_string_value(json_object_get(r, "action")),
		      "accept") == 0 &&
	       json_is_true(
		       json_object_get(json_object_get(r, "content"), "apply"));
	json_decref(resp);
	return STATUS_OK;
}

static int
do_write(struct call *call, struct req *q, json_t **result)
{
	struct kube_error e;
	json_t *before = NULL, *ans = NULL, *sc, *body = NULL;
	const char *method;
	char who[320], coll[KUBE_PATH_MAX], err[256];
	bool yes = false;
	struct buf b;
	int rc;

	sc = answer_base(q, false);
	buf_init(&b, call_text_budget(call));
	*result = preview(call, q, &b, sc, &before);
	if (*result != NULL) {
		rc = STATUS_OK;
		goto out;
	}
	rc = ask(call, &b, &yes);
	if (rc == STATUS_AGAIN || rc == STATUS_CANCELLED || rc == STATUS_NOMEM)
		goto out;
	if (rc == STATUS_OK && !yes) {
		buf_rollback(&b, 0);
		buf_printf(&b,
			   "Not applied: the user did not confirm the %s "
			   "of %s %s/%s; nothing changed.\n",
			   action_names[q->action], q->kind, q->ns, q->name);
		rc = tool_result_fit(call, &b, sc, NULL, 0, NULL, result);
		sc = NULL;
		goto out;
	}
	if (rc == STATUS_UNSUPPORTED) /* no elicitation: the two steps */
		yes = q->confirmed;
	else if (rc != STATUS_OK) { /* no answer, or an error answer */
		*result = tool_result_error(
			"nothing changed: the client did not answer the "
			"request to confirm the %s; call again",
			action_names[q->action]);
		rc = STATUS_OK;
		goto out;
	}
	if (!yes) {
		size_t len = b.len;
		buf_printf(&b,
			   "Preview only: nothing changed.  Call again with "
			   "the same arguments and confirmed=true to apply.\n");
		if (tool_fit(&b) != STATUS_OK)
			buf_rollback(&b, len);
		rc = tool_result_fit(call, &b, sc, NULL, 0, NULL, result);
		sc = NULL;
		goto out;
	}
	/* confirmed, by the person or (without elicitation) the caller */
	method = q->action == A_CREATE	? "POST"
		 : q->action == A_PATCH ? "PATCH"
					: "DELETE";
	q->opts.content_type =
		q->action == A_PATCH ? "application/merge-patch+json" : NULL;
	if (q->action == A_CREATE) {
		struct kube_ref r = {q->group, q->version, q->kind,
				     q->ns,    NULL,	   NULL};
		rc = kube_path(&r, coll, sizeof(coll), err, sizeof(err));
		if (rc != STATUS_OK)
			goto out;
	}
	body = q->action == A_DELETE ? NULL : q->data;
	call_identity(call, who, sizeof(who));
	rc = kube_request(&q->kc, method,
			  q->action == A_CREATE ? coll : q->path, body,
			  &q->opts, &ans, &e);
	log_info(&(struct log_fields){.request_id = call_request_id(call),
				      .tool = "manage_istio_config",
				      .duration_ms = -1,
				      .status = (int)e.http_status},
		 "kubernetes write %s %s %s/%s (%s/%s) by %s: %s",
		 action_names[q->action], q->kind, q->ns, q->name, q->group,
		 q->version, who, rc == STATUS_OK ? "applied" : "failed");
	if (rc == STATUS_CANCELLED || rc == STATUS_NOMEM)
		goto out;
	if (rc != STATUS_OK) {
		*result = kube_failed(call, q, &e);
		rc = STATUS_OK;
		goto out;
	}
	buf_rollback(&b, 0);
	json_object_set_new(sc, "applied", json_true());
	if (q->action == A_PATCH) {
		json_t *changes = kube_diff(before, ans);
		json_object_set_new(sc, "changes", changes);
		buf_printf(&b, "Patched %s %s/%s (resourceVersion now %s):\n",
			   q->kind, q->ns, q->name, rv_of(ans));
		changes_text(&b, changes);
	} else if (q->action == A_CREATE) {
		buf_printf(&b, "Created %s %s/%s (resourceVersion %s).\n",
			   q->kind, q->ns, q->name, rv_of(ans));
		json_object_set_new(sc, "object", shown(ans));
	} else {
		buf_printf(&b, "Deleted %s %s/%s.\n", q->kind, q->ns, q->name);
	}
	rc = tool_result_fit(call, &b, sc, NULL, 0, NULL, result);
	sc = NULL;
out:
	json_decref(sc);
	json_decref(before);
	json_decref(ans);
	buf_free(&b);
	return rc;
}

/* ---- the tool ---------------------------------------------------------------- */

static int
manage_istio_config(struct call *call, const json_t *args, json_t **result)
{
	const struct config *cfg = call_config(call);
	const char *action = tool_arg_str(args, "action");
	const char *data = tool_arg_str(args, "json_data");
	struct req q = {0};
	char l[512], err[256];
	bool write;
	int rc = STATUS_OK;

	*result = NULL;
	for (q.action = A_LIST; q.action <= A_DELETE; q.action++)
		if (action != NULL &&
		    strcmp(action, action_names[q.action]) == 0)
			break;
	if (q.action > A_DELETE) {
		*result = tool_result_error(
			"action: expected list, get, create, patch or delete");
		goto out;
	}
	write = q.action >= A_CREATE;
	q.group = tool_arg_str(args, "group");
	q.version = tool_arg_str(args, "version");
	q.kind = tool_arg_str(args, "kind");
	q.ns = tool_arg_str(args, "namespace");
	q.name = tool_arg_str(args, "object");
	q.selector = tool_arg_str(args, "label_selector");
	q.confirmed = json_is_true(json_object_get(args, "confirmed"));
	q.kc = (struct kube_config){
		cfg->kubernetes.api_url, cfg->kubernetes.token_file,
		cfg->kubernetes.ca_file, cfg->kubernetes.timeout_ms};
	q.opts = (struct kube_opts){.cancelled = call_cancelled_arg,
				    .arg = call};
	if (q.group == NULL || q.version == NULL || q.kind == NULL ||
	    kube_plural(q.kind, q.plural, sizeof(q.plural)) != STATUS_OK) {
		*result = tool_result_error(
			"group, version and kind: expected e.g. "
			"networking.istio.io, v1, VirtualService");
		goto out;
	}
	if (!listed(&cfg->kubernetes.allowed_groups, q.group)) {
		list_text(&cfg->kubernetes.allowed_groups, l, sizeof(l));
		*result = tool_result_error("group \"%s\" is not one this tool "
					    "reaches: [kubernetes] "
					    "allowed_groups is %s",
					    q.group, l[0] ? l : "empty");
		goto out;
	}
	if (q.action == A_CREATE || q.action == A_PATCH) {
		json_error_t je;
		if (data == NULL) {
			*result = tool_result_error(
				"json_data: %s needs it (%s)", action,
				q.action == A_CREATE
					? "the object to create"
					: "a JSON merge patch, e.g. "
					  "{\"spec\": {...}}");
			goto out;
		}
		q.data = json_loads(data, JSON_REJECT_DUPLICATES, &je);
		if (!json_is_object(q.data)) {
			*result = tool_result_error(
				"json_data: expected a JSON object (%s at "
				"character %d)",
				q.data == NULL ? je.text : "not an object",
				q.data == NULL ? je.position : 0);
			goto out;
		}
	}
	if (q.action == A_CREATE && (*result = create_object(&q)) != NULL)
		goto out;
	if ((q.action == A_GET || q.action == A_PATCH ||
	     q.action == A_DELETE) &&
	    (q.ns == NULL || q.name == NULL)) {
		*result = tool_result_error(
			"%s needs namespace and object (the object's name): "
			"list the names with action=list",
			action);
		goto out;
	}
	if (write && (*result = write_refused(cfg, &q)) != NULL)
		goto out;
	{
		struct kube_ref r = {q.group, q.version, q.kind,
				     q.ns,    q.name,	 q.selector};
		if (q.action == A_CREATE)
			r.name = q.name; /* its path for the preview's GET */
		if (kube_path(&r, q.path, sizeof(q.path), err, sizeof(err)) !=
		    STATUS_OK) {
			*result = tool_result_error("%s", err);
			goto out;
		}
	}
	switch (q.action) {
	case A_LIST: rc = do_list(call, &q, result); break;
	case A_GET: rc = do_get(call, &q, result); break;
	default: rc = do_write(call, &q, result); break;
	}
out:
	json_decref(q.data);
	if (rc == STATUS_AGAIN || rc == STATUS_CANCELLED)
		return rc;
	return tool_done(rc, result);
}

const struct tool_handler mesh_istio_tool_handlers[] = {
	{"manage_istio_config", manage_istio_config},
	{NULL, NULL},
};
