/* kl_budget.c - the total memory budget of the cell language's values.
 *
 * Each operation already has its own size limit (KLP_MAX_STR, KLP_MAX_ITEMS); this
 * bounds their sum: the namespace plus whatever the running statement has created.
 *
 * How it counts. klp_eval charges every value it returns that the evaluation made
 * (a value held only by the evaluator, refcount 1): its own storage, and the storage
 * of children that nothing else holds (those a builtin made, such as range's ints).
 * List, tuple and dict displays charge only their slots: their items were charged when
 * they were evaluated. append, extend and += on a list charge the slots they add.
 *
 * The namespace is measured by walking it (a value shared by several names counted
 * once). Between walks the check is conservative: the last walk's size plus all that
 * was charged since (a walk during a statement keeps that statement's charges, whose
 * values may be assigned after it), so values freed since count until the next walk.
 * A walk is made only when that sum would pass the budget, at most once a statement:
 * its cost (tens of ms for millions of items) is paid near the budget, not on every
 * statement. Operations that know their result's size before building it (str * n,
 * str + str, list * n, list + list, range) ask first.
 *
 * The budget is per engine (one kernel session): KILN_VALUE_BUDGET, read when the
 * engine is created; sizes are estimates of what jansson and malloc use. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

#define SZ_STR 64       /* json_string: struct, copy's header and NUL */
#define SZ_CONTAINER 64 /* json_array/json_object struct + table header */
#define SZ_PAIR 96      /* one object entry (hash pair, bucket share), key apart */

/* ---- sizes ---- */

static int is_singleton(const json_t *v) { return json_is_null(v) || json_is_boolean(v); }

static size_t own_size(json_t *v)
{
    if (json_is_string(v)) return SZ_STR + json_string_length(v);
    if (json_is_array(v)) return SZ_CONTAINER + KLP_SZ_SLOT * json_array_size(v);
    if (json_is_object(v)) {
        size_t n = SZ_CONTAINER;
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) n += SZ_PAIR + strlen(k);
        return n;
    }
    return is_singleton(v) ? 0 : KLP_SZ_SCALAR;
}

/* pointers already counted in a walk (only values held more than once go here) */
typedef struct seen_set {
    const json_t **v;
    size_t n, cap;
    int oom;
} seen_set;

static size_t slot_of(const json_t *p, size_t cap)
{
    uintptr_t h = (uintptr_t)p >> 4;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15u;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* 1 when p was not in the set (and is now) */
static int seen_add(seen_set *s, const json_t *p)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        const json_t **nv = calloc(cap, sizeof *nv);
        if (!nv) {
            s->oom = 1;
            return 1; /* counted again: over-counting errs on the safe side */
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->v[i]) {
                size_t j = slot_of(s->v[i], cap);
                while (nv[j]) j = (j + 1) & (cap - 1);
                nv[j] = s->v[i];
            }
        free(s->v);
        s->v = nv;
        s->cap = cap;
    }
    size_t j = slot_of(p, s->cap);
    while (s->v[j]) {
        if (s->v[j] == p) return 0;
        j = (j + 1) & (s->cap - 1);
    }
    s->v[j] = p;
    s->n++;
    return 1;
}

static size_t deep_size(json_t *v, seen_set *seen, int depth);

/* what child x adds: with a set, everything not counted yet; without one, x when only
 * its parent holds it (made with it, as range's ints) */
static size_t child_size(json_t *x, seen_set *seen, int depth)
{
    if (is_singleton(x)) return 0;
    if (!seen) return x->refcount == 1 ? deep_size(x, NULL, depth) : 0;
    return x->refcount > 1 && !seen_add(seen, x) ? 0 : deep_size(x, seen, depth);
}

static size_t deep_size(json_t *v, seen_set *seen, int depth)
{
    size_t n = own_size(v);
    if (depth > KLP_MAX_DEPTH) return n;
    size_t items = json_is_array(v) ? json_array_size(v) : 0;
    for (size_t i = 0; i < items; i++) n += child_size(json_array_get(v, i), seen, depth + 1);
    const char *k;
    json_t *x;
    if (json_is_object(v)) json_object_foreach(v, k, x) n += child_size(x, seen, depth + 1);
    return n;
}

static size_t klp_value_footprint(json_t *v)
{
    seen_set seen = {0};
    size_t n = child_size(v, &seen, 0);
    free(seen.v);
    return n;
}

/* ---- the setting ---- */

/* "256M", "2GiB", "1048576": 0 with *out in bytes (at least KLP_BUDGET_MIN), or -1. */
static int klp_budget_parse(const char *s, size_t *out)
{
    static const char units[] = "kmgt";
    while (*s == ' ') s++;
    if (*s < '0' || *s > '9') return -1;
    char *end;
    double v = strtod(s, &end);
    while (*end == ' ') end++;
    const char *u = *end ? strchr(units, tolower((unsigned char)*end)) : NULL;
    if (u) {
        v *= pow(1024.0, (double)(u - units + 1));
        end += 1 + (end[1] == 'i');
    }
    end += *end == 'B' || *end == 'b';
    while (*end == ' ') end++;
    if (*end || !(v >= KLP_BUDGET_MIN) || v > 1e18) return -1;
    *out = (size_t)v;
    return 0;
}

void klp_budget_init(klp_budget *b, const char *setting)
{
    memset(b, 0, sizeof *b);
    b->limit = KLP_BUDGET_DEFAULT;
    b->stale = 1;
    if (setting && *setting && klp_budget_parse(setting, &b->limit) < 0) {
        b->limit = KLP_BUDGET_DEFAULT;
        fprintf(stderr,
                "kiln: KILN_VALUE_BUDGET='%.64s' is not a size of at least 1 MiB (such as 512M or "
                "2G); the cell language's values keep the default budget of %zu MiB\n",
                setting, (size_t)KLP_BUDGET_DEFAULT >> 20);
    }
}

/* ---- charging ---- */

void klp_budget_statement(klp_budget *b)
{
    b->stmt = 0;
    b->stale = 1;
}

static void human(char *out, size_t cap, size_t bytes)
{
    if (bytes >= (1u << 30) && bytes % (1u << 30) == 0) snprintf(out, cap, "%zu GiB", bytes >> 30);
    else if (bytes >= (1u << 20)) snprintf(out, cap, "%zu MiB", (bytes + (1u << 19)) >> 20);
    else snprintf(out, cap, "%zu KiB", (bytes + 512) >> 10);
}

static int over(klp_ctx *c, const klp_node *n, const klp_budget *b, size_t want)
{
    char lim[32], used[32], more[32];
    human(lim, sizeof lim, b->limit);
    human(used, sizeof used, b->base + b->since_walk);
    human(more, sizeof more, want);
    return klp_fail(c->err, n ? n->line : 0, n ? n->col : 0, "MemoryError",
                    "the cell language's values would pass their budget of %s (%s in use, %s more "
                    "asked); delete variables you no longer need, or start the kernel with "
                    "KILN_VALUE_BUDGET set higher (e.g. KILN_VALUE_BUDGET=1G)",
                    lim, used, more);
}

/* 0 when want more fits, walking the namespace first when the conservative sum does
 * not fit and the last walk is from an earlier statement */
static int fits(klp_ctx *c, const klp_node *n, size_t want)
{
    klp_budget *b = &c->eng->budget;
    if (b->stale && b->base + b->since_walk + want > b->limit) {
        b->base = klp_value_footprint(c->eng->vars);
        b->since_walk = b->stmt; /* this statement's values may yet be assigned */
        b->stale = 0;
    }
    if (b->base + b->since_walk + want > b->limit) return over(c, n, b, want);
    return 0;
}

int klp_budget_ask(klp_ctx *c, const klp_node *n, size_t bytes) { return fits(c, n, bytes); }

int klp_budget_charge(klp_ctx *c, const klp_node *n, size_t bytes)
{
    klp_budget *b = &c->eng->budget;
    if (fits(c, n, bytes) < 0) return -1;
    b->stmt += bytes;
    b->since_walk += bytes;
    return 0;
}

int klp_budget_charge_value(klp_ctx *c, const klp_node *n, json_t *v)
{
    if (!v || is_singleton(v) || v->refcount != 1) return 0;
    int display = n->kind == KLP_N_LIST || n->kind == KLP_N_DICT;
    return klp_budget_charge(c, n, display ? own_size(v) : deep_size(v, NULL, 0));
}
