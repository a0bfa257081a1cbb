/* test_gpu_group.c - several devices in one process (rt_trainer_config.replicas, the
 * device group of rt_dist.h) on two mock devices with the NCCL stand-in
 * (mock/mock_nccl.c; run with KILN_MOCK_DEVICE=devices=2).
 *
 *  - two devices train like one: every step's loss within 1e-6 + 1e-6 rel of the
 *    single-device run, the final parameters within 1e-6 relative L2 (the batch's mean
 *    gradient is summed in another order: the shares' means, weighted; measured 1.7e-8
 *    and 4e-8 over 20 Adam steps). Batch 7 of 64
 *    images: shares of 3 and 4, and a last batch of 1 image that one device has none of;
 *  - one NCCL weighted all-reduce a step, of exactly the gradients' bytes (the flat
 *    gradient vector: every trainable tensor, each padded to RT_OPTIM_ALIGN floats),
 *    with the step's statistics gathered in the same group (two small sums: the
 *    devices' slots of loss, samples and votes, and the right predictions), every call
 *    inside a group and on a stream that waits for the backward (2 event waits a step);
 *  - one host wait a step per device (the polled wait for the sums, which brings the
 *    statistics along: one copy back a step), no other synchronisation;
 *  - the replicas stay bitwise equal to rank 0;
 *  - a checkpoint written mid-run by the 2-device trainer resumes on one device and on
 *    the CPU and ends where the uninterrupted run ends (1e-6 relative L2; measured
 *    2e-8); a 1-device checkpoint resumes on 2 devices the same way;
 *  - a device that fails mid-step stops the other at once with an error naming it;
 *  - a device that never joins an all-reduce stops both within KILN_DIST_TIMEOUT, NCCL
 *    aborted (ncclCommAbort), instead of a hang;
 *  - ranks of a launch join one communicator without blocking (ncclCommInitRankConfig)
 *    and sum over it; a rank that never joins (it died after the ranks met) stops the
 *    join within the timeout, aborted, naming the rank; an NCCL older than 2.14 joins
 *    with the blocking ncclCommInitRank and says so;
 *  - without NCCL the group still trains, through host memory, and no collective runs;
 *  - a device named twice is refused, and so is a batch whose shares do not fit the
 *    models (each device's model holds its share, not the whole batch).
 */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../quadrants.h"
#include "../t.h"
#include "gpu_util.h"
#include "mock/mock_nccl.h"
#include "mock/mock_stats.h"
#include "rt_ckpt_train.h"
#include "rt_nccl.h"

#define IMGS 64
#define BATCH 7
#define EPOCHS 2
#define SPE ((IMGS + BATCH - 1) / BATCH)
#define STEPS (EPOCHS * SPE)

/* no batchnorm or dropout: those make N devices a different (valid) model */
static const char *SPEC = "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nflatten\ndense 4\n";

static rt_dataset g_data;
static rt_backend g_dev[2], g_cpu;

typedef struct run {
    rt_model *m, *rep;
    rt_trainer *t;
    double loss[STEPS];
    int calls;
} run;

static void on_progress(const rt_progress *p, void *user)
{
    run *r = user;
    r->calls++;
    if (p->step >= 1 && p->step <= STEPS) r->loss[p->step - 1] = p->loss;
}

/* max_batch: the share a device trains (4 of 7 on two devices) */
static rt_status model_on(rt_backend *b, int max_batch, rt_model **m, rt_error *err)
{
    rt_model_input in = {1, 8, 8, 4};
    RT_TRY(rt_model_create(m, SPEC, &in, err));
    return rt_model_attach(*m, b, max_batch, 42, err);
}

/* b0 alone (b1 NULL) or b0 + b1; not begun */
static rt_status make(run *r, rt_backend *b0, rt_backend *b1, rt_error *err)
{
    memset(r, 0, sizeof *r);
    RT_TRY(model_on(b0, b1 ? (BATCH + 1) / 2 : BATCH, &r->m, err));
    if (b1) RT_TRY(model_on(b1, (BATCH + 1) / 2, &r->rep, err));
    rt_trainer_config c = rt_trainer_config_default();
    c.epochs = EPOCHS;
    c.batch_size = BATCH;
    c.lr = 3e-3;
    c.progress = on_progress;
    c.user = r;
    c.report_every_s = 0;
    c.replicas = b1 ? &r->rep : NULL;
    c.nreplicas = b1 ? 1 : 0;
    return rt_trainer_create(&r->t, r->m, &g_data, &c, err);
}

static void finish(run *r)
{
    rt_trainer_destroy(r->t);
    rt_model_destroy(r->m);
    rt_model_destroy(r->rep);
}

static rt_status steps(run *r, int n, rt_error *err)
{
    rt_step_event ev = RT_STEP_CONTINUE;
    for (int i = 0; i < n && (ev == RT_STEP_CONTINUE || ev == RT_STEP_EPOCH_END); i++)
        RT_TRY(rt_trainer_step(r->t, &ev, err));
    return RT_OK;
}

static float *params_of(rt_model *m, size_t *n)
{
    *n = rt_tensor_numel(rt_model_params_flat(m));
    float *h = malloc(*n * 4);
    rt_backend *b = rt_model_backend(m);
    if (!h || rt_backend_download(b, h, rt_model_params_flat(m), *n * 4, NULL) != RT_OK) {
        fprintf(stderr, "harness: download failed\n");
        exit(99);
    }
    return h;
}

/* |a - b| / |b| over the flat parameter vectors */
static double rel_l2(rt_model *a, rt_model *b)
{
    size_t n, nb;
    float *x = params_of(a, &n), *y = params_of(b, &nb);
    double d = 0, s = 0;
    for (size_t i = 0; i < n && n == nb; i++) {
        d += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        s += (double)y[i] * y[i];
    }
    free(x);
    free(y);
    return n == nb && s > 0 ? sqrt(d / s) : INFINITY;
}

/* The gradients' bytes from the model's tensors, as the optimiser lays them out. */
static size_t gradient_bytes(rt_model *m)
{
    size_t floats = 0;
    for (int i = 0; i < rt_model_num_tensors(m); i++) {
        rt_named_tensor nt;
        if (rt_model_tensor(m, i, &nt, NULL) == RT_OK && nt.trainable)
            floats += rt_optim_align(nt.numel);
    }
    return floats * sizeof(float);
}

T_TEST(two_devices_train_like_one)
{
    rt_error err = {0};
    run one, two;
    ASSERT_EQ(make(&one, &g_dev[0], NULL, &err), RT_OK);
    ASSERT_EQ(rt_trainer_begin(one.t, &err), RT_OK);
    ASSERT_EQ(steps(&one, STEPS + 1, &err), RT_OK);
    ASSERT_EQ(make(&two, &g_dev[0], &g_dev[1], &err), RT_OK);
    ASSERT(rt_trainer_on_device(two.t));
    mock_nccl_reset();
    mock_stat_reset();
    ASSERT_EQ(rt_trainer_begin(two.t, &err), RT_OK);
    ASSERT_EQ(steps(&two, 1, &err), RT_OK); /* the first copies rank 0's state to the replica */
    const long d2h0 = mock_stat_d2h(), syncs0 = mock_stat_syncs(), polls0 = mock_stat_event_polls();
    ASSERT_EQ(steps(&two, STEPS - 1, &err), RT_OK);
    /* the host's waits, per step and device: the polled wait for NCCL's sums, which the
     * statistics come back with (an asynchronous copy after them); nothing else */
    const long d2h = mock_stat_d2h() - d2h0, syncs = mock_stat_syncs() - syncs0,
               polls = mock_stat_event_polls() - polls0;
    printf("host waits in steps 2-%d on 2 devices: %ld polled waits, %ld synchronisations; "
           "%ld statistics copies back\n",
           STEPS, polls, syncs, d2h);
    ASSERT_EQ(polls, 2 * (STEPS - 1));
    ASSERT_EQ(syncs, 0);
    ASSERT_EQ(d2h, 2 * (STEPS - 1));
    ASSERT_EQ(steps(&two, 1, &err), RT_OK);
    ASSERT_EQ(two.calls, STEPS); /* progress once a step, from rank 0 only */
    double worst = 0;
    for (int i = 0; i < STEPS; i++) {
        double d = fabs(two.loss[i] - one.loss[i]);
        if (d > 1e-6 + 1e-6 * fabs(one.loss[i]))
            T_FAIL_("step %d: loss %.9g on 2 devices, %.9g on 1", i + 1, two.loss[i], one.loss[i]);
        if (d > worst) worst = d;
    }
    ASSERT_EQ(rt_trainer_end(two.t, NULL, &err), RT_OK);
    double rel = rel_l2(two.m, one.m), same = rel_l2(two.rep, two.m);
    printf("2 devices vs 1: worst step loss difference %.3g, final parameters %.3g relative "
           "L2; replica vs rank 0 %.3g\n",
           worst, rel, same);
    ASSERT(rel <= 1e-6);
    ASSERT(same == 0.0);
    /* one weighted all-reduce a step, of the whole gradient, and the statistics' two
     * small sums in the same group (the last: the right predictions, one float),
     * ordered by events */
    const size_t gb = gradient_bytes(two.m);
    const size_t tally = 2 * 4 * sizeof(double) + sizeof(float); /* 2 devices' slots */
    ASSERT_EQ((size_t)rt_tensor_bytes(rt_model_grads_flat(two.m)), gb);
    printf("weighted all-reduces %ld for %d steps, %zu bytes each (gradients %zu bytes); "
           "%ld collectives in all\n",
           mock_nccl_weighted(), STEPS, mock_nccl_weighted_last_bytes(), gb,
           mock_nccl_collectives());
    ASSERT_EQ(mock_nccl_weighted(), STEPS);
    ASSERT_EQ(mock_nccl_weighted_last_bytes(), gb);
    ASSERT_EQ(mock_nccl_weighted_bytes(), (size_t)STEPS * gb);
    ASSERT_EQ(mock_nccl_collectives(), 3 * STEPS);
    ASSERT_EQ(mock_nccl_calls(), 2 * 3 * STEPS);
    ASSERT_EQ(mock_nccl_grouped_calls(), 2 * 3 * STEPS);
    ASSERT_EQ(mock_nccl_last_bytes(), sizeof(float));
    ASSERT_EQ(mock_nccl_bytes(), (size_t)STEPS * (gb + tally));
    ASSERT_EQ(mock_stat_event_waits(), 2 * 2 * STEPS);
    finish(&one);
    finish(&two);
}

/* Runs `from` K steps, saves a checkpoint, resumes it on `to` (+ to1) and finishes;
 * the result must match `ref` (the uninterrupted run, same devices as `from`). */
static void resume_case(int *t_failed_, rt_backend *from0, rt_backend *from1, rt_backend *to0,
                        rt_backend *to1, const char *what)
{
    rt_error err = {0};
    const int K = SPE + 3; /* mid-epoch */
    char path[] = "/tmp/kiln-group-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) T_FAIL_("mkstemp");
    close(fd);
    run ref, a, b;
    if (make(&ref, from0, from1, &err) != RT_OK || rt_trainer_begin(ref.t, &err) != RT_OK ||
        steps(&ref, STEPS + 1, &err) != RT_OK || rt_trainer_end(ref.t, NULL, &err) != RT_OK)
        T_FAIL_("%s: reference run: %s", what, err.msg);
    if (make(&a, from0, from1, &err) != RT_OK || rt_trainer_begin(a.t, &err) != RT_OK ||
        steps(&a, K, &err) != RT_OK || rt_trainer_flush(a.t, &err) != RT_OK)
        T_FAIL_("%s: first part: %s", what, err.msg);
    rt_ckpt_train_snap s;
    memset(&s, 0, sizeof s);
    ASSERT_EQ(rt_ckpt_train_snap_capture(&s, a.t, a.m, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_train_save(path, a.m, &s, NULL, &err), RT_OK);
    rt_ckpt_train_snap_deinit(&s);
    finish(&a);
    rt_ckpt_reader *rd = NULL;
    ASSERT_EQ(make(&b, to0, to1, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_reader_open(path, 0, &rd, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_train_load_model(rd, b.m, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_train_snap_read(&s, rd, b.m, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_train_snap_apply(&s, b.t, b.m, &err), RT_OK);
    rt_ckpt_train_snap_deinit(&s);
    rt_ckpt_reader_destroy(rd);
    if (rt_trainer_begin(b.t, &err) != RT_OK || steps(&b, STEPS + 1, &err) != RT_OK ||
        rt_trainer_end(b.t, NULL, &err) != RT_OK)
        T_FAIL_("%s: resumed part: %s", what, err.msg);
    ASSERT_EQ(rt_trainer_get_state(b.t).step, STEPS);
    double rel = rel_l2(b.m, ref.m);
    printf("%s: resumed at step %d, final parameters %.3g relative L2 from the "
           "uninterrupted run\n",
           what, K, rel);
    ASSERT(rel <= 1e-6);
    if (b.rep) ASSERT(rel_l2(b.rep, b.m) == 0.0);
    finish(&ref);
    finish(&b);
    unlink(path);
}

T_TEST(two_device_checkpoint_resumes_on_one_device)
{
    resume_case(t_failed_, &g_dev[0], &g_dev[1], &g_dev[0], NULL, "2 devices -> cuda:0");
}

T_TEST(two_device_checkpoint_resumes_on_the_cpu)
{
    resume_case(t_failed_, &g_dev[0], &g_dev[1], &g_cpu, NULL, "2 devices -> cpu");
}

T_TEST(one_device_checkpoint_resumes_on_two)
{
    resume_case(t_failed_, &g_dev[1], NULL, &g_dev[0], &g_dev[1], "cuda:1 -> 2 devices");
}

T_TEST(a_failing_device_stops_the_other)
{
    rt_error err = {0};
    rt_backend lost;
    memset(&lost, 0, sizeof lost);
    ASSERT_EQ(rt_backend_open(&lost, "cuda:1", 0, &err), RT_OK);
    run r;
    ASSERT_EQ(make(&r, &g_dev[0], &lost, &err), RT_OK);
    ASSERT_EQ(rt_trainer_begin(r.t, &err), RT_OK);
    ASSERT_EQ(steps(&r, 2, &err), RT_OK);
    lost.lost = 1; /* as after a device fault: every op of cuda:1 fails */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rt_step_event ev;
    rt_status s = rt_trainer_step(r.t, &ev, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("failed step after %.3f s: %s\n", el, err.msg);
    ASSERT_EQ(s, RT_EDEVICE_LOST);
    ASSERT(strstr(err.msg, "cuda:1") != NULL);
    ASSERT(el < 10.0); /* not the group's 600 s timeout */
    /* the group stays stopped: the next step fails at once too */
    ASSERT(rt_trainer_step(r.t, &ev, &err) != RT_OK);
    finish(&r);
    lost.lost = 0;
    rt_backend_close(&lost);
}

/* A device that never joins an all-reduce (the stand-in's hang mode: device 1's third
 * collective never starts): both devices stop within the world's timeout, NCCL aborted,
 * with an error naming the device and the timeout; later steps fail at once. */
T_TEST(a_hung_all_reduce_stops_within_the_timeout)
{
    rt_error err = {0};
    run r;
    setenv("KILN_DIST_TIMEOUT", "0.5", 1);
    rt_status made = make(&r, &g_dev[0], &g_dev[1], &err);
    setenv("KILN_DIST_TIMEOUT", "30", 1);
    ASSERT_EQ(made, RT_OK);
    ASSERT_EQ(rt_trainer_begin(r.t, &err), RT_OK);
    mock_nccl_reset();
    setenv("KILN_MOCK_NCCL", "hang:1:3", 1);
    ASSERT_EQ(steps(&r, 2, &err), RT_OK);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rt_step_event ev;
    rt_status s = rt_trainer_step(r.t, &ev, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    unsetenv("KILN_MOCK_NCCL");
    double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("hung all-reduce: failed after %.3f s: %s\n", el, err.msg);
    ASSERT_EQ(s, RT_EDEVICE_LOST);
    ASSERT_STR_CONTAINS(err.msg, "gradient all-reduce of step 3");
    ASSERT_STR_CONTAINS(err.msg, "did not join within 0.5 s (KILN_DIST_TIMEOUT)");
    ASSERT_STR_CONTAINS(err.msg, "NCCL was aborted");
    ASSERT(strstr(err.msg, "cuda:0") || strstr(err.msg, "cuda:1"));
    ASSERT(el >= 0.45 && el < 5.0);
    ASSERT_EQ(mock_nccl_weighted(), 2);
    ASSERT_EQ(mock_nccl_aborts(), 2); /* each device's communicator */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT(rt_trainer_step(r.t, &ev, &err) != RT_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ASSERT(t1.tv_sec - t0.tv_sec < 2);
    finish(&r); /* no wait for the aborted communicators */
}

/* Rank `rank` of 2 of a launch, on g_dev[rank], as a thread: joins with `id` and sums
 * rank + 1 over the ranks (a host collective through the backend's scratch memory). */
typedef struct joiner {
    int rank;
    const unsigned char *id;
    double timeout_s;
    rt_status s;
    rt_error err;
    double sum;
} joiner;

/* the mock's ranks meet through files: nobody removes its own before both have read */
static pthread_barrier_t g_joined;

static void *join_and_sum(void *p)
{
    joiner *j = p;
    rt_nccl *c = NULL;
    j->s = rt_nccl_create_rank(&c, &g_dev[j->rank], j->id, j->rank, 2, j->timeout_s, &j->err);
    j->sum = j->rank + 1;
    if (j->s == RT_OK) j->s = rt_nccl_host(c, &j->sum, 1, RT_NCCL_HOST_SUM_F64, 5.0, &j->err);
    pthread_barrier_wait(&g_joined);
    rt_nccl_destroy(c);
    return NULL;
}

/* Two ranks in threads; stderr of the joins into log (cap bytes). */
static void join_two(int *t_failed_, joiner j[2], char *log, size_t cap)
{
    unsigned char id[RT_NCCL_ID_BYTES];
    rt_error err = {0};
    ASSERT_EQ(rt_nccl_unique_id(id, &err), RT_OK);
    char path[] = "/tmp/kiln-join-XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    ASSERT(fd >= 0 && saved >= 0);
    fflush(stderr);
    dup2(fd, 2);
    pthread_t th[2];
    pthread_barrier_init(&g_joined, NULL, 2);
    for (int r = 0; r < 2; r++) {
        j[r] = (joiner){.rank = r, .id = id, .timeout_s = 10.0};
        pthread_create(&th[r], NULL, join_and_sum, &j[r]);
    }
    for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
    pthread_barrier_destroy(&g_joined);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, log, cap - 1, 0);
    log[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    fputs(log, stderr);
}

T_TEST(launched_ranks_join_without_blocking)
{
    joiner j[2];
    char log[2048];
    join_two(t_failed_, j, log, sizeof log);
    for (int r = 0; r < 2; r++) {
        if (j[r].s != RT_OK) T_FAIL_("rank %d: %s", r, j[r].err.msg);
        ASSERT(j[r].sum == 3.0);
    }
    ASSERT(strstr(log, "ncclCommInitRankConfig") == NULL); /* no fallback said */
}

T_TEST(an_nccl_older_than_2_14_joins_blocking_and_says_so)
{
    joiner j[2];
    char log[2048];
    setenv("KILN_MOCK_NCCL", "old", 1);
    join_two(t_failed_, j, log, sizeof log);
    unsetenv("KILN_MOCK_NCCL");
    for (int r = 0; r < 2; r++) {
        if (j[r].s != RT_OK) T_FAIL_("rank %d: %s", r, j[r].err.msg);
        ASSERT(j[r].sum == 3.0);
    }
    ASSERT_STR_CONTAINS(log, "rank 0 of 2: NCCL 2.13.4 has no ncclCommInitRankConfig");
    ASSERT_STR_CONTAINS(log, "rank 1 of 2: NCCL 2.13.4 has no ncclCommInitRankConfig");
}

/* Rank 1 died after the ranks met: rank 0's join ends after the timeout, aborted. */
T_TEST(a_rank_that_never_joins_stops_the_join)
{
    unsigned char id[RT_NCCL_ID_BYTES];
    rt_error err = {0};
    ASSERT_EQ(rt_nccl_unique_id(id, &err), RT_OK);
    mock_nccl_reset();
    rt_nccl *c = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rt_status s = rt_nccl_create_rank(&c, &g_dev[0], id, 0, 2, 0.5, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("a rank that never joins: the join failed after %.3f s: %s\n", el, err.msg);
    ASSERT_EQ(s, RT_EDEVICE_LOST);
    ASSERT(c == NULL);
    ASSERT_STR_CONTAINS(err.msg, "rank 0 of 2 (cuda:0)");
    ASSERT_STR_CONTAINS(err.msg,
                        "did not join NCCL's communicator within 0.5 s (KILN_DIST_TIMEOUT)");
    ASSERT_STR_CONTAINS(err.msg, "the join was aborted");
    ASSERT(el >= 0.45 && el < 5.0);
    ASSERT_EQ(mock_nccl_aborts(), 1);
}

T_TEST(without_nccl_through_host_memory)
{
    rt_error err = {0};
    run one, two;
    setenv("KILN_MOCK_NCCL", "missing", 1);
    ASSERT_EQ(make(&one, &g_dev[0], NULL, &err), RT_OK);
    ASSERT_EQ(rt_trainer_begin(one.t, &err), RT_OK);
    ASSERT_EQ(steps(&one, STEPS + 1, &err), RT_OK);
    mock_nccl_reset();
    ASSERT_EQ(make(&two, &g_dev[0], &g_dev[1], &err), RT_OK);
    ASSERT_EQ(rt_trainer_begin(two.t, &err), RT_OK);
    ASSERT_EQ(steps(&two, STEPS + 1, &err), RT_OK);
    unsetenv("KILN_MOCK_NCCL");
    ASSERT_EQ(mock_nccl_calls(), 0);
    double rel = rel_l2(two.m, one.m);
    printf("without NCCL: final parameters %.3g relative L2 from 1 device\n", rel);
    ASSERT(rel <= 1e-6);
    finish(&one);
    finish(&two);
}

T_TEST(a_device_named_twice_is_refused)
{
    rt_error err = {0};
    run r;
    ASSERT(make(&r, &g_dev[0], &g_dev[0], &err) == RT_EINVAL);
    ASSERT(strstr(err.msg, "cuda:0 is named twice") != NULL);
    rt_model_destroy(r.m);
    rt_model_destroy(r.rep);
}

T_TEST(shares_larger_than_the_models_are_refused)
{
    rt_error err = {0};
    rt_model *m = NULL, *rep = NULL;
    rt_trainer *t = NULL;
    ASSERT_EQ(model_on(&g_dev[0], 3, &m, &err), RT_OK);
    ASSERT_EQ(model_on(&g_dev[1], 3, &rep, &err), RT_OK);
    rt_trainer_config c = rt_trainer_config_default();
    c.batch_size = BATCH; /* shares of 4 and 3 */
    c.replicas = &rep;
    c.nreplicas = 1;
    ASSERT_EQ(rt_trainer_create(&t, m, &g_data, &c, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "shares of up to 4 samples, but the model was set up for 3");
    c.batch_size = 6; /* 3 and 3 fit */
    ASSERT_EQ(rt_trainer_create(&t, m, &g_data, &c, &err), RT_OK);
    rt_trainer_destroy(t);
    rt_model_destroy(m);
    rt_model_destroy(rep);
}

int main(void)
{
    rt_error err = {0};
    rt_cuda_device_list list;
    if (rt_cuda_list_devices(&list, &err) != RT_OK || list.count < 2) {
        printf("SKIP: needs 2 devices (KILN_MOCK_DEVICE=devices=2 on the mock)\n");
        return 77;
    }
    if (rt_backend_open(&g_dev[0], "cuda:0", 0, &err) != RT_OK ||
        rt_backend_open(&g_dev[1], "cuda:1", 0, &err) != RT_OK ||
        rt_backend_open(&g_cpu, "cpu", 1, &err) != RT_OK) {
        fprintf(stderr, "cannot open the devices: %s\n", err.msg);
        return 99;
    }
    quadrants_make(&g_data, IMGS, 5, 0.5f, "gen/train");
    T_RUN(two_devices_train_like_one);
    T_RUN(two_device_checkpoint_resumes_on_one_device);
    T_RUN(two_device_checkpoint_resumes_on_the_cpu);
    T_RUN(one_device_checkpoint_resumes_on_two);
    T_RUN(a_failing_device_stops_the_other);
    T_RUN(a_hung_all_reduce_stops_within_the_timeout);
    T_RUN(launched_ranks_join_without_blocking);
    T_RUN(an_nccl_older_than_2_14_joins_blocking_and_says_so);
    T_RUN(a_rank_that_never_joins_stops_the_join);
    T_RUN(without_nccl_through_host_memory);
    T_RUN(a_device_named_twice_is_refused);
    T_RUN(shares_larger_than_the_models_are_refused);
    free(g_data.images);
    free(g_data.labels);
    rt_backend_close(&g_dev[0]);
    rt_backend_close(&g_dev[1]);
    rt_backend_close(&g_cpu);
    return T_EXIT();
}
