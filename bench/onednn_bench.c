/* onednn_bench.c - oneDNN's convolution and inner-product primitives against Kiln's CPU
 * backend at a network's shapes (batch 128 by default): forward, backward-data and
 * backward-weights, each in microseconds per call (median of --reps after one warm-up,
 * all variants interleaved call by call), for
 *   dnnl bf16   src/weights/diff_dst bf16, dst/diff_src/diff_weights f32, the formats
 *               oneDNN prefers ('any'); "+reo" adds the reorders from and to Kiln's
 *               NCHW/OIHW fp32 tensors that Kiln would pay around each call
 *   kiln bf16   the backend's bf16 op (run again with KILN_CPU_AMX=off for VDPBF16PS
 *               or the fp32 loops, KILN_CPU_DP=all for VDPBF16PS)
 *   dnnl f32    all f32, formats 'any' ("+reo" as above)
 *   kiln f32    the backend's fp32 op
 * and the largest difference of oneDNN's results from Kiln's fp32 op (relative to the
 * largest magnitude), so that both are seen computing the same thing. Each layer's "step"
 * row sums its three directions as a training step would call them: a reorder that
 * repeats an earlier one of the step (the input into the same format for the forward and
 * the weight gradient, the output gradient for both backward directions, the weights
 * for both data directions) is counted once. stderr names oneDNN's implementation of
 * each primitive, the time it took to make them, and whether its last call repeated
 * the first one's bits. --clock cpu (default)
 * times the process's CPU time, all threads; --clock wall the elapsed time.
 * Builds against oneDNN 2.x (Debian's libdnnl-dev) or 3.x (bench/README.md).
 *
 *   onednn_bench [--threads 2] [--batch 128] [--reps 7] [--clock cpu|wall]
 *                [--net seedcnn|resnet20|mobilenetv2] [--only kiln|dnnl]
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <oneapi/dnnl/dnnl.h>

#include "bench_conv_shapes.h"
#include "rt_device.h"
#include "rt_omp_wait.h"
#include "rt_backend.h"

/* Kiln's OpenMP spin default, as training runs it (oneDNN 2.x's OpenMP threads are the
 * same libgomp's) */
RT_OMP_WAIT_PREINIT(rt_omp_wait_preinit);

#if DNNL_VERSION_MAJOR >= 3
typedef const_dnnl_memory_desc_t dn_md;
#else
typedef const dnnl_memory_desc_t *dn_md;
#endif

enum { FWD, BWD_DATA, BWD_WEIGHTS, NDIR };
static const char *const dir_name[NDIR] = {"fwd", "bwd_data", "bwd_wts"};
enum { V_DNNL_BF16, V_KILN_BF16, V_DNNL_F32, V_KILN_F32, NVAR };

/* A dense layer F -> O of a net. */
typedef struct {
    const char *name;
    int F, O;
} dense_shape;

static const dense_shape seedcnn_dense[] = {
    {"dense 9216->128", 9216, 128}, {"dense 128->10", 128, 10}, {NULL, 0, 0}};
static const dense_shape resnet20_dense[] = {{"dense 64->10", 64, 10}, {NULL, 0, 0}};
static const dense_shape no_dense[] = {{NULL, 0, 0}};

static int clock_wall = 0;

static double now_s(void)
{
    if (!clock_wall) return bench_cpu_s();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void dn_check(dnnl_status_t st, const char *what)
{
    if (st == dnnl_success) return;
    fprintf(stderr, "onednn_bench: %s failed (dnnl status %d)\n", what, (int)st);
    exit(1);
}

/* Memory descriptors: a 2.x descriptor is a struct the caller keeps, a 3.x one a handle
 * (left to the process's end: a bench). */
typedef struct {
#if DNNL_VERSION_MAJOR >= 3
    dnnl_memory_desc_t h;
#else
    dnnl_memory_desc_t s;
#endif
} md_buf;

static dn_md md_make(md_buf *b, int nd, const int64_t *dims, dnnl_data_type_t dt,
                     dnnl_format_tag_t tag)
{
    dnnl_dims_t d = {0};
    for (int i = 0; i < nd; i++) d[i] = dims[i];
#if DNNL_VERSION_MAJOR >= 3
    dn_check(dnnl_memory_desc_create_with_tag(&b->h, nd, d, dt, tag), "memory desc");
    return b->h;
#else
    dn_check(dnnl_memory_desc_init_by_tag(&b->s, nd, d, dt, tag), "memory desc");
    return &b->s;
#endif
}

/* One argument of a primitive: Kiln's fp32 tensor (user), the primitive's copy (prim;
 * the same memory where the formats agree) and the reorder between them. */
typedef struct {
    int arg, out;
    dnnl_memory_t user, prim;
    dnnl_primitive_t reo;
} dn_arg;

typedef struct {
    dnnl_primitive_t prim;
    dn_arg a[3]; /* two inputs, then the output */
    char impl[80];
} dn_op;

typedef struct {
    dnnl_engine_t eng;
    dnnl_stream_t st;
} dn_ctx;

static void arg_bind(dn_ctx *c, dn_arg *a, int arg, int out, dnnl_primitive_desc_t pd,
                     dnnl_query_t q, dn_md user_md, float *data)
{
    dn_md pm = dnnl_primitive_desc_query_md(pd, q, 0);
    a->arg = arg, a->out = out, a->reo = NULL;
    dn_check(dnnl_memory_create(&a->user, user_md, c->eng, data), "memory");
    if (dnnl_memory_desc_equal(pm, user_md)) {
        a->prim = a->user;
        return;
    }
    dn_check(dnnl_memory_create(&a->prim, pm, c->eng, DNNL_MEMORY_ALLOCATE), "memory");
    dnnl_primitive_desc_t rpd;
    dn_check(out ? dnnl_reorder_primitive_desc_create(&rpd, pm, c->eng, user_md, c->eng, NULL)
                 : dnnl_reorder_primitive_desc_create(&rpd, user_md, c->eng, pm, c->eng, NULL),
             "reorder");
    dn_check(dnnl_primitive_create(&a->reo, rpd), "reorder primitive");
    dnnl_primitive_desc_destroy(rpd);
}

static void op_finish(dn_op *op, dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    dn_check(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl), "impl query");
    snprintf(op->impl, sizeof op->impl, "%s", impl ? impl : "?");
    dn_check(dnnl_primitive_create(&op->prim, pd), "primitive");
}

static void reo_run(dn_ctx *c, dn_arg *a)
{
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, a->out ? a->prim : a->user},
                               {DNNL_ARG_TO, a->out ? a->user : a->prim}};
    dn_check(dnnl_primitive_execute(a->reo, c->st, 2, args), "reorder");
}

/* Runs op; *t_prim gets the primitive's seconds, t_reo[i] the reorder's of argument i. */
static void op_run(dn_ctx *c, dn_op *op, double *t_prim, double t_reo[3])
{
    for (int i = 0; i < 3; i++) {
        double t0 = now_s();
        if (i == 2) {
            dnnl_exec_arg_t args[3];
            for (int j = 0; j < 3; j++) args[j].arg = op->a[j].arg, args[j].memory = op->a[j].prim;
            dn_check(dnnl_primitive_execute(op->prim, c->st, 3, args), "execute");
            dn_check(dnnl_stream_wait(c->st), "wait");
            *t_prim = now_s() - t0;
            t0 = now_s();
        }
        if (op->a[i].reo) reo_run(c, &op->a[i]);
        dn_check(dnnl_stream_wait(c->st), "wait");
        t_reo[i] = now_s() - t0;
    }
}

/* Whether argument a's reorder repeats b's (the same tensor into the same format): a
 * training step would do it once. */
static int reo_shared(const dn_arg *a, const dn_arg *b)
{
    if (!a->reo || !b->reo) return 0;
    dn_md ma, mb;
    dn_check(dnnl_memory_get_memory_desc(a->prim, &ma), "memory desc");
    dn_check(dnnl_memory_get_memory_desc(b->prim, &mb), "memory desc");
    return dnnl_memory_desc_equal(ma, mb);
}

/* The fp32 tensors one layer's three directions read and write (Kiln's layouts). */
typedef struct {
    float *x, *w, *dy, *y, *dx, *dw;
    size_t nx, nw, ny;
} bufs;

/* The three directions of a layer in oneDNN: a convolution (cs != NULL) or an inner
 * product (N x F -> O). lo: the data type of src, weights and diff_dst. */
static void dn_layer(dn_ctx *c, dn_op op[NDIR], const rt_conv_desc *d, int is_conv,
                     dnnl_data_type_t lo, bufs *b)
{
    const dnnl_data_type_t f32 = dnnl_f32;
    md_buf mb[16];
    int64_t xd[4] = {d->N, d->C, d->H, d->W}, wd[4] = {d->K, d->C, d->R, d->S};
    int64_t yd[4] = {d->N, d->K, d->P, d->Q};
    int nd = is_conv ? 4 : 2;
    if (!is_conv) xd[1] = (int64_t)d->C * d->H * d->W, wd[1] = xd[1];
    dnnl_format_tag_t tx = is_conv ? dnnl_nchw : dnnl_nc, tw = is_conv ? dnnl_oihw : dnnl_oi;
    dn_md ux = md_make(&mb[0], nd, xd, f32, tx), uw = md_make(&mb[1], nd, wd, f32, tw);
    dn_md uy = md_make(&mb[2], nd, yd, f32, tx);
    dn_md ax = md_make(&mb[3], nd, xd, lo, dnnl_format_tag_any);
    dn_md aw = md_make(&mb[4], nd, wd, lo, dnnl_format_tag_any);
    dn_md ay = md_make(&mb[5], nd, yd, f32, dnnl_format_tag_any);
    dn_md ady = md_make(&mb[6], nd, yd, lo, dnnl_format_tag_any);
    dn_md adx = md_make(&mb[7], nd, xd, f32, dnnl_format_tag_any);
    dn_md adw = md_make(&mb[8], nd, wd, f32, dnnl_format_tag_any);
    dnnl_dims_t str = {d->stride, d->stride}, dil = {0, 0}, pl = {d->pad, d->pad};
    dnnl_dims_t pr = {(d->P - 1) * d->stride + d->R - d->H - d->pad,
                      (d->Q - 1) * d->stride + d->S - d->W - d->pad};
    dnnl_primitive_desc_t pd[NDIR];
    const dnnl_prop_kind_t pk = dnnl_forward_training;
    const dnnl_alg_kind_t alg = dnnl_convolution_direct;
#if DNNL_VERSION_MAJOR >= 3
    if (is_conv) {
        dn_check(dnnl_convolution_forward_primitive_desc_create(&pd[0], c->eng, pk, alg, ax, aw,
                                                                NULL, ay, str, dil, pl, pr, NULL),
                 "conv fwd");
        dn_check(dnnl_convolution_backward_data_primitive_desc_create(
                     &pd[1], c->eng, alg, adx, aw, ady, str, dil, pl, pr, pd[0], NULL),
                 "conv bwd data");
        dn_check(dnnl_convolution_backward_weights_primitive_desc_create(
                     &pd[2], c->eng, alg, ax, adw, NULL, ady, str, dil, pl, pr, pd[0], NULL),
                 "conv bwd weights");
    } else {
        dn_check(dnnl_inner_product_forward_primitive_desc_create(&pd[0], c->eng, pk, ax, aw, NULL,
                                                                  ay, NULL),
                 "ip fwd");
        dn_check(dnnl_inner_product_backward_data_primitive_desc_create(&pd[1], c->eng, adx, aw,
                                                                        ady, pd[0], NULL),
                 "ip bwd data");
        dn_check(dnnl_inner_product_backward_weights_primitive_desc_create(&pd[2], c->eng, ax, adw,
                                                                           NULL, ady, pd[0], NULL),
                 "ip bwd weights");
    }
#else
    (void)dil;
    if (is_conv) {
        dnnl_convolution_desc_t cd[NDIR];
        dn_check(dnnl_convolution_forward_desc_init(&cd[0], pk, alg, ax, aw, NULL, ay, str, pl, pr),
                 "conv fwd");
        dn_check(dnnl_convolution_backward_data_desc_init(&cd[1], alg, adx, aw, ady, str, pl, pr),
                 "conv bwd data");
        dn_check(dnnl_convolution_backward_weights_desc_init(&cd[2], alg, ax, adw, NULL, ady, str,
                                                             pl, pr),
                 "conv bwd weights");
        for (int k = 0; k < NDIR; k++)
            dn_check(dnnl_primitive_desc_create(&pd[k], &cd[k], NULL, c->eng, k ? pd[0] : NULL),
                     dir_name[k]);
    } else {
        dnnl_inner_product_desc_t id[NDIR];
        dn_check(dnnl_inner_product_forward_desc_init(&id[0], pk, ax, aw, NULL, ay), "ip fwd");
        dn_check(dnnl_inner_product_backward_data_desc_init(&id[1], adx, aw, ady), "ip bwd data");
        dn_check(dnnl_inner_product_backward_weights_desc_init(&id[2], ax, adw, NULL, ady),
                 "ip bwd weights");
        for (int k = 0; k < NDIR; k++)
            dn_check(dnnl_primitive_desc_create(&pd[k], &id[k], NULL, c->eng, k ? pd[0] : NULL),
                     dir_name[k]);
    }
#endif
    arg_bind(c, &op[0].a[0], DNNL_ARG_SRC, 0, pd[0], dnnl_query_src_md, ux, b->x);
    arg_bind(c, &op[0].a[1], DNNL_ARG_WEIGHTS, 0, pd[0], dnnl_query_weights_md, uw, b->w);
    arg_bind(c, &op[0].a[2], DNNL_ARG_DST, 1, pd[0], dnnl_query_dst_md, uy, b->y);
    arg_bind(c, &op[1].a[0], DNNL_ARG_DIFF_DST, 0, pd[1], dnnl_query_diff_dst_md, uy, b->dy);
    arg_bind(c, &op[1].a[1], DNNL_ARG_WEIGHTS, 0, pd[1], dnnl_query_weights_md, uw, b->w);
    arg_bind(c, &op[1].a[2], DNNL_ARG_DIFF_SRC, 1, pd[1], dnnl_query_diff_src_md, ux, b->dx);
    arg_bind(c, &op[2].a[0], DNNL_ARG_SRC, 0, pd[2], dnnl_query_src_md, ux, b->x);
    arg_bind(c, &op[2].a[1], DNNL_ARG_DIFF_DST, 0, pd[2], dnnl_query_diff_dst_md, uy, b->dy);
    arg_bind(c, &op[2].a[2], DNNL_ARG_DIFF_WEIGHTS, 1, pd[2], dnnl_query_diff_weights_md, uw,
             b->dw);
    for (int k = 0; k < NDIR; k++) {
        op_finish(&op[k], pd[k]);
        dnnl_primitive_desc_destroy(pd[k]);
    }
}

/* Kiln's op of direction k; a dense layer when !is_conv. */
static double kiln_run(rt_backend *be, int k, const rt_conv_desc *d, int is_conv, bufs *b)
{
    rt_error err = {0};
    rt_status st;
    double t0 = now_s();
    if (is_conv) {
        rt_tensor X = bench_tens(b->x, d->N, d->C, d->H, d->W);
        rt_tensor W = bench_tens(b->w, d->K, d->C, d->R, d->S);
        rt_tensor DY = bench_tens(b->dy, d->N, d->K, d->P, d->Q);
        rt_tensor Y = bench_tens(b->y, d->N, d->K, d->P, d->Q);
        rt_tensor DX = bench_tens(b->dx, d->N, d->C, d->H, d->W);
        rt_tensor DW = bench_tens(b->dw, d->K, d->C, d->R, d->S);
        t0 = now_s();
        st = k == FWD        ? rt_backend_conv2d_fwd(be, &Y, &X, &W, NULL, d, &err)
             : k == BWD_DATA ? rt_backend_conv2d_bwd_data(be, &DX, &DY, &W, d, &err)
                             : rt_backend_conv2d_bwd_filter(be, &DW, NULL, &DY, &X, d, &err);
    } else {
        int F = d->C * d->H * d->W;
        rt_dense_desc dd = {.N = d->N, .F = F, .O = d->K};
        rt_tensor X = bench_tens(b->x, d->N, F, 1, 1), W = bench_tens(b->w, d->K, F, 1, 1);
        rt_tensor DY = bench_tens(b->dy, d->N, d->K, 1, 1), Y = bench_tens(b->y, d->N, d->K, 1, 1);
        rt_tensor DX = bench_tens(b->dx, d->N, F, 1, 1), DW = bench_tens(b->dw, d->K, F, 1, 1);
        t0 = now_s();
        st = k == FWD        ? rt_backend_dense_fwd(be, &Y, &X, &W, NULL, &dd, &err)
             : k == BWD_DATA ? rt_backend_dense_bwd_data(be, &DX, &DY, &W, &dd, &err)
                             : rt_backend_dense_bwd_filter(be, &DW, NULL, &DY, &X, &dd, &err);
    }
    double t1 = now_s();
    if (st != RT_OK) {
        fprintf(stderr, "onednn_bench: kiln %s: %s\n", dir_name[k], err.msg);
        exit(1);
    }
    return t1 - t0;
}

/* The output of direction k, and its length. */
static float *out_of(bufs *b, int k, size_t *n)
{
    *n = k == FWD ? b->ny : k == BWD_DATA ? b->nx : b->nw;
    return k == FWD ? b->y : k == BWD_DATA ? b->dx : b->dw;
}

/* A copy of direction k's output. */
static float *copy_out(bufs *b, int k)
{
    size_t n;
    const float *o = out_of(b, k, &n);
    float *c = malloc(n * sizeof *c);
    if (c) memcpy(c, o, n * sizeof *c);
    return c;
}

/* Whether direction k's output now has the bits of `first` (the first call's), and a
 * hash of them (FNV-1a) to compare between runs, at other thread counts. */
static const char *same_bits(const float *first, bufs *b, int k, char *msg, size_t cap)
{
    size_t n;
    const unsigned char *o = (const unsigned char *)out_of(b, k, &n);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ o[i]) * 1099511628211ull;
    snprintf(msg, cap, "%s, bits %016llx",
             !first                                ? "?"
             : memcmp(first, o, n * sizeof(float)) ? "other bits"
                                                   : "bit for bit",
             (unsigned long long)h);
    return msg;
}

/* max |a - r| / max |r| */
static double rel_diff(const float *a, const float *r, size_t n)
{
    double m = 0.0, e = 0.0;
    for (size_t i = 0; i < n; i++) {
        m = fmax(m, fabs((double)r[i]));
        e = fmax(e, fabs((double)a[i] - (double)r[i]));
    }
    return m > 0.0 ? e / m : e;
}

/* One row: the six figures (dnnl bf16, +reorders, kiln bf16, dnnl f32, +reorders, kiln
 * f32), Kiln's over oneDNN's with the reorders, and the differences (< 0: not measured). */
static void print_row(const char *name, const char *dir, const double m[6], double e16, double e32)
{
    printf("%-22s %-8s %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %6.2f %6.2f", name, dir, m[0], m[1],
           m[2], m[3], m[4], m[5], m[2] > 0 && m[1] > 0 ? m[2] / m[1] : 0.0,
           m[5] > 0 && m[4] > 0 ? m[5] / m[4] : 0.0);
    if (e16 >= 0.0) printf(" %8.1e %8.1e", e16, e32);
    printf("\n");
}

typedef struct {
    int reps, only_kiln, only_dnnl;
    rt_backend *kb[2]; /* Kiln's bf16 and fp32 backends */
    dn_ctx *c;
} run_cfg;

/* Times one layer (a convolution or, with !is_conv, a dense layer) and prints its rows. */
static void bench_layer(const run_cfg *cfg, const char *name, const rt_conv_desc *d, int is_conv,
                        double tot[NDIR + 1][6])
{
    bufs b[NVAR];
    size_t nx = (size_t)d->N * d->C * d->H * d->W, ny = (size_t)d->N * d->K * d->P * d->Q;
    size_t nw = (size_t)d->K * d->C * d->R * d->S;
    for (int v = 0; v < NVAR; v++) {
        b[v] = (bufs){.x = bench_rnd(nx, 1),
                      .w = bench_rnd(nw, 2),
                      .dy = bench_rnd(ny, 3),
                      .y = calloc(ny, 4),
                      .dx = calloc(nx, 4),
                      .dw = calloc(nw, 4),
                      .nx = nx,
                      .nw = nw,
                      .ny = ny};
    }
    rt_error err = {0};
    for (int p = 0; p < 2; p++) {
        rt_backend *be = cfg->kb[p];
        size_t ws = 0;
        if (is_conv) ws = be->ops->conv2d_workspace(be, d);
        else if (be->ops->dense_workspace) {
            rt_dense_desc dd = {.N = d->N, .F = d->C * d->H * d->W, .O = d->K};
            ws = be->ops->dense_workspace(be, &dd);
        }
        if (be->ops->reserve_workspace(be, ws, &err) != RT_OK) {
            fprintf(stderr, "onednn_bench: %s\n", err.msg);
            exit(1);
        }
    }
    dn_op op[2][NDIR];
    memset(op, 0, sizeof op);
    if (!cfg->only_kiln) {
        double t0 = now_s();
        dn_layer(cfg->c, op[0], d, is_conv, dnnl_bf16, &b[V_DNNL_BF16]);
        double t1 = now_s();
        dn_layer(cfg->c, op[1], d, is_conv, dnnl_f32, &b[V_DNNL_F32]);
        fprintf(stderr,
                "# %-22s made its primitives and reorders in %.2f ms (bf16), %.2f ms (f32)\n", name,
                1e3 * (t1 - t0), 1e3 * (now_s() - t1));
    }
    /* the reorders a training step would do once (the second of each pair is left out of
     * the step's figure): the weights into the same format for both data directions, the
     * input for the forward and the weight gradient, the output gradient for both
     * backward directions */
    int once[2][NDIR][3] = {{{0}}};
    for (int p = 0; p < 2 && !cfg->only_kiln; p++) {
        once[p][BWD_DATA][1] = reo_shared(&op[p][BWD_DATA].a[1], &op[p][FWD].a[1]);
        once[p][BWD_WEIGHTS][0] = reo_shared(&op[p][BWD_WEIGHTS].a[0], &op[p][FWD].a[0]);
        once[p][BWD_WEIGHTS][1] = reo_shared(&op[p][BWD_WEIGHTS].a[1], &op[p][BWD_DATA].a[0]);
    }
    /* per direction: dnnl bf16 primitive, its reorders, kiln bf16, dnnl f32, its reorders,
     * kiln f32, then the reorders of dnnl bf16 and f32 less those done once */
    static double t[NDIR][8][100];
    float *first[2][NDIR] = {{NULL}};
    for (int r = 0; r <= cfg->reps; r++) {
        for (int k = 0; k < NDIR; k++) {
            for (int p = 0; p < 2; p++) {
                double tp = 0.0, tr[3] = {0.0, 0.0, 0.0};
                if (!cfg->only_kiln) op_run(cfg->c, &op[p][k], &tp, tr);
                double tk = cfg->only_dnnl ? 0.0
                                           : kiln_run(cfg->kb[p], k, d, is_conv,
                                                      &b[p ? V_KILN_F32 : V_KILN_BF16]);
                if (!r) { /* warm-up; its results kept to compare with the last call's */
                    if (!cfg->only_kiln)
                        first[p][k] = copy_out(&b[p ? V_DNNL_F32 : V_DNNL_BF16], k);
                    continue;
                }
                t[k][3 * p][r - 1] = tp, t[k][3 * p + 2][r - 1] = tk;
                t[k][3 * p + 1][r - 1] = tr[0] + tr[1] + tr[2];
                t[k][6 + p][r - 1] = 0.0;
                for (int i = 0; i < 3; i++)
                    if (!once[p][k][i]) t[k][6 + p][r - 1] += tr[i];
            }
        }
    }
    double step[6] = {0.0};
    for (int k = 0; k < NDIR; k++) {
        double m[8];
        for (int j = 0; j < 8; j++) m[j] = 1e6 * bench_median(t[k][j], cfg->reps);
        double e16 = -1.0, e32 = -1.0;
        if (!cfg->only_kiln && !cfg->only_dnnl) {
            size_t n;
            float *ref = out_of(&b[V_KILN_F32], k, &n);
            e16 = rel_diff(out_of(&b[V_DNNL_BF16], k, &n), ref, n);
            e32 = rel_diff(out_of(&b[V_DNNL_F32], k, &n), ref, n);
        }
        const double row[6] = {m[0], m[0] + m[1], m[2], m[3], m[3] + m[4], m[5]};
        print_row(name, dir_name[k], row, e16, e32);
        const double srow[6] = {m[0], m[0] + m[6], m[2], m[3], m[3] + m[7], m[5]};
        for (int j = 0; j < 6; j++)
            tot[k][j] += row[j], tot[NDIR][j] += srow[j], step[j] += srow[j];
    }
    print_row(name, "step", step, -1.0, -1.0);
    if (!cfg->only_kiln)
        for (int k = 0; k < NDIR; k++) {
            char m0[64], m1[64];
            fprintf(stderr, "# %-22s %-8s dnnl bf16: %s (repeats %s), f32: %s (repeats %s)\n", name,
                    dir_name[k], op[0][k].impl,
                    same_bits(first[0][k], &b[V_DNNL_BF16], k, m0, sizeof m0), op[1][k].impl,
                    same_bits(first[1][k], &b[V_DNNL_F32], k, m1, sizeof m1));
        }
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < NDIR; k++) free(first[p][k]);
    for (int v = 0; v < NVAR; v++)
        free(b[v].x), free(b[v].w), free(b[v].dy), free(b[v].y), free(b[v].dx), free(b[v].dw);
    /* oneDNN's objects of this layer are left to the process's end (a bench) */
}

int main(int argc, char **argv)
{
    int threads = 2, batch = 128;
    run_cfg cfg = {.reps = 7};
    const bench_conv_shape *net = bench_resnet20;
    const dense_shape *dense = resnet20_dense;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--batch")) batch = atoi(v);
        else if (!strcmp(a, "--reps")) cfg.reps = atoi(v);
        else if (!strcmp(a, "--clock")) clock_wall = !strcmp(v, "wall");
        else if (!strcmp(a, "--only"))
            cfg.only_kiln = !strcmp(v, "kiln"), cfg.only_dnnl = !cfg.only_kiln;
        else if (!strcmp(a, "--net")) {
            net = !strcmp(v, "mobilenetv2") ? bench_mobilenet
                  : !strcmp(v, "seedcnn")   ? bench_seedcnn
                                            : bench_resnet20;
            dense = !strcmp(v, "mobilenetv2") ? no_dense
                    : !strcmp(v, "seedcnn")   ? seedcnn_dense
                                              : resnet20_dense;
        } else {
            fprintf(stderr, "onednn_bench: unknown option %s\n", a);
            return 2;
        }
    }
    if (cfg.reps < 1 || cfg.reps > 99) cfg.reps = 7;
    if (threads < 1) threads = 1;
    omp_set_num_threads(threads);
    rt_backend kb[2];
    rt_error err = {0};
    for (int p = 0; p < 2; p++) {
        if (rt_backend_open(&kb[p], "cpu", threads, &err) != RT_OK ||
            rt_backend_set_precision(&kb[p], p ? RT_PREC_FP32 : RT_PREC_BF16, &err) != RT_OK) {
            fprintf(stderr, "onednn_bench: %s\n", err.msg);
            return 1;
        }
        cfg.kb[p] = &kb[p];
    }
    dn_ctx c;
    dn_check(dnnl_engine_create(&c.eng, dnnl_cpu, 0), "engine");
    dn_check(dnnl_stream_create(&c.st, c.eng, dnnl_stream_default_flags), "stream");
    cfg.c = &c;
    const dnnl_version_t *ver = dnnl_version();
    const char *amx = getenv("KILN_CPU_AMX"), *dp = getenv("KILN_CPU_DP");
    printf("# oneDNN %d.%d.%d, %d threads, batch %d, %s microseconds per call (median of %d); "
           "KILN_CPU_AMX=%s KILN_CPU_DP=%s\n",
           ver->major, ver->minor, ver->patch, threads, batch, clock_wall ? "wall" : "CPU",
           cfg.reps, amx ? amx : "(unset)", dp ? dp : "(unset)");
    printf("# +reo: with the reorders from/to NCHW fp32; k/d: kiln over dnnl+reo; err: max "
           "|dnnl - kiln f32| / max |kiln f32|\n");
    printf("%-22s %-8s %9s %9s %9s %9s %9s %9s %6s %6s %8s %8s\n", "layer", "dir", "dnnl16",
           "dnnl16+r", "kiln16", "dnnl32", "dnnl32+r", "kiln32", "k/d16", "k/d32", "err16",
           "err32");
    double tot[NDIR + 1][6] = {{0}};
    for (const bench_conv_shape *s = net; s->name; s++) {
        rt_conv_desc d = bench_conv_desc(s, batch);
        bench_layer(&cfg, s->name, &d, 1, tot);
    }
    for (const dense_shape *s = dense; s->name; s++) {
        rt_conv_desc d = {.N = batch,
                          .C = s->F,
                          .H = 1,
                          .W = 1,
                          .K = s->O,
                          .R = 1,
                          .S = 1,
                          .stride = 1,
                          .P = 1,
                          .Q = 1};
        bench_layer(&cfg, s->name, &d, 0, tot);
    }
    for (int k = 0; k <= NDIR; k++)
        print_row("total", k < NDIR ? dir_name[k] : "step", tot[k], -1.0, -1.0);
    for (int p = 0; p < 2; p++) rt_backend_close(&kb[p]);
    return 0;
}
