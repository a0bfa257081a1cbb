/* jk_history.c - history_request over an in-memory history of this process's stored
 * executions (line numbers = execution counts, session number JKP_HIST_SESSION).
 *
 *   tail   : the last n entries (all when n is absent), oldest first
 *   range  : session 0 or ours, start <= line < stop (stop absent: to the end)
 *   search : IPython's glob (fnmatch: * ? [..], anchored), optional unique (latest
 *            occurrence of each input kept) and n (the last n matches)
 * With output=true each entry is [session, line, [input, output-or-null]].
 * Entries live until the process ends, as IPython keeps a session's history.
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "jk_internal.h"

#define JKP_HIST_SESSION 1

typedef struct hist_entry {
    int line;
    char *code, *output;
} hist_entry;

struct jkp_history {
    hist_entry *v;
    size_t n, cap;
};

jkp_history *jkp_history_create(void) { return calloc(1, sizeof(jkp_history)); }

void jkp_history_destroy(jkp_history *h)
{
    if (!h) return;
    for (size_t i = 0; i < h->n; i++) {
        free(h->v[i].code);
        free(h->v[i].output);
    }
    free(h->v);
    free(h);
}

int jkp_history_add(jkp_history *h, int line, const char *code, const char *output)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        hist_entry *v = realloc(h->v, cap * sizeof *v);
        if (!v) return -1;
        h->v = v;
        h->cap = cap;
    }
    hist_entry e = {line, strdup(code), output ? strdup(output) : NULL};
    if (!e.code || (output && !e.output)) {
        free(e.code);
        free(e.output);
        return -1;
    }
    h->v[h->n++] = e;
    return 0;
}

static json_t *entry_json(const hist_entry *e, int output)
{
    if (!output) return json_pack("[i, i, s]", JKP_HIST_SESSION, e->line, e->code);
    return json_pack("[i, i, [s, s?]]", JKP_HIST_SESSION, e->line, e->code, e->output);
}

static int get_int(json_t *req, const char *key, int def)
{
    json_t *v = json_object_get(req, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : def;
}

/* search: walks from the newest entry back, so "the last n matches" and "the latest
 * occurrence of each input" (unique, with a JSON object as the set of inputs seen)
 * both fall out of one pass; the result is then put back in oldest-first order. */
static void search(const jkp_history *h, json_t *req, int output, int n, json_t *out)
{
    const char *pattern = json_string_value(json_object_get(req, "pattern"));
    int unique = json_is_true(json_object_get(req, "unique"));
    json_t *seen = unique ? json_object() : NULL;
    if (!pattern) pattern = "*";
    for (size_t i = h->n; i-- > 0 && (n < 0 || json_array_size(out) < (size_t)n);) {
        if (fnmatch(pattern, h->v[i].code, 0) != 0) continue;
        if (seen) {
            if (json_object_get(seen, h->v[i].code)) continue;
            json_object_set_new(seen, h->v[i].code, json_true());
        }
        json_array_insert_new(out, 0, entry_json(&h->v[i], output));
    }
    json_decref(seen);
}

json_t *jkp_history_query(const jkp_history *h, json_t *req)
{
    const char *type = json_string_value(json_object_get(req, "hist_access_type"));
    int output = json_is_true(json_object_get(req, "output"));
    int n = get_int(req, "n", -1);
    json_t *out = json_array();
    if (!type || !out) return out;
    if (!strcmp(type, "tail")) {
        size_t from = (n >= 0 && (size_t)n < h->n) ? h->n - (size_t)n : 0;
        for (size_t i = from; i < h->n; i++)
            json_array_append_new(out, entry_json(&h->v[i], output));
    } else if (!strcmp(type, "range")) {
        int session = get_int(req, "session", 0);
        int start = get_int(req, "start", 0), stop = get_int(req, "stop", -1);
        if (session != 0 && session != JKP_HIST_SESSION) return out;
        for (size_t i = 0; i < h->n; i++)
            if (h->v[i].line >= start && (stop < 0 || h->v[i].line < stop))
                json_array_append_new(out, entry_json(&h->v[i], output));
    } else if (!strcmp(type, "search")) {
        search(h, req, output, n, out);
    } else {
        jkp_log("history_request: unknown hist_access_type '%.32s'", type);
    }
    return out;
}

void jkp_handle_history(jkp_chan *ch, const jkp_msg *req)
{
    json_t *hist = jkp_history_query(ch->k->history, req->content);
    jkp_reply(ch->sock, &ch->k->session, req, "history_reply", NULL,
              json_pack("{s:s, s:o}", "status", "ok", "history", hist ? hist : json_array()));
}
