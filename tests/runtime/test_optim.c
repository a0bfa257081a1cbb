/* test_optim.c - SGD/Adam/AdamW against PyTorch fixtures (optim_fixtures.txt, written
 * by gen_optim_fixtures.py), bitwise resume through state export/import, and the
 * validation errors. Usage: test_optim PATH/optim_fixtures.txt */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_optim.h"
#include "t.h"

/* Tolerance: torch's vectorised CPU kernels contract a*b+c into FMAs, we do not, so
 * single roundings differ (~1 ulp per operation over 5 steps): relative 1e-6, plus an
 * absolute 1e-7 floor for values that cancel to near zero. */
#define RTOL 1e-6
#define ATOL 1e-7

enum { MAXP = 3, MAXN = 64, MAXS = 5, MAXSTATE = 6 };

typedef struct {
    char name[64];
    rt_optim_config cfg;
    int nsteps, nparams;
    int no_decay[MAXP];
    size_t n[MAXP];
    float init[MAXP][MAXN];
    double lr[MAXS + 1];
    float grad[MAXS + 1][MAXP][MAXN];
    float param[MAXS + 1][MAXP][MAXN];
    int nstate;
    char state_name[MAXSTATE][40];
    float state[MAXSTATE][MAXN];
} fixture;

static const char *g_path;
static fixture g_cases[16];
static int g_ncases;

static size_t read_floats(char *s, float *out, size_t max)
{
    size_t k = 0;
    char *end;
    for (float v = strtof(s, &end); end != s && k < max; v = strtof(s, &end)) {
        out[k++] = v;
        s = end;
    }
    return k;
}

static int load_fixtures(void)
{
    FILE *f = fopen(g_path, "r");
    if (!f) return 0;
    char *line = NULL;
    size_t cap = 0;
    fixture *c = NULL;
    int ok = 1;
    while (getline(&line, &cap, f) > 0) {
        char kind[16];
        int a, b, off;
        if (!strncmp(line, "case ", 5)) {
            c = &g_cases[g_ncases++];
            memset(c, 0, sizeof *c);
            double mom, damp, b1, b2, eps, wd;
            int nest;
            if (sscanf(line, "case %63s %15s %d %d %lf %lf %d %lf %lf %lf %lf", c->name, kind,
                       &c->nsteps, &c->nparams, &mom, &damp, &nest, &b1, &b2, &eps, &wd) != 11)
                ok = 0;
            rt_optim_kind k;
            if (rt_optim_kind_parse(kind, &k, NULL) != RT_OK) ok = 0;
            c->cfg = rt_optim_config_default(k);
            c->cfg.momentum = mom;
            c->cfg.dampening = damp;
            c->cfg.nesterov = nest;
            c->cfg.beta1 = b1;
            c->cfg.beta2 = b2;
            c->cfg.eps = eps;
            c->cfg.weight_decay = wd;
        } else if (!c) {
            continue;
        } else if (sscanf(line, "nodecay %d %d %d", &c->no_decay[0], &c->no_decay[1],
                          &c->no_decay[2]) == 3) {
        } else if (sscanf(line, "init %d %d%n", &a, &b, &off) == 2) {
            c->n[a] = (size_t)b;
            if (read_floats(line + off, c->init[a], MAXN) != (size_t)b) ok = 0;
        } else if (sscanf(line, "lr %d %lf", &a, &c->lr[0]) == 2) {
            c->lr[a] = c->lr[0];
        } else if (sscanf(line, "grad %d %d%n", &a, &b, &off) == 2) {
            if (read_floats(line + off, c->grad[a][b], MAXN) != c->n[b]) ok = 0;
        } else if (sscanf(line, "param %d %d%n", &a, &b, &off) == 2) {
            if (read_floats(line + off, c->param[a][b], MAXN) != c->n[b]) ok = 0;
        } else if (sscanf(line, "state %39s%n", c->state_name[c->nstate], &off) == 1) {
            read_floats(line + off, c->state[c->nstate], MAXN);
            c->nstate++;
        }
    }
    free(line);
    fclose(f);
    return ok && g_ncases > 0;
}

/* Live arrays for one run of a case. */
typedef struct {
    float p[MAXP][MAXN], g[MAXP][MAXN];
    rt_optim *opt;
} run;

static rt_status run_create(run *r, const fixture *c, int from_step)
{
    rt_optim_param params[MAXP];
    for (int i = 0; i < c->nparams; i++) {
        memcpy(r->p[i], from_step ? c->param[from_step][i] : c->init[i], sizeof r->p[i]);
        params[i] = (rt_optim_param){r->p[i], r->g[i], c->n[i], c->no_decay[i], 0, 1};
    }
    return rt_optim_create(&r->opt, &c->cfg, params, (size_t)c->nparams, NULL);
}

static rt_status run_step(run *r, const fixture *c, int s)
{
    for (int i = 0; i < c->nparams; i++) memcpy(r->g[i], c->grad[s][i], sizeof r->g[i]);
    return rt_optim_step(r->opt, c->lr[s], NULL);
}

static double worst_rel(const float *got, const float *want, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]) / (ATOL + RTOL * fabs(want[i]));
        if (d > worst) worst = d;
    }
    return worst; /* <= 1 means within tolerance */
}

T_TEST(test_against_pytorch)
{
    ASSERT(g_ncases >= 9);
    for (int k = 0; k < g_ncases; k++) {
        const fixture *c = &g_cases[k];
        run *r = calloc(1, sizeof *r);
        ASSERT(r);
        ASSERT_EQ(run_create(r, c, 0), RT_OK);
        double worst = 0;
        for (int s = 1; s <= c->nsteps; s++) {
            ASSERT_EQ(run_step(r, c, s), RT_OK);
            for (int i = 0; i < c->nparams; i++) {
                double w = worst_rel(r->p[i], c->param[s][i], c->n[i]);
                if (w > worst) worst = w;
            }
        }
        /* state after the last step, by name */
        int matched = 0;
        for (size_t j = 0; j < rt_optim_state_count(r->opt); j++) {
            char name[RT_OPTIM_NAME_MAX];
            size_t n;
            const float *st = rt_optim_state_get(r->opt, j, name, &n);
            for (int q = 0; q < c->nstate; q++)
                if (!strcmp(name, c->state_name[q])) {
                    double w = worst_rel(st, c->state[q], n);
                    if (w > worst) worst = w;
                    matched++;
                }
        }
        int expect_state = c->nstate;
        rt_optim_destroy(r->opt);
        free(r);
        printf("  %-24s worst error %.3f of tolerance\n", c->name, worst);
        if (worst > 1.0) T_FAIL_("%s differs from PyTorch", c->name);
        ASSERT_EQ(matched, expect_state);
    }
}

/* Export after 2 steps, import into a fresh optimiser over the step-2 parameters,
 * run 3 more: bitwise equal to the uninterrupted run. */
T_TEST(test_resume_bitwise)
{
    for (int k = 0; k < g_ncases; k++) {
        const fixture *c = &g_cases[k];
        run *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
        ASSERT(a && b);
        ASSERT_EQ(run_create(a, c, 0), RT_OK);
        ASSERT_EQ(run_step(a, c, 1), RT_OK);
        ASSERT_EQ(run_step(a, c, 2), RT_OK);
        ASSERT_EQ(run_create(b, c, 0), RT_OK);
        for (int i = 0; i < c->nparams; i++) memcpy(b->p[i], a->p[i], sizeof a->p[i]);
        for (size_t j = 0; j < rt_optim_state_count(a->opt); j++) {
            char name[RT_OPTIM_NAME_MAX];
            size_t n;
            const float *st = rt_optim_state_get(a->opt, j, name, &n);
            ASSERT_EQ(rt_optim_state_set(b->opt, name, st, n, NULL), RT_OK);
        }
        ASSERT_EQ(rt_optim_set_step_count(b->opt, rt_optim_step_count(a->opt), NULL), RT_OK);
        for (int s = 3; s <= c->nsteps; s++) {
            ASSERT_EQ(run_step(a, c, s), RT_OK);
            ASSERT_EQ(run_step(b, c, s), RT_OK);
        }
        int same = memcmp(a->p, b->p, sizeof a->p) == 0;
        ASSERT_EQ(rt_optim_step_count(b->opt), c->nsteps);
        rt_optim_destroy(a->opt);
        rt_optim_destroy(b->opt);
        free(a);
        free(b);
        if (!same) T_FAIL_("%s: resumed run differs", c->name);
    }
}

T_TEST(test_state_names_and_errors)
{
    float p[4] = {0}, g[4] = {0}, data[4] = {1, 2, 3, 4};
    rt_optim_param params[2] = {{p, g, 3, 0, 0, 1}, {p + 3, g + 3, 1, 1, 0, 1}};
    rt_optim_config cfg = rt_optim_config_default(RT_OPTIM_ADAM);
    rt_optim *o;
    rt_error err;
    ASSERT_EQ(rt_optim_create(&o, &cfg, params, 2, &err), RT_OK);
    ASSERT_EQ(rt_optim_state_count(o), 4);
    char name[RT_OPTIM_NAME_MAX];
    size_t n;
    rt_optim_state_get(o, 0, name, &n);
    ASSERT_STR_EQ(name, "exp_avg.0");
    rt_optim_state_get(o, 3, name, &n);
    ASSERT_STR_EQ(name, "exp_avg_sq.1");
    ASSERT_EQ(n, 1);
    /* wrong size, unknown names, out-of-range index: refused, state unchanged */
    ASSERT_EQ(rt_optim_state_set(o, "exp_avg.0", data, 4, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "has 4 values but parameter 0 has 3");
    const char *bad[] = {
        "exp_avg.2",     "exp_avg", "exp_avg.01", "exp_avg.-1", "momentum_buffer.0",
        "exp_avg_sq.0x", ""};
    for (int i = 0; i < 7; i++) {
        ASSERT_EQ(rt_optim_state_set(o, bad[i], data, 1, &err), RT_EINVAL);
        ASSERT_STR_CONTAINS(err.msg, "no state array");
    }
    const float *m0 = rt_optim_state_get(o, 0, name, &n);
    ASSERT_EQ(m0[0], 0.0f);
    ASSERT_EQ(rt_optim_state_set(o, "exp_avg_sq.0", data, 3, &err), RT_OK);
    ASSERT_EQ(rt_optim_state_get(o, 1, name, &n)[2], 3.0f);
    ASSERT_EQ(rt_optim_step(o, -1.0, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "learning rate");
    ASSERT_EQ(rt_optim_step(o, NAN, &err), RT_EINVAL);
    ASSERT_EQ(rt_optim_step_count(o), 0);
    ASSERT_EQ(rt_optim_set_step_count(o, -3, &err), RT_EINVAL);
    rt_optim_destroy(o);
    rt_optim_destroy(NULL);

    /* plain SGD has no state */
    cfg = rt_optim_config_default(RT_OPTIM_SGD);
    ASSERT_EQ(rt_optim_create(&o, &cfg, params, 2, &err), RT_OK);
    ASSERT_EQ(rt_optim_state_count(o), 0);
    ASSERT_EQ(rt_optim_state_set(o, "momentum_buffer.0", data, 3, &err), RT_EINVAL);
    rt_optim_destroy(o);
}

/* A frozen parameter never changes and keeps zero state; one with lr_mult F follows the
 * run of the same parameter alone at lr * F exactly (AdamW: decay too; SGD momentum). */
T_TEST(test_frozen_and_lr_mult)
{
    for (int kind = 0; kind < 3; kind++) {
        float p[3][4], g[4] = {0.5f, -0.25f, 0.125f, 1.0f}, q[4];
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 4; i++) p[j][i] = 0.1f * (float)(i + 1) - 0.2f * (float)j;
        memcpy(q, p[2], sizeof q);
        const float p0[4] = {p[0][0], p[0][1], p[0][2], p[0][3]};
        rt_optim_param ps[3] = {
            {p[0], g, 4, 0, 1, 1}, {p[1], g, 4, 0, 0, 1}, {p[2], g, 4, 0, 0, 0.1}};
        rt_optim_param alone[1] = {{q, g, 4, 0, 0, 1}};
        rt_optim_config cfg = rt_optim_config_default((rt_optim_kind)kind);
        if (kind == RT_OPTIM_SGD) cfg.momentum = 0.9, cfg.weight_decay = 0.01;
        rt_optim *o, *a;
        rt_error err;
        ASSERT_EQ(rt_optim_create(&o, &cfg, ps, 3, &err), RT_OK);
        ASSERT_EQ(rt_optim_create(&a, &cfg, alone, 1, &err), RT_OK);
        for (int step = 0; step < 5; step++) {
            ASSERT_EQ(rt_optim_step(o, 0.01, &err), RT_OK);
            ASSERT_EQ(rt_optim_step(a, 0.01 * 0.1, &err), RT_OK);
        }
        ASSERT_EQ(memcmp(p[0], p0, sizeof p0), 0); /* frozen: bit for bit */
        ASSERT(p[1][0] != 0.1f);                   /* the others moved */
        ASSERT_EQ(memcmp(p[2], q, sizeof q), 0);   /* lr 0.01 x 0.1 = the lr 0.001 run */
        char name[RT_OPTIM_NAME_MAX];
        size_t n;
        for (size_t k = 0; k < rt_optim_state_count(o); k++) {
            const float *st = rt_optim_state_get(o, k, name, &n);
            if (!strcmp(name + strlen(name) - 2, ".0"))
                for (size_t i = 0; i < n; i++) ASSERT_EQ(st[i], 0.0f); /* no state */
        }
        rt_optim_destroy(o);
        rt_optim_destroy(a);
        ps[2].lr_mult = -1;
        ASSERT_EQ(rt_optim_create(&o, &cfg, ps, 3, &err), RT_EINVAL);
        ASSERT_STR_CONTAINS(err.msg, "lr multiplier");
    }
}

T_TEST(test_config_validation)
{
    float p[1] = {0}, g[1] = {0};
    rt_optim_param params[1] = {{p, g, 1, 0, 0, 1}};
    rt_optim *o = (rt_optim *)&o; /* must be set to NULL on failure */
    rt_error err;
    rt_optim_config c = rt_optim_config_default(RT_OPTIM_SGD);
    c.nesterov = 1;
    ASSERT_EQ(rt_optim_create(&o, &c, params, 1, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "Nesterov");
    ASSERT(o == NULL);
    c.momentum = 0.9;
    c.dampening = 0.1;
    ASSERT_EQ(rt_optim_create(&o, &c, params, 1, &err), RT_EINVAL);
    c = rt_optim_config_default(RT_OPTIM_SGD);
    c.momentum = -0.5;
    ASSERT_EQ(rt_optim_create(&o, &c, params, 1, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "momentum");
    c = rt_optim_config_default(RT_OPTIM_ADAMW);
    ASSERT_NEAR(c.weight_decay, 0.01, 0);
    ASSERT_NEAR(c.eps, 1e-8, 0);
    c.beta2 = 1.0;
    ASSERT_EQ(rt_optim_create(&o, &c, params, 1, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "beta parameter at index 1");
    c = rt_optim_config_default(RT_OPTIM_ADAM);
    c.weight_decay = -1;
    ASSERT_EQ(rt_optim_create(&o, &c, params, 1, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "weight_decay");
    c = rt_optim_config_default(RT_OPTIM_ADAM);
    rt_optim_param missing[1] = {{NULL, g, 1, 0, 0, 1}};
    ASSERT_EQ(rt_optim_create(&o, &c, missing, 1, &err), RT_EINVAL);
    rt_optim_kind k;
    ASSERT_EQ(rt_optim_kind_parse("AdamW", &k, &err), RT_OK);
    ASSERT_EQ(k, RT_OPTIM_ADAMW);
    ASSERT_EQ(rt_optim_kind_parse("rmsprop", &k, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "expected one of sgd, adam, adamw");
}

/* Long parameters take the OpenMP path; results equal the serial kernel on slices. */
T_TEST(test_parallel_equals_serial)
{
    enum { N = 100003 };
    float *p = malloc(N * sizeof *p), *g = malloc(N * sizeof *g), *q = malloc(N * sizeof *q);
    ASSERT(p && g && q);
    for (int i = 0; i < N; i++) {
        p[i] = q[i] = (float)((i % 97) - 48) / 50.0f;
        g[i] = (float)((i % 31) - 15) / 1000.0f;
    }
    rt_optim_config c = rt_optim_config_default(RT_OPTIM_ADAMW);
    rt_optim *o;
    rt_optim_param params[1] = {{p, g, N, 0, 0, 1}};
    ASSERT_EQ(rt_optim_create(&o, &c, params, 1, NULL), RT_OK);
    float *m = calloc(N, sizeof *m), *v = calloc(N, sizeof *v);
    ASSERT(m && v);
    for (int s = 1; s <= 3; s++) {
        ASSERT_EQ(rt_optim_step(o, 0.01, NULL), RT_OK);
        rt_adam_coef k = rt_optim_adam_coef(&c, 0.01, s, 0);
        for (size_t off = 0; off < N; off += 1000) /* slices below the OpenMP threshold */
            rt_optim_adam_kernel(q + off, m + off, v + off, g + off,
                                 N - off < 1000 ? N - off : 1000, &k);
    }
    int same = memcmp(p, q, N * sizeof *p) == 0;
    rt_optim_destroy(o);
    free(p);
    free(g);
    free(q);
    free(m);
    free(v);
    ASSERT(same);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_optim optim_fixtures.txt\n");
        return 99;
    }
    g_path = argv[1];
    if (!load_fixtures()) {
        fprintf(stderr, "cannot read fixtures from %s\n", g_path);
        return 99;
    }
    T_RUN(test_against_pytorch);
    T_RUN(test_resume_bitwise);
    T_RUN(test_state_names_and_errors);
    T_RUN(test_config_validation);
    T_RUN(test_frozen_and_lr_mult);
    T_RUN(test_parallel_equals_serial);
    return T_EXIT();
}
