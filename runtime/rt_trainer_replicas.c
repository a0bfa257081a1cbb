/* rt_trainer_replicas.c - several devices in one process (rt_trainer_config.replicas):
 * one trainer a device, one host thread a device, the ranks of one rt_dist_group.
 *
 * The trainer the caller holds is rank 0 (its model is the caller's m); the replicas'
 * trainers are ranks 1..n, each with the caller's configuration but no progress
 * callback, no stop request and no time limit of its own: the stop is rank 0's, agreed
 * in every step's statistics exchange (rt_trainer_dist.c), so every device stops after
 * the same step. The data path is the ranks' one: each trainer runs the same batcher and
 * trains on its share of the batch; the group averages the gradients (NCCL between CUDA
 * devices), and every replica applies the same update to the same parameters, so the
 * replicas stay equal and rank 0's model is the run's.
 *
 * begin and each step are commands: the caller's thread gives the command to the
 * replicas' threads, runs rank 0's part itself, then waits for them. A failure on one
 * device aborts the group (the others' collectives end at once) and the first failure
 * is the error reported, naming the device.
 *
 * What the caller changes between steps on rank 0 - the trainer state, the optimiser
 * state (rt_trainer_optim, rt_trainer_set_state: a checkpoint load) and the parameters -
 * is copied to the replicas before the next begin or step.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_trainer_internal.h"

typedef struct rtp_replica {
    rtp_replicas *rs;
    rt_trainer *t; /* rank i + 1 */
    pthread_t th;
    int started;
    rt_status st; /* of the last command */
    rt_error err;
} rtp_replica;

struct rtp_replicas {
    int n;          /* replicas besides rank 0 */
    rtp_replica *r; /* (n) */
    rt_dist_group *g;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned long gen; /* commands given */
    int step;          /* the command: 1 step, 0 begin */
    int quit;
    int busy;       /* replicas still running the command */
    int first_fail; /* rank that failed first in this command, -1 none */
};

static void note_failure(rtp_replicas *rs, int rank)
{
    pthread_mutex_lock(&rs->mu);
    if (rs->first_fail < 0) rs->first_fail = rank;
    pthread_mutex_unlock(&rs->mu);
    rt_dist_group_abort(rs->g);
}

static void *replica_main(void *arg)
{
    rtp_replica *r = arg;
    rtp_replicas *rs = r->rs;
    const int rank = (int)(r - rs->r) + 1;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&rs->mu);
        while (rs->gen == seen && !rs->quit) pthread_cond_wait(&rs->go, &rs->mu);
        seen = rs->gen;
        const int quit = rs->quit, step = rs->step;
        pthread_mutex_unlock(&rs->mu);
        if (quit) return NULL;
        rt_step_event ev;
        memset(&r->err, 0, sizeof r->err);
        r->st =
            step ? rtp_trainer_step_own(r->t, &ev, &r->err) : rtp_trainer_begin_own(r->t, &r->err);
        if (r->st != RT_OK) note_failure(rs, rank);
        pthread_mutex_lock(&rs->mu);
        if (--rs->busy == 0) pthread_cond_signal(&rs->done);
        pthread_mutex_unlock(&rs->mu);
    }
}

rt_status rtp_rep_create(rt_trainer **out, rt_model *m, const rt_dataset *train,
                         const rt_trainer_config *cfg, rt_error *err)
{
    *out = NULL;
    const int n = cfg->nreplicas;
    if (cfg->dist)
        return RT_ERR(err, RT_EINVAL,
                      "several devices in a launch of several ranks: give "
                      "each rank one device (its LOCAL_RANK's) ---> HINT: --device cuda");
    if (!cfg->replicas) return RT_ERR(err, RT_EINVAL, "nreplicas %d without replicas", n);
    RT_TRY(rtp_controls_check(cfg, train, err)); /* --accumulate is refused here */
    rt_backend **bs = calloc((size_t)n + 1, sizeof *bs);
    rtp_replicas *rs = calloc(1, sizeof *rs);
    rtp_replica *r = calloc((size_t)n, sizeof *r);
    if (!bs || !rs || !r) {
        free(bs);
        free(rs);
        free(r);
        return RT_ERR(err, RT_ENOMEM, "out of memory creating the trainer");
    }
    bs[0] = rt_model_backend(m);
    for (int i = 0; i < n; i++) {
        bs[i + 1] = rt_model_backend(cfg->replicas[i]);
        if (!bs[i + 1]) {
            free(bs);
            free(rs);
            free(r);
            return RT_ERR(err, RT_EINVAL, "replica %d is not attached to a device", i + 1);
        }
    }
    rs->n = n;
    rs->r = r;
    rs->first_fail = -1;
    pthread_mutex_init(&rs->mu, NULL);
    pthread_cond_init(&rs->go, NULL);
    pthread_cond_init(&rs->done, NULL);
    rt_status s = rt_dist_group_create(&rs->g, bs, n + 1, err);
    free(bs);
    rt_trainer_config c = *cfg;
    c.replicas = NULL;
    c.nreplicas = 0;
    c.dist = rt_dist_group_rank(rs->g, 0);
    rt_trainer *t = NULL;
    if (s == RT_OK) s = rt_trainer_create(&t, m, train, &c, err);
    if (s != RT_OK) { /* no trainer owns rs yet */
        rt_dist_group_destroy(rs->g);
        pthread_mutex_destroy(&rs->mu);
        pthread_cond_destroy(&rs->go);
        pthread_cond_destroy(&rs->done);
        free(r);
        free(rs);
        return s;
    }
    t->rep = rs;
    c.progress = NULL;
    c.should_stop = NULL;
    c.time_limit_s = 0;
    for (int i = 0; i < n && s == RT_OK; i++) {
        c.dist = rt_dist_group_rank(rs->g, i + 1);
        r[i].rs = rs;
        s = rt_trainer_create(&r[i].t, cfg->replicas[i], train, &c, err);
        if (s == RT_OK && pthread_create(&r[i].th, NULL, replica_main, &r[i]) != 0)
            s = RT_ERR(err, RT_ENOMEM, "cannot start the thread of device %d", i + 1);
        else if (s == RT_OK) r[i].started = 1;
    }
    if (s != RT_OK) {
        rt_trainer_destroy(t);
        return s;
    }
    *out = t;
    return RT_OK;
}

void rtp_rep_destroy(rt_trainer *t)
{
    rtp_replicas *rs = t->rep;
    if (!rs) return;
    pthread_mutex_lock(&rs->mu);
    rs->quit = 1;
    pthread_cond_broadcast(&rs->go);
    pthread_mutex_unlock(&rs->mu);
    for (int i = 0; i < rs->n; i++) {
        if (rs->r[i].started) pthread_join(rs->r[i].th, NULL);
        rt_trainer_destroy(rs->r[i].t);
    }
    rt_dist_group_destroy(rs->g);
    pthread_mutex_destroy(&rs->mu);
    pthread_cond_destroy(&rs->go);
    pthread_cond_destroy(&rs->done);
    free(rs->r);
    free(rs);
    t->rep = NULL;
}

void rtp_rep_set_watch(rt_trainer *t)
{
    rtp_replicas *rs = t->rep;
    pthread_mutex_lock(&rs->mu); /* the replicas are between steps */
    for (int i = 0; i < rs->n; i++) rs->r[i].t->st.watch = t->st.watch;
    pthread_mutex_unlock(&rs->mu);
}

void rtp_rep_set_lr(rt_trainer *t, double lr)
{
    rtp_replicas *rs = t->rep;
    pthread_mutex_lock(&rs->mu); /* the replicas are between steps */
    for (int i = 0; i < rs->n; i++) rs->r[i].t->cfg.lr = lr;
    pthread_mutex_unlock(&rs->mu);
}

/* Rank 0's state, optimiser state and parameters to every replica (before begin, and
 * before a step when the caller changed them). */
static rt_status copy_to_replicas(rt_trainer *t, rt_error *err)
{
    rtp_replicas *rs = t->rep;
    rt_backend *b0 = rt_model_backend(t->m);
    rt_tensor *p0 = rt_model_params_flat(t->m);
    const size_t bytes = rt_tensor_bytes(p0);
    float *host = malloc(bytes ? bytes : 4);
    if (!host) return RT_ERR(err, RT_ENOMEM, "out of memory copying the parameters");
    rt_status s = rt_backend_download(b0, host, p0, bytes, err);
    for (int i = 0; i < rs->n && s == RT_OK; i++) {
        rt_trainer *c = rs->r[i].t;
        rt_backend *b = rt_model_backend(c->m);
        s = rt_backend_upload(b, rt_model_params_flat(c->m), host, bytes, err);
        if (s == RT_OK) s = rt_trainer_set_state(c, &t->st, err);
        for (int k = 0; k < 2 && s == RT_OK; k++) {
            size_t n0, n1;
            const float *from = rt_optim_state_slot(t->optim, k, &n0);
            float *to = rt_optim_state_slot(c->optim, k, &n1);
            if (from && to && n0 == n1) memcpy(to, from, n0 * sizeof *to);
        }
        if (s == RT_OK) s = rt_optim_set_step_count(c->optim, rt_optim_step_count(t->optim), err);
        if (s == RT_OK && c->dev) c->dev->upload_optim = 1;
    }
    free(host);
    return s;
}

rt_status rtp_rep_run(rt_trainer *t, rt_step_event *ev, rt_error *err)
{
    rtp_replicas *rs = t->rep;
    /* the host mirrors are newer than the device (a checkpoint load or capture) */
    if (!ev || (t->dev && t->dev->upload_optim)) RT_TRY(copy_to_replicas(t, err));
    pthread_mutex_lock(&rs->mu);
    rs->step = ev != NULL;
    rs->busy = rs->n;
    rs->first_fail = -1;
    rs->gen++;
    pthread_cond_broadcast(&rs->go);
    pthread_mutex_unlock(&rs->mu);
    rt_error own = {0};
    rt_status s = ev ? rtp_trainer_step_own(t, ev, &own) : rtp_trainer_begin_own(t, &own);
    if (s != RT_OK) note_failure(rs, 0);
    pthread_mutex_lock(&rs->mu);
    while (rs->busy > 0) pthread_cond_wait(&rs->done, &rs->mu);
    const int first = rs->first_fail;
    pthread_mutex_unlock(&rs->mu);
    if (first < 0) return RT_OK;
    if (first == 0) {
        if (err) *err = own;
        return s;
    }
    const rtp_replica *r = &rs->r[first - 1];
    rt_backend *b = rt_model_backend(r->t->m);
    return RT_ERR(err, r->st, "%s:%d (device %d of %d): %s", b->ops->name, b->device, first,
                  rs->n + 1, r->err.msg);
}
