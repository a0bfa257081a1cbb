/* rt_schedule_parse.c - the --schedule option string -> rt_schedule.
 *
 * Grammar: NAME[:V1[:V2[:V3]]] {KEY=VALUE}, words separated by spaces or commas.
 * Positional values map to keys per schedule (POSITIONAL below); every key may be
 * given once. A table (OPTS) says which keys a schedule takes and their types, so the
 * error for a misspelt key lists the valid ones. Range checks run after all words are
 * read and name the key and what it must be. Nothing is written to *out on error.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rt_schedule.h"

#define MAX_TEXT 512
#define K(x) (1u << RT_SCHED_##x)
#define ALL (K(CONSTANT) | K(STEP) | K(COSINE) | K(ONECYCLE) | K(MULTISTEP) | K(PLATEAU))
#define WARM (K(CONSTANT) | K(STEP) | K(COSINE) | K(MULTISTEP) | K(PLATEAU))

typedef enum { OPT_INT, OPT_DOUBLE, OPT_BOOL, OPT_UNIT, OPT_ANNEAL, OPT_LIST } opt_type;

typedef struct {
    const char *key;
    opt_type type;
    size_t offset;
    unsigned kinds;
} opt_def;

#define F(field) offsetof(rt_schedule, field)
static const opt_def OPTS[] = {
    {"step_size", OPT_INT, F(step_size), K(STEP)},
    {"gamma", OPT_DOUBLE, F(gamma), K(STEP) | K(MULTISTEP)},
    {"milestones", OPT_LIST, F(milestones), K(MULTISTEP)},
    {"factor", OPT_DOUBLE, F(factor), K(PLATEAU)},
    {"patience", OPT_INT, F(patience), K(PLATEAU)},
    {"threshold", OPT_DOUBLE, F(threshold), K(PLATEAU)},
    {"cooldown", OPT_INT, F(cooldown), K(PLATEAU)},
    {"min_lr", OPT_DOUBLE, F(min_lr), K(PLATEAU)},
    {"t_max", OPT_INT, F(t_max), K(COSINE)},
    {"eta_min", OPT_DOUBLE, F(eta_min), K(COSINE)},
    {"max_lr", OPT_DOUBLE, F(max_lr), K(ONECYCLE)},
    {"total_steps", OPT_INT, F(total_steps), K(ONECYCLE)},
    {"pct_start", OPT_DOUBLE, F(pct_start), K(ONECYCLE)},
    {"anneal", OPT_ANNEAL, F(anneal_linear), K(ONECYCLE)},
    {"div_factor", OPT_DOUBLE, F(div_factor), K(ONECYCLE)},
    {"final_div_factor", OPT_DOUBLE, F(final_div_factor), K(ONECYCLE)},
    {"three_phase", OPT_BOOL, F(three_phase), K(ONECYCLE)},
    {"unit", OPT_UNIT, F(per_step), ALL},
    {"warmup", OPT_INT, F(warmup), WARM},
    {"warmup_start", OPT_DOUBLE, F(warmup_start), WARM},
    {"steps_per_epoch", OPT_INT, F(steps_per_epoch), ALL},
};
#define NOPTS (sizeof OPTS / sizeof *OPTS)

static const char *const POSITIONAL[RT_SCHED_KINDS][3] = {{NULL},
                                                          {"step_size", "gamma", NULL},
                                                          {"t_max", "eta_min", NULL},
                                                          {"max_lr", "total_steps", "pct_start"},
                                                          {"milestones", "gamma", NULL},
                                                          {"factor", "patience", NULL}};

static const char *const TYPE_EXPECT[] = {
    "a non-negative integer", "a number",
    "true or false",          "epoch or step",
    "cos or linear",          "increasing positive integers separated by commas (30,60,80)"};

/* Writes "a, b, c" of the keys schedule kind accepts into buf. */
static void list_keys(rt_sched_kind kind, char *buf, size_t n)
{
    buf[0] = '\0';
    for (size_t i = 0; i < NOPTS; i++) {
        if (!(OPTS[i].kinds & (1u << kind)) || !strcmp(OPTS[i].key, "steps_per_epoch")) continue;
        if (buf[0]) strncat(buf, ", ", n - strlen(buf) - 1);
        strncat(buf, OPTS[i].key, n - strlen(buf) - 1);
    }
}

static int parse_value(const opt_def *o, const char *v, rt_schedule *s)
{
    char *end;
    void *field = (char *)s + o->offset;
    errno = 0;
    switch (o->type) {
    case OPT_INT: {
        if (*v < '0' || *v > '9') return 0;
        long long x = strtoll(v, &end, 10);
        if (*end || errno) return 0;
        *(int64_t *)field = (int64_t)x;
        return 1;
    }
    case OPT_DOUBLE: {
        double x = strtod(v, &end);
        if (end == v || *end || errno || !isfinite(x)) return 0;
        *(double *)field = x;
        return 1;
    }
    case OPT_BOOL:
        if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes")) *(int *)field = 1;
        else if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no"))
            *(int *)field = 0;
        else return 0;
        return 1;
    case OPT_UNIT:
        if (!strcmp(v, "step") || !strcmp(v, "steps")) *(int *)field = 1;
        else if (!strcmp(v, "epoch") || !strcmp(v, "epochs")) *(int *)field = 0;
        else return 0;
        return 1;
    case OPT_LIST: { /* "30,60" (typed) or "30;60" (canonical text) */
        int n = 0;
        for (const char *p = v; *p; n++) {
            if (n == RT_SCHED_MAX_MILESTONES || *p < '0' || *p > '9') return 0;
            long long x = strtoll(p, &end, 10);
            if (errno || x <= 0 || (n > 0 && x <= s->milestones[n - 1])) return 0;
            s->milestones[n] = (int64_t)x;
            p = end;
            if (*p == ',' || *p == ';') {
                if (!*++p) return 0;
            } else if (*p) {
                return 0;
            }
        }
        s->nmilestones = n;
        return n > 0;
    }
    case OPT_ANNEAL:
        if (!strcmp(v, "cos")) *(int *)field = 0;
        else if (!strcmp(v, "linear")) *(int *)field = 1;
        else return 0;
        return 1;
    }
    return 0;
}

/* Sets key=value; `given` tracks keys already set (bit per OPTS index). */
static rt_status set_option(rt_schedule *s, unsigned *given, const char *key, const char *value,
                            rt_error *err)
{
    const char *name = rt_schedule_kind_name(s->kind);
    for (size_t i = 0; i < NOPTS; i++) {
        const opt_def *o = &OPTS[i];
        if (strcmp(o->key, key) != 0 || !(o->kinds & (1u << s->kind))) continue;
        if (*given & (1u << i))
            return RT_ERR(err, RT_EINVAL, "schedule %s: %s is given twice", name, key);
        *given |= 1u << i;
        if (!*value || !parse_value(o, value, s))
            return RT_ERR(err, RT_EINVAL, "schedule %s: %s must be %s, got '%s'", name, key,
                          TYPE_EXPECT[o->type], value);
        return RT_OK;
    }
    char keys[256];
    list_keys(s->kind, keys, sizeof keys);
    return RT_ERR(err, RT_EINVAL, "schedule %s: unknown option '%s'; expected one of %s", name, key,
                  keys);
}

/* Range checks that need every option read. */
static rt_status check(const rt_schedule *s, rt_error *err)
{
    const char *name = rt_schedule_kind_name(s->kind);
    if (s->kind == RT_SCHED_STEP && s->step_size <= 0)
        return RT_ERR(err, RT_EINVAL,
                      "schedule step needs step_size > 0 (e.g. step:10:0.1 or "
                      "step step_size=10 gamma=0.1)");
    if (s->kind == RT_SCHED_STEP && !(s->gamma > 0.0))
        return RT_ERR(err, RT_EINVAL, "schedule step: gamma must be > 0, got %g", s->gamma);
    if (s->kind == RT_SCHED_MULTISTEP && s->nmilestones < 1)
        return RT_ERR(err, RT_EINVAL,
                      "schedule multistep needs milestones (e.g. multistep:30,60:0.1)");
    if (s->kind == RT_SCHED_MULTISTEP && !(s->gamma > 0.0))
        return RT_ERR(err, RT_EINVAL, "schedule multistep: gamma must be > 0, got %g", s->gamma);
    if (s->kind == RT_SCHED_PLATEAU && !(s->factor > 0.0 && s->factor < 1.0))
        return RT_ERR(err, RT_EINVAL, "schedule plateau: factor must be in (0, 1), got %g",
                      s->factor);
    if (s->kind == RT_SCHED_PLATEAU && !(s->threshold >= 0.0 && s->threshold < 1.0))
        return RT_ERR(err, RT_EINVAL, "schedule plateau: threshold must be in [0, 1), got %g",
                      s->threshold);
    if (s->kind == RT_SCHED_PLATEAU && !(s->min_lr >= 0.0))
        return RT_ERR(err, RT_EINVAL, "schedule plateau: min_lr must be >= 0, got %g", s->min_lr);
    if (s->kind == RT_SCHED_COSINE && !(s->eta_min >= 0.0))
        return RT_ERR(err, RT_EINVAL, "schedule cosine: eta_min must be >= 0, got %g", s->eta_min);
    if (!(s->warmup_start > 0.0 && s->warmup_start <= 1.0))
        return RT_ERR(err, RT_EINVAL, "schedule %s: warmup_start must be in (0, 1], got %g", name,
                      s->warmup_start);
    if (s->kind == RT_SCHED_ONECYCLE) {
        if (!(s->max_lr >= 0.0))
            return RT_ERR(err, RT_EINVAL, "schedule onecycle: max_lr must be >= 0, got %g",
                          s->max_lr);
        if (!(s->pct_start > 0.0 && s->pct_start < 1.0))
            return RT_ERR(err, RT_EINVAL,
                          "schedule onecycle: pct_start must be between 0 and 1, got %g",
                          s->pct_start);
        if (!(s->div_factor > 0.0) || !(s->final_div_factor > 0.0))
            return RT_ERR(err, RT_EINVAL,
                          "schedule onecycle: div_factor and final_div_factor must be > 0");
    }
    return RT_OK;
}

static int kind_from_name(const char *n, rt_sched_kind *k)
{
    for (int i = 0; i < RT_SCHED_KINDS; i++)
        if (!strcasecmp(n, rt_schedule_kind_name((rt_sched_kind)i))) {
            *k = (rt_sched_kind)i;
            return 1;
        }
    return 0;
}

rt_status rt_schedule_parse(rt_schedule *out, const char *text, rt_error *err)
{
    char buf[MAX_TEXT];
    if (!text) text = "";
    if (strlen(text) >= sizeof buf)
        return RT_ERR(err, RT_EINVAL, "schedule: option string is longer than %d characters",
                      MAX_TEXT - 1);
    strcpy(buf, text);
    const char *seps = " \t\n,";
    char *save = NULL;
    /* multistep's milestones are comma-separated: its first word ends at a space */
    const char *lead = text + strspn(text, " \t\n,");
    char *head = strtok_r(buf, strncasecmp(lead, "multistep", 9) ? seps : " \t\n", &save);
    if (!head)
        return RT_ERR(err, RT_EINVAL,
                      "schedule: empty; expected one of constant, step, cosine, onecycle, "
                      "multistep, plateau (e.g. step:10:0.1)");
    /* head = NAME[:V1...] */
    char *colon = strchr(head, ':');
    if (colon) *colon = '\0';
    rt_sched_kind kind;
    if (!kind_from_name(head, &kind))
        return RT_ERR(err, RT_EINVAL,
                      "unknown schedule '%s'; expected one of constant, step, cosine, "
                      "onecycle, multistep, plateau (e.g. step:10:0.1)",
                      head);
    rt_schedule s = rt_schedule_default(kind);
    unsigned given = 0;
    int npos = 0;
    while (colon) {
        char *v = colon + 1;
        colon = strchr(v, ':');
        if (colon) *colon = '\0';
        const char *key = npos < 3 ? POSITIONAL[kind][npos] : NULL;
        if (!key) {
            return RT_ERR(err, RT_EINVAL,
                          "schedule %s takes at most %d positional value%s%s, got more in '%s'",
                          rt_schedule_kind_name(kind), npos, npos == 1 ? "" : "s",
                          kind == RT_SCHED_STEP        ? " (step_size, gamma)"
                          : kind == RT_SCHED_COSINE    ? " (t_max, eta_min)"
                          : kind == RT_SCHED_ONECYCLE  ? " (max_lr, total_steps, pct_start)"
                          : kind == RT_SCHED_MULTISTEP ? " (milestones, gamma)"
                          : kind == RT_SCHED_PLATEAU   ? " (factor, patience)"
                                                       : "",
                          text);
        }
        RT_TRY(set_option(&s, &given, key, v, err));
        npos++;
    }
    for (char *w = strtok_r(NULL, seps, &save); w; w = strtok_r(NULL, seps, &save)) {
        char *eq = strchr(w, '=');
        if (!eq)
            return RT_ERR(err, RT_EINVAL, "schedule %s: expected key=value, got '%s'",
                          rt_schedule_kind_name(kind), w);
        *eq = '\0';
        RT_TRY(set_option(&s, &given, w, eq + 1, err));
    }
    RT_TRY(check(&s, err));
    *out = s;
    return RT_OK;
}
