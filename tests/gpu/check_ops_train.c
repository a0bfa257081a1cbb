/* check_ops_train.c - the trainer's device-path ops (rt_backend.h: gather_batch,
 * xent_stats, amp_scale/unscale, amp_adam/sgd_update) on the CPU and the CUDA backend,
 * compared BIT FOR BIT: they are copies, Philox draws, a sequential double sum,
 * power-of-two scaling and the optimiser bodies, which the CUDA backend mirrors exactly
 * (NaN payloads excepted: see gpu_compare_bits).
 *
 * Besides CPU == CUDA this checks what the CPU cannot vouch for by itself:
 *  - every output tensor starts with a sentinel, so writing too much (or too little)
 *    shows up as a difference;
 *  - loss scaling: an inf/NaN gradient skips the update (params and state bitwise
 *    unchanged on the device, scale halved), clean steps apply it with Adam's t (and
 *    SGD's first step) taken from the device state, whatever d->step says;
 *  - the CUDA backend never reads through a bad order value (the mock device faults on
 *    a stray access) and neither downloads nor synchronises in these ops (counted by
 *    the mock device; the counters are absent on a real GPU).
 * Gather seeds were searched offline so that Lemire's rejection loop of rt_rng_below
 * runs (its probability is ~1e-8 per draw): seed 44377 rejects the top draw of data-set
 * index 2, seed 607983 the left draw of index 6 (epoch 0, pad 57: span 115).
 */
#include "check_ops.h"
#include "rt_amp_rule.h"

/* The mock device's counters (tests/gpu/mock/mock_stats.h); NULL on a real GPU. */
long mock_stat_d2h(void) __attribute__((weak));
long mock_stat_syncs(void) __attribute__((weak));
void mock_stat_reset(void) __attribute__((weak));

/* ck_both, and on the mock: the CUDA side made no download and no synchronisation. */
static int both_async(const char *what, case_fn fn, void *ctx)
{
    if (mock_stat_reset) mock_stat_reset();
    int ok = ck_both(what, fn, ctx);
    if (ok && mock_stat_d2h && (mock_stat_d2h() || mock_stat_syncs())) {
        fprintf(stderr,
                "  %s: the CUDA ops made %ld downloads and %ld synchronisations "
                "(none allowed)\n",
                what, mock_stat_d2h(), mock_stat_syncs());
        ck_failures++;
        return 0;
    }
    return ok;
}

static void expect(int cond, const char *what)
{
    if (cond) return;
    fprintf(stderr, "  FAILED: %s\n", what);
    ck_failures++;
}

/* ---- gather_batch ---- */

typedef struct gather_ctx {
    rt_gather_desc d;
    gpu_pair data, dlab, order, img, lab;
} gather_ctx;

static rt_status gather_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    gather_ctx *k = vc;
    return rt_backend_gather_batch(b, T(k->img), T(k->lab), T(k->data), T(k->dlab), T(k->order),
                                   &k->d, err);
}

/* n images (C,H,W), order = the epoch's permutation; gathers [start, start+count) into a
 * batch of `batch` >= count samples pre-filled with a sentinel. */
static void check_gather_cut(int n, int C, int H, int W, int start, int count, int batch,
                             int augment, int pad, float flip_p, uint64_t seed, uint32_t epoch,
                             int cutout)
{
    gather_ctx k;
    memset(&k, 0, sizeof k);
    k.d = (rt_gather_desc){.n = n,
                           .C = C,
                           .H = H,
                           .W = W,
                           .start = start,
                           .count = count,
                           .augment = augment,
                           .pad = pad,
                           .flip_p = flip_p,
                           .pad_value = {-1.5f, 0.25f, 2.0f, -0.125f},
                           .seed = seed,
                           .epoch = epoch,
                           .cutout = cutout};
    printf("gather_batch n=%d C=%d H=%d W=%d [%d, %d) batch %d augment=%d pad=%d flip_p=%g "
           "seed=%llu epoch=%u cutout=%d\n",
           n, C, H, W, start, start + count, batch, augment, pad, (double)flip_p,
           (unsigned long long)seed, epoch, cutout);
    size_t img = (size_t)C * H * W;
    float *vd = gpu_randn((size_t)n * img, 20, 1.0f),
          *vs = gpu_randn((size_t)batch * img, 21, 1.0f);
    int32_t *lab = malloc((size_t)n * 4), *ord = malloc((size_t)n * 4),
            *ls = malloc((size_t)batch * 4);
    uint32_t *perm = malloc((size_t)n * 4);
    rt_rng r = rt_rng_stream(seed, RT_RNG_SHUFFLE, epoch, 0);
    rt_rng_permutation(&r, perm, (size_t)n);
    for (int i = 0; i < n; i++) lab[i] = (i * 7 + 3) % 10, ord[i] = (int32_t)perm[i];
    for (int i = 0; i < batch; i++) ls[i] = 1000 + i;
    MAKE(k.data, n, C, H, W, vd);
    MAKE(k.dlab, n, 1, 1, 1, (const float *)lab);
    MAKE(k.order, n, 1, 1, 1, (const float *)ord);
    MAKE(k.img, batch, C, H, W, vs);
    MAKE(k.lab, batch, 1, 1, 1, (const float *)ls);
    k.dlab.c.dtype = k.dlab.g.dtype = k.order.c.dtype = k.order.g.dtype = RT_I32;
    k.lab.c.dtype = k.lab.g.dtype = RT_I32;
    if (both_async("gather_batch", gather_case, &k)) {
        CMP_BITS("gather_batch images", k.img, 0);
        CMP_BITS("gather_batch labels", k.lab, 0);
    }
    gpu_pair *all[] = {&k.data, &k.dlab, &k.order, &k.img, &k.lab};
    for (int i = 0; i < 5; i++) FREE(*all[i]);
    free(vd), free(vs), free(lab), free(ord), free(ls), free(perm);
}

static void check_gather(int n, int C, int H, int W, int start, int count, int batch, int augment,
                         int pad, float flip_p, uint64_t seed, uint32_t epoch)
{
    check_gather_cut(n, C, H, W, start, count, batch, augment, pad, flip_p, seed, epoch, 0);
}

/* ---- clip_grad ---- */

typedef struct clip_ctx {
    rt_clip_desc d;
    gpu_pair g, w;
} clip_ctx;

static rt_status clip_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    clip_ctx *k = vc;
    return rt_backend_clip_grad(b, T(k->g), T(k->w), &k->d, err);
}

/* n gradients of scale sd; the norm, the factor and the clipped gradient of both sides. */
static void check_clip(int n, float sd, double max_norm, double clip_value)
{
    clip_ctx k;
    memset(&k, 0, sizeof k);
    k.d = (rt_clip_desc){.max_norm = max_norm, .clip_value = clip_value};
    printf("clip_grad n=%d scale %g max_norm %g clip_value %g\n", n, (double)sd, max_norm,
           clip_value);
    float *vg = gpu_randn((size_t)n, 31, sd);
    MAKE(k.g, n, 1, 1, 1, vg);
    MAKE(k.w, RT_CLIP_WORDS, 1, 1, 1, NULL);
    if (both_async("clip_grad", clip_case, &k)) {
        CMP("clip_grad gradient", k.g, 1e-7, 1e-6);
        float wc[2], wg[2];
        rt_error err = {0};
        if (rt_backend_download(&ck_be[0], wc, &k.w.c, sizeof wc, &err) != RT_OK ||
            rt_backend_download(&ck_be[1], wg, &k.w.g, sizeof wg, &err) != RT_OK)
            exit(99);
        expect(fabsf(wc[0] - wg[0]) <= 1e-6f * wc[0] && fabsf(wc[1] - wg[1]) <= 1e-6f,
               "clip_grad: the norm and the factor agree");
        if (max_norm > 0) {
            double ss = 0; /* the reference norm of the input, and the factor taken */
            for (int i = 0; i < n; i++) {
                float v = vg[i];
                if (clip_value > 0)
                    v = v > clip_value    ? (float)clip_value
                        : v < -clip_value ? (float)-clip_value
                                          : v;
                ss += (double)v * v;
            }
            double want = max_norm / (sqrt(ss) + 1e-6);
            expect(fabs(wc[0] - sqrt(ss)) <= 1e-6 * sqrt(ss), "clip_grad: the norm is the L2 norm");
            expect(fabs(wc[1] - (want < 1 ? want : 1.0)) <= 1e-6, "clip_grad: the factor");
        }
    }
    FREE(k.g), FREE(k.w);
    free(vg);
}

/* Bad order values: the CPU refuses them; the CUDA backend, which cannot see them
 * without a download, gives those samples the label -1 and reads nothing through them
 * (the mock device would fault), and stays usable. */
static void check_gather_bad_order(void)
{
    printf("gather_batch with bad order values\n");
    gather_ctx k;
    memset(&k, 0, sizeof k);
    k.d = (rt_gather_desc){.n = 6,
                           .C = 2,
                           .H = 3,
                           .W = 3,
                           .start = 0,
                           .count = 6,
                           .augment = 1,
                           .pad = 2,
                           .flip_p = 0.5f,
                           .seed = 7};
    float *vd = gpu_randn(6 * 18, 22, 1.0f);
    int32_t lab[6] = {1, 2, 3, 4, 5, 6}, ord[6] = {3, -1, 5, 6, 0, 1 << 30}, ls[6] = {0};
    MAKE(k.data, 6, 2, 3, 3, vd);
    MAKE(k.dlab, 6, 1, 1, 1, (const float *)lab);
    MAKE(k.order, 6, 1, 1, 1, (const float *)ord);
    MAKE(k.img, 6, 2, 3, 3, NULL);
    MAKE(k.lab, 6, 1, 1, 1, (const float *)ls);
    rt_error err = {0};
    expect(gather_case(&ck_be[0], 0, &k, &err) == RT_EINVAL, "cpu refuses order value -1");
    rt_status s = gather_case(&ck_be[1], 1, &k, &err);
    int32_t got[6] = {0};
    expect(s == RT_OK && rt_backend_download(&ck_be[1], got, &k.lab.g, 24, &err) == RT_OK,
           "cuda gather with bad order values runs (and the device is not lost)");
    int32_t want[6] = {4, -1, 6, -1, 1, -1};
    expect(memcmp(got, want, sizeof want) == 0, "cuda labels: -1 for bad order values");
    gpu_pair *all[] = {&k.data, &k.dlab, &k.order, &k.img, &k.lab};
    for (int i = 0; i < 5; i++) FREE(*all[i]);
    free(vd);
}

/* ---- xent_stats ---- */

typedef struct stats_ctx {
    rt_xent_desc d;
    int row;
    gpu_pair loss, probs, lab, ring;
} stats_ctx;

static rt_status stats_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    stats_ctx *k = vc;
    return rt_backend_xent_stats(b, T(k->ring), k->row, T(k->loss), T(k->probs), T(k->lab), &k->d,
                                 err);
}

/* probs from a few levels, so ties of the maximum are common (the first one counts) */
static void check_stats(int N, int L, int row, int rows)
{
    stats_ctx k;
    memset(&k, 0, sizeof k);
    k.d = (rt_xent_desc){N, L, 0.0f};
    k.row = row;
    printf("xent_stats N=%d L=%d row %d of %d\n", N, L, row, rows);
    float *vl = gpu_randn((size_t)N, 23, 2.0f), *vp = gpu_randn((size_t)N * L, 24, 1.0f);
    float *vr = gpu_randn((size_t)rows * RT_STEP_STATS, 25, 1.0f);
    int32_t *lab = malloc((size_t)N * 4);
    for (int i = 0; i < N; i++) vl[i] = fabsf(vl[i]) * 1.37f;
    for (size_t i = 0; i < (size_t)N * L; i++) vp[i] = 0.1f * (float)((int)(fabsf(vp[i]) * 3.0f));
    for (int i = 0; i < N; i++) lab[i] = (i * 5 + 1) % L;
    MAKE(k.loss, N, 1, 1, 1, vl);
    MAKE(k.probs, N, L, 1, 1, vp);
    MAKE(k.lab, N, 1, 1, 1, (const float *)lab);
    MAKE(k.ring, rows, RT_STEP_STATS, 1, 1, vr);
    k.lab.c.dtype = k.lab.g.dtype = RT_I32;
    if (both_async("xent_stats", stats_case, &k)) CMP_BITS("xent_stats ring", k.ring, 0);
    gpu_pair *all[] = {&k.loss, &k.probs, &k.lab, &k.ring};
    for (int i = 0; i < 4; i++) FREE(*all[i]);
    free(vl), free(vp), free(vr), free(lab);
}

/* ---- loss scaling ---- */

typedef struct amp_ctx {
    rt_adam_desc ad;
    rt_sgd_desc sd;
    int bad;       /* this step's gradient: 0 clean, 1 inf, 2 NaN */
    int64_t t_ref; /* the Adam t this step must use if it applies */
    gpu_pair g, ginf, gnan, dl, ga, gs, pa, m, v, ps, buf, ampa, amps, pr, mr, vr;
} amp_ctx;

static rt_status amp_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    amp_ctx *k = vc;
    const rt_tensor *src = k->bad == 1 ? T(k->ginf) : k->bad == 2 ? T(k->gnan) : T(k->g);
    RT_TRY(rt_backend_copy(b, T(k->dl), T(k->g), err));
    RT_TRY(rt_backend_amp_scale(b, T(k->dl), T(k->ampa), err));
    RT_TRY(rt_backend_copy(b, T(k->ga), src, err));
    RT_TRY(rt_backend_copy(b, T(k->gs), src, err));
    RT_TRY(rt_backend_amp_unscale(b, T(k->ga), T(k->ampa), err));
    RT_TRY(rt_backend_amp_adam_update(b, T(k->pa), T(k->m), T(k->v), T(k->ga), T(k->ampa), &k->ad,
                                      err));
    RT_TRY(rt_backend_amp_unscale(b, T(k->gs), T(k->amps), err));
    RT_TRY(rt_backend_amp_sgd_update(b, T(k->ps), T(k->buf), T(k->gs), T(k->amps), &k->sd, err));
    if (k->bad) return RT_OK;
    /* the reference: a plain Adam step with the t the state must have supplied */
    rt_adam_desc ad = k->ad;
    ad.step = k->t_ref;
    return rt_backend_adam_update(b, T(k->pr), T(k->mr), T(k->vr), T(k->ga), &ad, err);
}

static rt_amp_state amp_download(gpu_pair *p)
{
    rt_amp_state s;
    rt_error err = {0};
    if (rt_backend_download(&ck_be[1], &s, &p->g, sizeof s, &err) != RT_OK) exit(99);
    return s;
}

/* 1 if the CUDA side of a and b hold the same bits */
static int same_on_device(gpu_pair *a, gpu_pair *b)
{
    rt_error err = {0};
    float *x = malloc(a->n * 4), *y = malloc(a->n * 4);
    if (!x || !y || rt_backend_download(&ck_be[1], x, &a->g, a->n * 4, &err) != RT_OK ||
        rt_backend_download(&ck_be[1], y, &b->g, b->n * 4, &err) != RT_OK)
        exit(99);
    int same = memcmp(x, y, a->n * 4) == 0;
    free(x), free(y);
    return same;
}

static void check_amp(int n, int decoupled, float wd, int nesterov)
{
    amp_ctx k;
    memset(&k, 0, sizeof k);
    /* d->step is garbage on purpose: the amp ops take t from the state */
    k.ad = (rt_adam_desc){1e-3f, 0.9f, 0.999f, 1e-8f, wd, decoupled, 999};
    k.sd = (rt_sgd_desc){0.01f, 0.9f, 0.0f, wd, nesterov, 999};
    printf("amp n=%d adam%s wd=%g sgd momentum 0.9 nesterov=%d\n", n, decoupled ? "w" : "",
           (double)wd, nesterov);
    float *vp = gpu_randn((size_t)n, 26, 1.0f), *vg = gpu_randn((size_t)n, 27, 0.1f);
    for (int i = 0; i < n; i++) vg[i] *= 65536.0f; /* a scaled gradient */
    float *vi = malloc((size_t)n * 4), *vn = malloc((size_t)n * 4);
    memcpy(vi, vg, (size_t)n * 4), memcpy(vn, vg, (size_t)n * 4);
    vi[n / 2] = INFINITY, vi[n - 1] = -INFINITY, vn[n / 3] = NAN;
    /* Adam: resumed at steps 5, growth after 2 clean steps; SGD: fresh, scale 2^10 */
    rt_amp_state sa, ss;
    float wa[RT_AMP_WORDS] = {0}, ws[RT_AMP_WORDS] = {0};
    rt_amp_state_init(&sa, 0.0);
    sa.steps = 5, sa.interval = 2;
    rt_amp_state_init(&ss, 1024.0);
    ss.interval = 3;
    memcpy(wa, &sa, sizeof sa), memcpy(ws, &ss, sizeof ss);
    MAKE(k.g, n, 1, 1, 1, vg);
    MAKE(k.ginf, n, 1, 1, 1, vi);
    MAKE(k.gnan, n, 1, 1, 1, vn);
    MAKE(k.pa, n, 1, 1, 1, vp);
    MAKE(k.ps, n, 1, 1, 1, vp);
    MAKE(k.pr, n, 1, 1, 1, vp);
    gpu_pair *zero[] = {&k.dl, &k.ga, &k.gs, &k.m, &k.v, &k.buf, &k.mr, &k.vr};
    for (int i = 0; i < 8; i++) MAKE(*zero[i], n, 1, 1, 1, NULL);
    FREE(k.buf); /* garbage: SGD's first applied step must overwrite it, not decay it */
    MAKE(k.buf, n, 1, 1, 1, vg);
    MAKE(k.ampa, RT_AMP_WORDS, 1, 1, 1, wa);
    MAKE(k.amps, RT_AMP_WORDS, 1, 1, 1, ws);
    k.ampa.c.dtype = k.ampa.g.dtype = k.amps.c.dtype = k.amps.g.dtype = RT_I32;
    const int seq[] = {1, 0, 1, 0, 0, 2, 0, 0, 0}; /* overflow first: SGD's buffer waits */
    const int nseq = (int)(sizeof seq / sizeof *seq);
    int64_t t = sa.steps;
    for (int step = 0; step < nseq; step++) {
        k.bad = seq[step];
        k.t_ref = k.bad ? t : t + 1;
        rt_amp_state before = amp_download(&k.ampa), sbefore = amp_download(&k.amps);
        gpu_pair snap;
        MAKE(snap, n, 1, 1, 1, NULL);
        rt_error err = {0};
        if (rt_backend_copy(&ck_be[1], &snap.g, &k.pa.g, &err) != RT_OK) exit(99);
        printf(" step %d: %s\n", step,
               k.bad == 1   ? "inf gradient"
               : k.bad == 2 ? "NaN gradient"
                            : "clean");
        if (!both_async("amp step", amp_case, &k)) {
            FREE(snap);
            break;
        }
        CMP_BITS("amp_scale loss gradient", k.dl, 0);
        CMP_BITS("amp_unscale gradient", k.ga, 1);
        CMP_BITS("amp_adam_update param", k.pa, 0);
        CMP_BITS("amp_adam_update m", k.m, 0);
        CMP_BITS("amp_adam_update v", k.v, 0);
        CMP_BITS("amp_sgd_update param", k.ps, 0);
        CMP_BITS("amp_sgd_update momentum", k.buf, 0);
        CMP_BITS("amp state (adam)", k.ampa, 0);
        CMP_BITS("amp state (sgd)", k.amps, 0);
        rt_amp_state after = amp_download(&k.ampa), safter = amp_download(&k.amps);
        if (k.bad) {
            expect(after.last_skipped == 1 && after.steps == before.steps &&
                       after.scale == before.scale * 0.5 && after.skipped == before.skipped + 1 &&
                       after.found_inf == 0,
                   "overflow: adam skipped, scale halved, found_inf consumed");
            expect(safter.last_skipped == 1 && safter.steps == sbefore.steps &&
                       safter.scale == sbefore.scale * 0.5,
                   "overflow: sgd skipped, scale halved");
            expect(same_on_device(&k.pa, &snap), "overflow: params bitwise untouched");
        } else {
            t++;
            expect(after.last_skipped == 0 && after.steps == t && safter.last_skipped == 0 &&
                       safter.steps == sbefore.steps + 1,
                   "clean step applied with t = steps + 1");
            expect(!same_on_device(&k.pa, &snap), "clean step changed the params");
            expect(same_on_device(&k.pa, &k.pr), "adam's t came from the device state");
        }
        FREE(snap);
    }
    expect(amp_download(&k.ampa).scale == 65536.0 / 8.0 * 4.0,
           "adam scale after the sequence (halved 3x, grown 2x at interval 2)");
    gpu_pair *all[] = {&k.g, &k.ginf, &k.gnan, &k.pa, &k.ps, &k.pr, &k.ampa, &k.amps};
    for (int i = 0; i < 8; i++) FREE(*all[i]);
    for (int i = 0; i < 8; i++) FREE(*zero[i]);
    free(vp), free(vg), free(vi), free(vn);
}

/* ---- refusals: the host checks of both backends agree, and CUDA stays usable ---- */

static void check_refusals(void)
{
    printf("refusals of bad arguments\n");
    gpu_pair small, ring;
    MAKE(small, 8, 1, 1, 1, NULL);
    MAKE(ring, 2, RT_STEP_STATS, 1, 1, NULL);
    for (int side = 0; side < 2; side++) {
        rt_backend *b = &ck_be[side];
        rt_error err = {0};
        rt_gather_desc d = {.n = 8, .C = 1, .H = 1, .W = 1, .start = 4, .count = 5};
        expect(rt_backend_gather_batch(b, T(small), T(small), T(small), T(small), T(small), &d,
                                       &err) == RT_EINVAL,
               "gather: start + count > n");
        d = (rt_gather_desc){.n = 1, .C = 5, .H = 1, .W = 1, .count = 1, .augment = 1};
        expect(rt_backend_gather_batch(b, T(small), T(small), T(small), T(small), T(small), &d,
                                       &err) == RT_EINVAL,
               "gather: augment with C = 5");
        d = (rt_gather_desc){.n = 2, .C = 1, .H = 3, .W = 2, .count = 2};
        expect(rt_backend_gather_batch(b, T(small), T(small), T(small), T(small), T(small), &d,
                                       &err) == RT_EINVAL,
               "gather: images tensor too small");
        rt_xent_desc x = {2, 2, 0.0f};
        expect(rt_backend_xent_stats(b, T(ring), 2, T(small), T(small), T(small), &x, &err) ==
                   RT_EINVAL,
               "xent_stats: row outside the ring");
        expect(rt_backend_xent_stats(b, T(ring), -1, T(small), T(small), T(small), &x, &err) ==
                   RT_EINVAL,
               "xent_stats: row -1");
        expect(rt_backend_amp_unscale(b, T(small), T(small), &err) == RT_EINVAL,
               "amp_unscale: state tensor of 8 words");
        expect(b->lost == 0, "no refusal loses the backend");
    }
    FREE(small), FREE(ring);
}

void check_train_ops(void)
{
    /* gather: plain copies (C=3 full batch, C=1 last partial batch, count < batch),
     * then crop/flip with spans 9, 3, 1 (no crop draws), 7, flips never/always/half */
    check_gather(37, 3, 5, 7, 0, 8, 8, 0, 0, 0.0f, 11, 0);
    check_gather(37, 1, 4, 3, 32, 5, 8, 0, 0, 0.0f, 11, 1);
    check_gather(37, 3, 8, 8, 8, 16, 16, 1, 4, 0.5f, 12, 2);
    check_gather(23, 1, 6, 9, 3, 7, 10, 1, 1, 1.0f, 13, 5);
    check_gather(23, 3, 5, 5, 0, 23, 23, 1, 0, 0.5f, 14, 0);
    check_gather(19, 4, 7, 5, 2, 11, 12, 1, 3, 0.0f, 15, 9);
    check_gather(1, 3, 1, 1, 0, 1, 1, 1, 2, 0.5f, 16, 0);
    check_gather(37, 3, 5, 5, 0, 37, 37, 1, 57, 0.5f, 44377, 0);    /* top rejects at 2 */
    check_gather(37, 2, 6, 5, 0, 37, 40, 1, 57, 0.5f, 607983, 0);   /* left rejects at 6 */
    check_gather(9, 3, 4, 4, 5, 0, 4, 1, 2, 0.5f, 17, 0);           /* count 0: no-op */
    check_gather_cut(37, 3, 8, 8, 8, 16, 16, 1, 4, 0.5f, 12, 2, 4); /* cutout after crop/flip */
    check_gather_cut(23, 1, 7, 5, 0, 23, 23, 1, 0, 0.0f, 18, 1, 3); /* cutout alone, odd side */
    check_clip(1, 1.0f, 0.5, 0.0);
    check_clip(1000, 1.0f, 1.0, 0.0);     /* clipped: the norm is ~31 */
    check_clip(300000, 1e-3f, 10.0, 0.0); /* not clipped: factor 1, gradient unchanged */
    check_clip(4099, 1.0f, 0.0, 0.5);     /* the clamp alone */
    check_clip(70001, 1.0f, 2.0, 0.25);   /* both: the clamp first */
    check_gather_bad_order();
    check_stats(1, 2, 0, 1);
    check_stats(5, 10, 2, 3);
    check_stats(33, 7, 1, 4);
    check_stats(1000, 3, 0, 2); /* more samples than the block's threads */
    check_amp(1, 0, 0.0f, 0);
    check_amp(1000, 1, 0.01f, 0);
    check_amp(4099, 0, 1e-4f, 1);
    check_refusals();
}
