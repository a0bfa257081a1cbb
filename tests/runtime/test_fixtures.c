/* test_fixtures.c - every CPU op's forward and backward against PyTorch (fixtures written
 * by gen_fixtures.py, committed under fixtures/). Usage: test_fixtures FIXTURE_DIR.
 *
 * Tolerance: |kiln - torch| <= 1e-5 * (|torch| + max|torch|_array). The reference is
 * float64 on the same float32 inputs, so this measures Kiln's float32 error: 1e-5
 * relative to the value, with a floor of 1e-5 of the array's largest magnitude, because
 * an output that is a sum of many terms and lands near zero (cancellation) cannot be
 * relatively exact in float32 (float eps is 6e-8; sums of <= 75 terms stay well
 * below 1e-5 of the largest term). The first mismatches are printed.
 */
#include <stdlib.h>

#include "../t.h"
#include "rt_backend.h"
#include "rt_optim.h"

static const char *dir;

typedef struct {
    char name[32];
    int n;
    float *v;
} arr;
typedef struct {
    arr a[16];
    int n;
} fixture;

static int load(fixture *f, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.txt", dir, name);
    FILE *fp = fopen(path, "r");
    if (!fp) return fprintf(stderr, "  cannot open %s\n", path), -1;
    memset(f, 0, sizeof *f);
    char word[32];
    int c;
    while ((c = fgetc(fp)) != EOF) {
        if (c == '#') {
            while ((c = fgetc(fp)) != EOF && c != '\n') {}
            continue;
        }
        ungetc(c, fp);
        arr *a = &f->a[f->n];
        if (fscanf(fp, "%31s %d", word, &a->n) != 2) break;
        snprintf(a->name, sizeof a->name, "%s", word);
        a->v = malloc((size_t)a->n * sizeof *a->v);
        for (int i = 0; i < a->n; i++)
            if (fscanf(fp, "%f", &a->v[i]) != 1) return fclose(fp), -1;
        f->n++;
        while ((c = fgetc(fp)) != EOF && c != '\n') {}
    }
    fclose(fp);
    return f->n > 0 ? 0 : -1;
}

static void unload(fixture *f)
{
    for (int i = 0; i < f->n; i++) free(f->a[i].v);
}

static float *get(fixture *f, const char *name, int *n)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->a[i].name, name)) {
            if (n) *n = f->a[i].n;
            return f->a[i].v;
        }
    fprintf(stderr, "  fixture lacks %s\n", name);
    abort();
}

/* A tensor over a fresh copy of host data (the CPU backend's memory is host memory). */
static rt_tensor tens(const float *src, int n, int c, int h, int w)
{
    rt_tensor t = {.dtype = RT_F32, .n = n, .c = c, .h = h, .w = w};
    size_t k = (size_t)n * c * h * w;
    t.data = calloc(k, 4);
    if (src) memcpy(t.data, src, k * 4);
    return t;
}

/* Number of mismatches between got and the fixture's array `name` (printed). */
static int cmp(fixture *f, const char *name, const rt_tensor *got)
{
    int n;
    const float *ref = get(f, name, &n);
    const float *g = got->data;
    if ((size_t)n != rt_tensor_numel(got))
        return fprintf(stderr, "  %s: %d reference values, %zu computed\n", name, n,
                       rt_tensor_numel(got)),
               1;
    double amax = 0;
    for (int i = 0; i < n; i++) amax = fmax(amax, fabs(ref[i]));
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (!(fabs(g[i] - ref[i]) <= 1e-5 * (fabs(ref[i]) + amax)) && bad++ < 5)
            fprintf(stderr, "  %s[%d]: kiln %.9g torch %.9g\n", name, i, g[i], ref[i]);
    return bad;
}

static rt_backend be;
#define OPS be.ops

/* The convolution a fixture's "shape" row describes: N C H W K R stride pad. */
static rt_conv_desc conv_desc(const float *s)
{
    rt_conv_desc d = {.N = (int)s[0],
                      .C = (int)s[1],
                      .H = (int)s[2],
                      .W = (int)s[3],
                      .K = (int)s[4],
                      .R = (int)s[5],
                      .S = (int)s[5],
                      .stride = (int)s[6],
                      .pad = (int)s[7]};
    d.P = (d.H + 2 * d.pad - d.R) / d.stride + 1;
    d.Q = (d.W + 2 * d.pad - d.S) / d.stride + 1;
    return d;
}

T_TEST(conv)
{
    static const char *cases[] = {"conv_s1p0", "conv_s2p1", "conv_1x1", "conv_k5p2"};
    for (int k = 0; k < 4; k++) {
        fixture f;
        ASSERT_EQ(load(&f, cases[k]), 0);
        float *s = get(&f, "shape", NULL);
        rt_conv_desc d = conv_desc(s);
        rt_error err = {0};
        ASSERT_EQ(OPS->reserve_workspace(&be, OPS->conv2d_workspace(&be, &d), &err), RT_OK);
        rt_tensor x = tens(get(&f, "x", NULL), d.N, d.C, d.H, d.W);
        rt_tensor w = tens(get(&f, "w", NULL), d.K, d.C, d.R, d.S);
        rt_tensor b = tens(get(&f, "b", NULL), d.K, 1, 1, 1);
        rt_tensor dy = tens(get(&f, "dy", NULL), d.N, d.K, d.P, d.Q);
        rt_tensor y = tens(NULL, d.N, d.K, d.P, d.Q), dx = tens(NULL, d.N, d.C, d.H, d.W);
        rt_tensor dw = tens(NULL, d.K, d.C, d.R, d.S), db = tens(NULL, d.K, 1, 1, 1);
        int bad = rt_backend_conv2d_fwd(&be, &y, &x, &w, &b, &d, &err) != RT_OK;
        bad += rt_backend_conv2d_bwd_data(&be, &dx, &dy, &w, &d, &err) != RT_OK;
        bad += rt_backend_conv2d_bwd_filter(&be, &dw, &db, &dy, &x, &d, &err) != RT_OK;
        bad += cmp(&f, "y", &y) + cmp(&f, "dx", &dx) + cmp(&f, "dw", &dw) + cmp(&f, "db", &db);
        if (bad) fprintf(stderr, "  case %s (%s)\n", cases[k], err.msg);
        free(x.data), free(w.data), free(b.data), free(dy.data), free(y.data);
        free(dx.data), free(dw.data), free(db.data);
        unload(&f);
        ASSERT_EQ(bad, 0);
    }
}

T_TEST(pool)
{
    static const char *cases[] = {"maxpool_2", "maxpool_3s2", "avgpool_2", "avgpool_3s1"};
    for (int k = 0; k < 4; k++) {
        fixture f;
        ASSERT_EQ(load(&f, cases[k]), 0);
        float *s = get(&f, "shape", NULL);
        rt_pool_desc d = {.N = (int)s[0],
                          .C = (int)s[1],
                          .H = (int)s[2],
                          .W = (int)s[3],
                          .R = (int)s[4],
                          .S = (int)s[4],
                          .stride = (int)s[5]};
        d.P = (d.H - d.R) / d.stride + 1;
        d.Q = (d.W - d.S) / d.stride + 1;
        rt_error err = {0};
        rt_tensor x = tens(get(&f, "x", NULL), d.N, d.C, d.H, d.W);
        rt_tensor dy = tens(get(&f, "dy", NULL), d.N, d.C, d.P, d.Q);
        rt_tensor y = tens(NULL, d.N, d.C, d.P, d.Q), dx = tens(NULL, d.N, d.C, d.H, d.W);
        int bad;
        if (k < 2)
            bad = rt_backend_maxpool_fwd(&be, &y, &x, &d, &err) != RT_OK ||
                  rt_backend_maxpool_bwd(&be, &dx, &dy, &x, &y, &d, &err) != RT_OK;
        else
            bad = rt_backend_avgpool_fwd(&be, &y, &x, &d, &err) != RT_OK ||
                  rt_backend_avgpool_bwd(&be, &dx, &dy, &d, &err) != RT_OK;
        bad += cmp(&f, "y", &y) + cmp(&f, "dx", &dx);
        if (bad) fprintf(stderr, "  case %s\n", cases[k]);
        free(x.data), free(dy.data), free(y.data), free(dx.data);
        unload(&f);
        ASSERT_EQ(bad, 0);
    }
}

T_TEST(relu)
{
    static const char *cases[] = {"relu", "leakyrelu"};
    for (int k = 0; k < 2; k++) {
        fixture f;
        ASSERT_EQ(load(&f, cases[k]), 0);
        float slope = get(&f, "slope", NULL)[0];
        rt_error err = {0};
        rt_tensor x = tens(get(&f, "x", NULL), 2, 3, 4, 5),
                  dy = tens(get(&f, "dy", NULL), 2, 3, 4, 5);
        rt_tensor y = tens(NULL, 2, 3, 4, 5), dx = tens(NULL, 2, 3, 4, 5);
        int bad = rt_backend_relu_fwd(&be, &y, &x, slope, &err) != RT_OK ||
                  rt_backend_relu_bwd(&be, &dx, &dy, &y, slope, &err) != RT_OK;
        bad += cmp(&f, "y", &y) + cmp(&f, "dx", &dx);
        /* in place (out == in, din == dout) gives the same values */
        bad += rt_backend_relu_fwd(&be, &x, &x, slope, &err) != RT_OK || cmp(&f, "y", &x);
        bad += rt_backend_relu_bwd(&be, &dy, &dy, &y, slope, &err) != RT_OK || cmp(&f, "dx", &dy);
        free(x.data), free(dy.data), free(y.data), free(dx.data);
        unload(&f);
        ASSERT_EQ(bad, 0);
    }
}

T_TEST(batchnorm)
{
    static const char *cases[] = {"batchnorm", "batchnorm_flat"};
    for (int k = 0; k < 2; k++) {
        fixture f;
        ASSERT_EQ(load(&f, cases[k]), 0);
        float *s = get(&f, "shape", NULL);
        rt_bn_desc d = {.N = (int)s[0],
                        .C = (int)s[1],
                        .H = (int)s[2],
                        .W = (int)s[3],
                        .eps = 1e-5f,
                        .momentum = 0.1f};
        rt_error err = {0};
        rt_tensor x = tens(get(&f, "x", NULL), d.N, d.C, d.H, d.W);
        rt_tensor g = tens(get(&f, "gamma", NULL), d.C, 1, 1, 1);
        rt_tensor bt = tens(get(&f, "beta", NULL), d.C, 1, 1, 1);
        rt_tensor dy = tens(get(&f, "dy", NULL), d.N, d.C, d.H, d.W);
        rt_tensor y = tens(NULL, d.N, d.C, d.H, d.W), dx = tens(NULL, d.N, d.C, d.H, d.W);
        rt_tensor ye = tens(NULL, d.N, d.C, d.H, d.W);
        rt_tensor sm = tens(NULL, d.C, 1, 1, 1), si = tens(NULL, d.C, 1, 1, 1);
        rt_tensor rm = tens(NULL, d.C, 1, 1, 1), rv = tens(NULL, d.C, 1, 1, 1);
        rt_tensor dg = tens(NULL, d.C, 1, 1, 1), db = tens(NULL, d.C, 1, 1, 1);
        for (int c = 0; c < d.C; c++) ((float *)rv.data)[c] = 1.0f;
        int bad =
            rt_backend_bn_fwd_train(&be, &y, &sm, &si, &rm, &rv, &x, &g, &bt, &d, &err) != RT_OK;
        bad += rt_backend_bn_bwd(&be, &dx, &dg, &db, &dy, &x, &g, &sm, &si, &d, &err) != RT_OK;
        bad += rt_backend_bn_fwd_eval(&be, &ye, &x, &g, &bt, &rm, &rv, &d, &err) != RT_OK;
        bad += cmp(&f, "y", &y) + cmp(&f, "running_mean", &rm) + cmp(&f, "running_var", &rv);
        bad += cmp(&f, "y_eval", &ye) + cmp(&f, "dx", &dx) + cmp(&f, "dgamma", &dg);
        bad += cmp(&f, "dbeta", &db);
        if (bad) fprintf(stderr, "  case %s\n", cases[k]);
        rt_tensor *all[] = {&x, &g, &bt, &dy, &y, &dx, &ye, &sm, &si, &rm, &rv, &dg, &db};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]->data);
        unload(&f);
        ASSERT_EQ(bad, 0);
    }
}

T_TEST(dense)
{
    fixture f;
    ASSERT_EQ(load(&f, "dense"), 0);
    float *s = get(&f, "shape", NULL);
    rt_dense_desc d = {.N = (int)s[0], .F = (int)s[1], .O = (int)s[2]};
    rt_error err = {0};
    rt_tensor x = tens(get(&f, "x", NULL), d.N, d.F, 1, 1);
    rt_tensor w = tens(get(&f, "w", NULL), d.O, d.F, 1, 1);
    rt_tensor b = tens(get(&f, "b", NULL), d.O, 1, 1, 1);
    rt_tensor dy = tens(get(&f, "dy", NULL), d.N, d.O, 1, 1);
    rt_tensor y = tens(NULL, d.N, d.O, 1, 1), dx = tens(NULL, d.N, d.F, 1, 1);
    rt_tensor dw = tens(NULL, d.O, d.F, 1, 1), db = tens(NULL, d.O, 1, 1, 1);
    int bad = rt_backend_dense_fwd(&be, &y, &x, &w, &b, &d, &err) != RT_OK;
    bad += rt_backend_dense_bwd_data(&be, &dx, &dy, &w, &d, &err) != RT_OK;
    bad += rt_backend_dense_bwd_filter(&be, &dw, &db, &dy, &x, &d, &err) != RT_OK;
    bad += cmp(&f, "y", &y) + cmp(&f, "dx", &dx) + cmp(&f, "dw", &dw) + cmp(&f, "db", &db);
    free(x.data), free(w.data), free(b.data), free(dy.data), free(y.data);
    free(dx.data), free(dw.data), free(db.data);
    unload(&f);
    ASSERT_EQ(bad, 0);
}

T_TEST(xent)
{
    fixture f;
    ASSERT_EQ(load(&f, "xent"), 0);
    float *s = get(&f, "shape", NULL), *lab = get(&f, "labels", NULL);
    rt_xent_desc d = {.N = (int)s[0], .L = (int)s[1]};
    rt_error err = {0};
    rt_tensor z = tens(get(&f, "logits", NULL), d.N, d.L, 1, 1);
    rt_tensor labels = tens(NULL, d.N, 1, 1, 1), loss = tens(NULL, d.N, 1, 1, 1);
    rt_tensor p = tens(NULL, d.N, d.L, 1, 1), dz = tens(NULL, d.N, d.L, 1, 1);
    labels.dtype = RT_I32;
    for (int i = 0; i < d.N; i++) ((int32_t *)labels.data)[i] = (int32_t)lab[i];
    int bad = rt_backend_xent_fwd(&be, &loss, &p, &z, &labels, &d, &err) != RT_OK;
    bad += rt_backend_xent_bwd(&be, &dz, &p, &labels, 1.0f / (float)d.N, &d, &err) != RT_OK;
    double mean = 0;
    for (int i = 0; i < d.N; i++) mean += ((float *)loss.data)[i];
    rt_tensor m = tens(NULL, 1, 1, 1, 1);
    ((float *)m.data)[0] = (float)(mean / d.N);
    bad += cmp(&f, "loss", &m) + cmp(&f, "probs", &p) + cmp(&f, "dlogits", &dz);
    /* a label outside [0, L) is an error, not a crash */
    ((int32_t *)labels.data)[1] = d.L;
    bad += rt_backend_xent_fwd(&be, &loss, &p, &z, &labels, &d, &err) != RT_EINVAL;
    free(z.data), free(labels.data), free(loss.data), free(p.data), free(dz.data), free(m.data);
    unload(&f);
    ASSERT_EQ(bad, 0);
}

T_TEST(dropout_mask)
{
    /* No PyTorch equivalent (its RNG differs): check the contract instead. Mask values
     * are 0 or 1/(1-p), the kept fraction is ~1-p, the mask is a pure function of
     * (seed, step, layer) and changes with each of them, and backward applies it. */
    enum { N = 4, C = 8, H = 16, W = 16, K = N * C * H * W };
    rt_error err = {0};
    rt_tensor x = tens(NULL, N, C, H, W), y = tens(NULL, N, C, H, W), m1 = tens(NULL, N, C, H, W);
    rt_tensor m2 = tens(NULL, N, C, H, W), dx = tens(NULL, N, C, H, W);
    for (int i = 0; i < K; i++) ((float *)x.data)[i] = 1.0f + (float)(i % 7);
    rt_dropout_desc d = {
        .N = N, .C = C, .H = H, .W = W, .p = 0.25f, .seed = 9, .step = 3, .layer = 5};
    ASSERT_EQ(rt_backend_dropout_fwd(&be, &y, &m1, &x, &d, &err), RT_OK);
    int kept = 0;
    for (int i = 0; i < K; i++) {
        float mv = ((float *)m1.data)[i];
        ASSERT(mv == 0.0f || fabsf(mv - 1.0f / 0.75f) < 1e-6f);
        ASSERT(((float *)y.data)[i] == ((float *)x.data)[i] * mv);
        kept += mv != 0.0f;
    }
    ASSERT_NEAR((double)kept / K, 0.75, 0.03); /* 8192 draws: sd 0.005 */
    ASSERT_EQ(rt_backend_dropout_fwd(&be, &y, &m2, &x, &d, &err), RT_OK);
    ASSERT_EQ(memcmp(m1.data, m2.data, K * 4), 0);
    rt_dropout_desc d2 = d;
    d2.step = 4;
    ASSERT_EQ(rt_backend_dropout_fwd(&be, &y, &m2, &x, &d2, &err), RT_OK);
    ASSERT_NE(memcmp(m1.data, m2.data, K * 4), 0);
    d2 = d;
    d2.layer = 6;
    ASSERT_EQ(rt_backend_dropout_fwd(&be, &y, &m2, &x, &d2, &err), RT_OK);
    ASSERT_NE(memcmp(m1.data, m2.data, K * 4), 0);
    ASSERT_EQ(rt_backend_dropout_bwd(&be, &dx, &x, &m1, &err), RT_OK);
    for (int i = 0; i < K; i++)
        ASSERT(((float *)dx.data)[i] == ((float *)x.data)[i] * ((float *)m1.data)[i]);
    d.p = 1.0f;
    ASSERT_EQ(rt_backend_dropout_fwd(&be, &y, &m2, &x, &d, &err), RT_EINVAL);
    free(x.data), free(y.data), free(m1.data), free(m2.data), free(dx.data);
}

T_TEST(optimizer_ops_equal_rt_optim)
{
    /* The backend's adam_update/sgd_update ops (what a device backend mirrors) agree with
     * rt_optim_step (the trainer's path) over 3 steps. Not bitwise: the op descriptors
     * carry float hyperparameters (0.9f) where rt_optim keeps doubles (0.9), which moves
     * the bias corrections in the last bits; 1e-6 relative bounds that. */
    enum { P = 1000 };
    rt_error err = {0};
    float p0[P], g[P];
    for (int i = 0; i < P; i++) p0[i] = sinf((float)i), g[i] = cosf(0.37f * (float)i);
    for (int kind = 0; kind < 3; kind++) {
        rt_optim_config cfg = rt_optim_config_default(kind == 0   ? RT_OPTIM_ADAM
                                                      : kind == 1 ? RT_OPTIM_ADAMW
                                                                  : RT_OPTIM_SGD);
        if (kind == 2) cfg.momentum = 0.9;
        cfg.weight_decay = 0.01;
        float pa[P], pb[P];
        memcpy(pa, p0, sizeof pa);
        memcpy(pb, p0, sizeof pb);
        rt_optim *o = NULL;
        rt_optim_param prm = {pa, g, P, 0, 0, 1};
        ASSERT_EQ(rt_optim_create(&o, &cfg, &prm, 1, &err), RT_OK);
        rt_tensor tp = tens(pb, P, 1, 1, 1), tg = tens(g, P, 1, 1, 1);
        rt_tensor m = tens(NULL, P, 1, 1, 1), v = tens(NULL, P, 1, 1, 1);
        for (int step = 1; step <= 3; step++) {
            ASSERT_EQ(rt_optim_step(o, 1e-2, &err), RT_OK);
            if (kind < 2) {
                rt_adam_desc d = {.lr = 1e-2f,
                                  .beta1 = 0.9f,
                                  .beta2 = 0.999f,
                                  .eps = 1e-8f,
                                  .weight_decay = 0.01f,
                                  .decoupled = kind == 1,
                                  .step = step};
                ASSERT_EQ(rt_backend_adam_update(&be, &tp, &m, &v, &tg, &d, &err), RT_OK);
            } else {
                rt_sgd_desc d = {
                    .lr = 1e-2f, .momentum = 0.9f, .weight_decay = 0.01f, .step = step};
                ASSERT_EQ(rt_backend_sgd_update(&be, &tp, &m, &tg, &d, &err), RT_OK);
            }
        }
        for (int i = 0; i < P; i++)
            ASSERT_NEAR(((float *)tp.data)[i], pa[i], 1e-6 * fabs(pa[i]) + 1e-7);
        int moved = 0;
        for (int i = 0; i < P; i++) moved += pa[i] != p0[i];
        ASSERT(moved > P / 2); /* the update did something */
        rt_optim_destroy(o);
        free(tp.data), free(tg.data), free(m.data), free(v.data);
    }
}

T_TEST(thread_count_invariance)
{
    /* conv with 1 and 2 threads: bitwise equal (deterministic reductions). */
    fixture f;
    ASSERT_EQ(load(&f, "conv_s2p1"), 0);
    float *s = get(&f, "shape", NULL);
    rt_conv_desc d = conv_desc(s);
    rt_error err = {0};
    rt_backend b2;
    ASSERT_EQ(rt_backend_open(&b2, "cpu", 2, &err), RT_OK);
    ASSERT_EQ(b2.ops->reserve_workspace(&b2, b2.ops->conv2d_workspace(&b2, &d), &err), RT_OK);
    ASSERT_EQ(OPS->reserve_workspace(&be, OPS->conv2d_workspace(&be, &d), &err), RT_OK);
    rt_tensor x = tens(get(&f, "x", NULL), d.N, d.C, d.H, d.W);
    rt_tensor dy = tens(get(&f, "dy", NULL), d.N, d.K, d.P, d.Q);
    rt_tensor dw1 = tens(NULL, d.K, d.C, d.R, d.S), dw2 = tens(NULL, d.K, d.C, d.R, d.S);
    rt_tensor db1 = tens(NULL, d.K, 1, 1, 1), db2 = tens(NULL, d.K, 1, 1, 1);
    ASSERT_EQ(rt_backend_conv2d_bwd_filter(&be, &dw1, &db1, &dy, &x, &d, &err), RT_OK);
    ASSERT_EQ(rt_backend_conv2d_bwd_filter(&b2, &dw2, &db2, &dy, &x, &d, &err), RT_OK);
    ASSERT_EQ(memcmp(dw1.data, dw2.data, rt_tensor_bytes(&dw1)), 0);
    ASSERT_EQ(memcmp(db1.data, db2.data, rt_tensor_bytes(&db1)), 0);
    free(x.data), free(dy.data), free(dw1.data), free(dw2.data), free(db1.data), free(db2.data);
    unload(&f);
    rt_backend_close(&b2);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_fixtures FIXTURE_DIR\n");
        return 99;
    }
    dir = argv[1];
    rt_error err = {0};
    if (rt_backend_open(&be, "cpu", 1, &err)) return fprintf(stderr, "%s\n", err.msg), 99;
    T_RUN(conv);
    T_RUN(pool);
    T_RUN(relu);
    T_RUN(batchnorm);
    T_RUN(dense);
    T_RUN(xent);
    T_RUN(dropout_mask);
    T_RUN(optimizer_ops_equal_rt_optim);
    T_RUN(thread_count_invariance);
    rt_backend_close(&be);
    return T_EXIT();
}
