/* mg_run_opts.c - what the %train option table (mg_train_table.c) drives: defaults,
 * reading the options from parsed arguments, the one bounds check and its message,
 * the help's default notes, the JSON form stored in checkpoints and the results store
 * (read back by %resume, checked against the same bounds), the run-defining
 * comparison, and the --checkpoint-every and --time-limit syntaxes. */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_run_opts.h"
#include "rt_results.h"

#define AT(o, row, type) ((type *)(void *)((char *)(o) + (row)->offset))
#define CAT(o, row, type) ((const type *)(const void *)((const char *)(o) + (row)->offset))

const mg_train_option *mg_train_option_find(const char *name)
{
    for (const mg_train_option *r = mg_train_table; r->opt.name; r++)
        if (!strcmp(r->opt.name, name)) return r;
    return NULL;
}

/* The n-th value of "a|b|c" into buf ("" past the end). */
static const char *choice_at(const char *choices, int n, char *buf, size_t size)
{
    const char *c = choices ? choices : "";
    for (; n > 0 && c; n--) c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL;
    size_t len = c ? strcspn(c, "|") : 0;
    snprintf(buf, size, "%.*s", (int)len, c ? c : "");
    return buf;
}

static int choice_index(const char *choices, const char *v)
{
    char b[64];
    for (int i = 0; choice_at(choices, i, b, sizeof b)[0]; i++)
        if (!strcmp(b, v)) return i;
    return -1;
}

/* A number option's value as a double (the bounds check and comparisons). */
static double number(const mg_train_option *r, const mg_run_opts *o)
{
    switch (r->store) {
    case MG_TO_INT:
    case MG_TO_FLAG:
    case MG_TO_CHOICE: return *CAT(o, r, int);
    case MG_TO_U64: return (double)*CAT(o, r, uint64_t);
    case MG_TO_REAL:
    case MG_TO_DURATION: return *CAT(o, r, double);
    default: return NAN;
    }
}

static int is_number_row(const mg_train_option *r)
{
    return r->store == MG_TO_INT || r->store == MG_TO_U64 || r->store == MG_TO_REAL;
}

void mg_run_opts_default(mg_run_opts *o)
{
    memset(o, 0, sizeof *o);
    for (const mg_train_option *r = mg_train_table; r->opt.name; r++) {
        switch (r->store) {
        case MG_TO_INT:
        case MG_TO_FLAG:
        case MG_TO_CHOICE: *AT(o, r, int) = (int)r->def; break;
        case MG_TO_U64: *AT(o, r, uint64_t) = (uint64_t)r->def; break;
        case MG_TO_REAL:
        case MG_TO_DURATION: *AT(o, r, double) = r->def; break;
        case MG_TO_TEXT:
        case MG_TO_EVERY: snprintf(AT(o, r, char), r->size, "%s", r->def_text ? r->def_text : "");
        }
    }
}

const char *mg_train_option_default(const mg_option *opt, char *buf, size_t n)
{
    const mg_train_option *r = mg_train_option_find(opt->name);
    if (!r) return NULL;
    if (r->shown) return r->shown;
    if (r->store == MG_TO_TEXT || r->store == MG_TO_EVERY) return r->def_text;
    if (r->store == MG_TO_CHOICE)
        return r->def >= 0 ? choice_at(r->opt.choices, (int)r->def, buf, n) : NULL;
    if (!is_number_row(r) || !isfinite(r->def)) return NULL;
    snprintf(buf, n, "%g", r->def);
    return buf;
}

const char *mg_train_option_format(const mg_train_option *r, const mg_run_opts *o, char *buf,
                                   size_t n)
{
    switch (r->store) {
    case MG_TO_INT: snprintf(buf, n, "%d", *CAT(o, r, int)); break;
    case MG_TO_U64: snprintf(buf, n, "%" PRIu64, *CAT(o, r, uint64_t)); break;
    case MG_TO_REAL: snprintf(buf, n, "%g", *CAT(o, r, double)); break;
    case MG_TO_DURATION: snprintf(buf, n, "%gs", *CAT(o, r, double)); break;
    case MG_TO_FLAG: snprintf(buf, n, "%s", *CAT(o, r, int) ? "on" : "off"); break;
    case MG_TO_CHOICE: choice_at(r->opt.choices, *CAT(o, r, int), buf, n); break;
    case MG_TO_TEXT:
    case MG_TO_EVERY: snprintf(buf, n, "%s", CAT(o, r, char)); break;
    }
    return buf;
}

/* "must be in (0, 100]" / "must be in 1..100000" / "must be >= 0" for row r. */
static void bounds_text(const mg_train_option *r, char *buf, size_t n)
{
    int open_lo = (r->flags & MG_TO_OPEN_MIN) != 0, open_hi = (r->flags & MG_TO_OPEN_MAX) != 0;
    if (isinf(r->hi)) snprintf(buf, n, "must be %s %g", open_lo ? ">" : ">=", r->lo);
    else if (r->store != MG_TO_REAL) snprintf(buf, n, "must be in %g..%g", r->lo, r->hi);
    else
        snprintf(buf, n, "must be in %c%g, %g%c", open_lo ? '(' : '[', r->lo, r->hi,
                 open_hi ? ')' : ']');
}

/* 0 when v (row r's value) is inside r's bounds or is r's default ("not given"). */
static int out_of_bounds(const mg_train_option *r, double v)
{
    if (!(r->lo < r->hi) || v == r->def || (isnan(v) && isnan(r->def))) return 0;
    int lo_ok = r->flags & MG_TO_OPEN_MIN ? v > r->lo : v >= r->lo;
    int hi_ok = r->flags & MG_TO_OPEN_MAX ? v < r->hi : v <= r->hi;
    return !(lo_ok && hi_ok);
}

int mg_run_opts_check(const mg_run_opts *o, const char *who, mg_error *err)
{
    for (const mg_train_option *r = mg_train_table; r->opt.name; r++) {
        if (r->check && r->check(o, who, err) < 0) return -1;
        if (!is_number_row(r) || !out_of_bounds(r, number(r, o))) continue;
        char b[96], v[64];
        bounds_text(r, b, sizeof b);
        return mg_fail(err, "ValueError", "%s: %s %s, got %s", who, r->opt.name, b,
                       mg_train_option_format(r, o, v, sizeof v));
    }
    return 0;
}

/* Copies a string option's value v into dst (size n); error when it does not fit. */
static int str_opt(const char *v, const char *name, char *dst, size_t n, mg_error *err)
{
    if (strlen(v) >= n)
        return mg_fail(err, "ValueError", "%%train: %s: value too long (%zu characters at most)",
                       name, n - 1);
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

/* One "<number><unit>" group of s at *p; unit letters into u. */
static int number_unit(const char **p, double *v, char *u, size_t un)
{
    char *end;
    *v = strtod(*p, &end);
    if (end == *p || !isfinite(*v) || *v < 0) return -1;
    size_t k = 0;
    while (isalpha((unsigned char)*end) && k + 1 < un)
        u[k++] = (char)tolower((unsigned char)*end++);
    u[k] = 0;
    if (isalpha((unsigned char)*end)) return -1;
    *p = end;
    return 0;
}

int mg_run_parse_duration(const char *text, double *seconds, mg_error *err)
{
    const char *p = text;
    double total = 0;
    int groups = 0;
    while (*p) {
        double v;
        char u[16];
        if (number_unit(&p, &v, u, sizeof u) < 0) goto bad;
        double f = !*u || !strcmp(u, "s") || !strcmp(u, "sec") ? 1
                   : !strcmp(u, "m") || !strcmp(u, "min")      ? 60
                   : !strcmp(u, "h") || !strcmp(u, "hr")       ? 3600
                   : !strcmp(u, "d")                           ? 86400
                                                               : -1;
        if (f < 0 || (!*u && *p)) goto bad;
        total += v * f;
        groups++;
    }
    if (!groups || total <= 0 || total > 366.0 * 86400) goto bad;
    *seconds = total;
    return 0;
bad:
    return mg_fail(err, "ValueError", "'%s' is not a duration (e.g. 8h30m, 45m, 90s, 2h)", text);
}

int mg_run_parse_every(const char *text, mg_every *out, mg_error *err)
{
    const char *p = text;
    double v, s;
    char u[16];
    if (number_unit(&p, &v, u, sizeof u) == 0 && !*p && v > 0 && v == floor(v)) {
        if (!*u || !strcmp(u, "steps") || !strcmp(u, "step")) {
            *out = (mg_every){MG_EVERY_STEPS, v};
            return 0;
        }
        if (!strcmp(u, "epoch") || !strcmp(u, "epochs")) {
            *out = (mg_every){MG_EVERY_EPOCHS, v};
            return 0;
        }
    }
    mg_error ignored;
    if (mg_run_parse_duration(text, &s, &ignored) == 0) {
        *out = (mg_every){MG_EVERY_SECONDS, s};
        return 0;
    }
    return mg_fail(err, "ValueError", "--checkpoint-every: '%s' is not 500steps, 10m or 1epoch",
                   text);
}

/* Row r's value typed as v into o (checked for its kind; bounds are checked later). */
static int from_text(mg_run_opts *o, const mg_train_option *r, const char *v, const char *who,
                     mg_error *err)
{
    char *end;
    mg_error e2;
    switch (r->store) {
    case MG_TO_INT: {
        long x = strtol(v, &end, 10);
        if (x < INT_MIN || x > INT_MAX) x = x < 0 ? INT_MIN : INT_MAX; /* out of bounds */
        *AT(o, r, int) = (int)x;
        return 0;
    }
    case MG_TO_U64: {
        long long x = strtoll(v, &end, 10);
        if (x < 0)
            return mg_fail(err, "ValueError", "%s: %s must be >= 0, got %lld", who, r->opt.name, x);
        *AT(o, r, uint64_t) = (uint64_t)x;
        return 0;
    }
    case MG_TO_REAL: *AT(o, r, double) = strtod(v, &end); return 0;
    case MG_TO_FLAG: *AT(o, r, int) = 1; return 0;
    case MG_TO_CHOICE: *AT(o, r, int) = choice_index(r->opt.choices, v); return 0;
    case MG_TO_TEXT: return str_opt(v, r->opt.name, AT(o, r, char), r->size, err);
    case MG_TO_DURATION:
        if (mg_run_parse_duration(v, AT(o, r, double), &e2) < 0)
            return mg_fail(err, "ValueError", "%s: %s: %s", who, r->opt.name, e2.evalue);
        return 0;
    case MG_TO_EVERY:
        if (str_opt(v, r->opt.name, AT(o, r, char), r->size, err) < 0) return -1;
        if (mg_run_parse_every(v, (mg_every *)(void *)((char *)o + r->parsed), &e2) < 0)
            return mg_fail(err, "ValueError", "%s: %s", who, e2.evalue);
        return 0;
    }
    return 0;
}

int mg_run_opts_from_args_as(mg_run_opts *o, const mg_args *a, const char *who, mg_error *err)
{
    if (a->npos > 1)
        return mg_fail(err, "UsageError", "%s: expected at most one model name, got '%s' and '%s'",
                       who, a->pos[0], a->pos[1]);
    if (a->npos == 1 && strlen(a->pos[0]) >= sizeof o->model)
        return mg_fail(err, "UsageError", "%s: model name too long", who);
    if (a->npos == 1) snprintf(o->model, sizeof o->model, "%s", a->pos[0]);
    for (const mg_train_option *r = mg_train_table; r->opt.name; r++)
        if (mg_args_has(a, r->opt.name) &&
            from_text(o, r, mg_args_get(a, r->opt.name), who, err) < 0)
            return -1;
    return mg_run_opts_check(o, who, err);
}

int mg_run_opts_from_args(mg_run_opts *o, const mg_args *a, mg_error *err)
{
    return mg_run_opts_from_args_as(o, a, "%train", err);
}

json_t *mg_run_opts_to_json(const mg_run_opts *o)
{
    json_t *j = json_object();
    if (!j || json_object_set_new(j, "model", json_string(o->model)) < 0) {
        json_decref(j);
        return NULL;
    }
    for (const mg_train_option *r = mg_train_table; r->opt.name; r++) {
        if (!r->key) continue;
        json_t *v = NULL;
        char red[1024]; /* stored, shown and sent: never its credentials */
        switch (r->store) {
        case MG_TO_INT: v = json_integer(*CAT(o, r, int)); break;
        case MG_TO_U64: v = json_integer((json_int_t)*CAT(o, r, uint64_t)); break;
        case MG_TO_REAL:
        case MG_TO_DURATION:
            if (!isfinite(*CAT(o, r, double))) continue; /* not set */
            v = json_real(*CAT(o, r, double));
            break;
        case MG_TO_FLAG: v = json_boolean(*CAT(o, r, int)); break;
        case MG_TO_CHOICE:
            v = json_string(choice_at(r->opt.choices, *CAT(o, r, int), red, sizeof red));
            break;
        case MG_TO_TEXT:
        case MG_TO_EVERY:
            if (r->flags & MG_TO_REDACT) rt_results_redact(CAT(o, r, char), red, sizeof red);
            v = json_string(r->flags & MG_TO_REDACT ? red : CAT(o, r, char));
            break;
        }
        if (json_object_set_new(j, r->key, v) < 0) {
            json_decref(j);
            return NULL;
        }
    }
    return j;
}

int mg_run_opts_from_json(mg_run_opts *o, const json_t *j, mg_error *err)
{
    if (!json_is_object(j)) return mg_fail(err, "ValueError", "hyperparameters: not a JSON object");
    const char *model = json_string_value(json_object_get(j, "model"));
    if (model) snprintf(o->model, sizeof o->model, "%s", model);
    for (const mg_train_option *r = mg_train_table; r->opt.name; r++) {
        json_t *v = r->key ? json_object_get(j, r->key) : NULL;
        if (!v) continue;
        switch (r->store) {
        case MG_TO_INT:
            if (json_is_integer(v)) *AT(o, r, int) = (int)json_integer_value(v);
            break;
        case MG_TO_U64:
            if (json_is_integer(v)) *AT(o, r, uint64_t) = (uint64_t)json_integer_value(v);
            break;
        case MG_TO_REAL:
        case MG_TO_DURATION:
            if (json_is_number(v)) *AT(o, r, double) = json_number_value(v);
            break;
        case MG_TO_FLAG: *AT(o, r, int) = json_is_true(v); break;
        case MG_TO_CHOICE:
            if (json_is_string(v))
                *AT(o, r, int) = choice_index(r->opt.choices, json_string_value(v));
            break;
        case MG_TO_TEXT:
        case MG_TO_EVERY:
            if (json_is_string(v)) snprintf(AT(o, r, char), r->size, "%s", json_string_value(v));
            /* a flag that has since taken a value (--augment), stored as true: the
             * spec it meant then, so that an older run resumes bit for bit */
            else if (r->opt.kind == MG_OPT_FLAG && json_is_true(v))
                snprintf(AT(o, r, char), r->size, "%s", r->legacy_true ? r->legacy_true : "");
            break;
        }
        if (r->store == MG_TO_EVERY) {
            mg_every *e = (mg_every *)(void *)((char *)o + r->parsed);
            *e = (mg_every){MG_EVERY_NONE, 0};
            if (CAT(o, r, char)[0] && mg_run_parse_every(CAT(o, r, char), e, err) < 0) return -1;
        }
    }
    return mg_run_opts_check(o, "hyperparameters", err);
}

int mg_run_opts_differences(const mg_run_opts *t, const mg_run_opts *c, char *buf, size_t n)
{
    size_t k = strlen(buf);
    int count = 0;
    for (const mg_train_option *r = mg_train_table; r->opt.name; r++) {
        if (!(r->flags & MG_TO_DEFINING) || (r->flags & MG_TO_DATA)) continue;
        char a[256], b[256];
        int differ;
        if (r->effective) {
            double x = r->effective(t), y = r->effective(c);
            if (isnan(x) || isnan(y)) continue; /* does not apply */
            differ = x != y;
            snprintf(a, sizeof a, "%g", x);
            snprintf(b, sizeof b, "%g", y);
        } else {
            mg_train_option_format(r, t, a, sizeof a);
            mg_train_option_format(r, c, b, sizeof b);
            double x = number(r, t), y = number(r, c);
            if (r->flags & MG_TO_AT_LEAST) differ = x < y;
            else if (r->store == MG_TO_TEXT || r->store == MG_TO_EVERY) differ = strcmp(a, b) != 0;
            else differ = !(x == y || (isnan(x) && isnan(y)));
        }
        if (!differ) continue;
        count++;
        if (k < n)
            k += (size_t)snprintf(buf + k, n - k, " %s %s (checkpoint %s)", r->opt.name, a, b);
    }
    return count;
}
