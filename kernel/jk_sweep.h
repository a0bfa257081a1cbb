/* jk_sweep.h - `kiln sweep`: the pieces shared between its files.
 *   jk_sweep.c         options, the variants (grid or random), the parameter check, main
 *   jk_sweep_plan.c    placement: devices, parallel slots, threads and cores per slot
 *   jk_sweep_exec.c    child `kiln run` processes, their states, signals, halving rungs
 *   jk_sweep_report.c  the results store read back: summary table, summary.csv, .svg
 *   jk_sweep_store.c   DIR at an s3:// URL: the local staging copy and its uploads
 * docs/sweeps.md describes what a user sees. */
#ifndef JK_SWEEP_H
#define JK_SWEEP_H

#include <sched.h>
#include <stdint.h>
#include <sys/types.h>

#define JK_SWEEP_MAX_PARAMS 16
#define JK_SWEEP_MAX_SLOTS 256
#define JK_SWEEP_PATH 4096

typedef enum {
    JK_V_PENDING = 0, /* not run yet (or to be continued) */
    JK_V_RUNNING,
    JK_V_FINISHED, /* its notebook ran to the end */
    JK_V_PAUSED,   /* stopped at a halving rung, checkpointed, may continue */
    JK_V_PRUNED,   /* stopped at a rung for good: not among the best */
    JK_V_FAILED,   /* a cell raised, or the process died */
    JK_V_INTERRUPTED
} jk_variant_state;

const char *jk_sweep_state_name(jk_variant_state s);
/* -1 when name is no state's */
int jk_sweep_state_parse(const char *name);

typedef struct jk_variant {
    char name[256];                    /* lr=0.003,model=resnet20 (file-safe) */
    char *values[JK_SWEEP_MAX_PARAMS]; /* as given to kiln run -p, in -p order */
    char dir[JK_SWEEP_PATH];           /* DIR/<name>: on this machine */
    char where[JK_SWEEP_PATH];         /* DIR/<name> as given: the URL's for s3:// */
    jk_variant_state state;
    int rung;       /* PAUSED/PRUNED: the epoch it stopped after */
    int exit_code;  /* of the last process (-signal when killed) */
    pid_t pid;      /* RUNNING */
    int slot;       /* RUNNING: the slot it holds */
    int64_t run_id; /* its results-store row (0: not found) */
    double metric;  /* the monitored metric's best value (NaN: none) */
} jk_variant;

typedef struct jk_slot {
    char device[32]; /* "cpu" or "cuda:K" */
    int threads;
    int ncores;
    int cores[JK_SWEEP_MAX_SLOTS]; /* the CPUs it is pinned to (ncores 0: not pinned) */
    int busy;
} jk_slot;

typedef struct jk_sweep {
    /* options */
    const char *notebook, *dir, *name, *metric, *results, *devices;
    int parallel, random_k, halving, eta, first_rung, dry_run;
    uint64_t seed;
    int nparams;
    const char *pnames[JK_SWEEP_MAX_PARAMS];
    const char *pspecs[JK_SWEEP_MAX_PARAMS];
    /* derived */
    char exe[JK_SWEEP_PATH];   /* this kiln binary */
    char store[JK_SWEEP_PATH]; /* the results store every variant writes */
    /* -o s3://...: url is it, dir the local staging copy (local), s the store */
    const char *url;
    char local[JK_SWEEP_PATH];
    struct rt_store *s;
    char *prefix;     /* the URL's key prefix ("" for a bucket) */
    int metric_lower; /* 1 when lower is better (a loss) */
    jk_variant *v;
    int nv;
    jk_slot slots[JK_SWEEP_MAX_SLOTS];
    int nslots;
} jk_sweep;

/* jk_sweep_plan.c: fills sw->slots from --devices and --parallel. 0, or -1 after
 * printing why. */
int jk_sweep_plan(jk_sweep *sw);

/* jk_sweep_exec.c: reads each variant's saved state (DIR/<v>/status.json), then runs
 * what is left (halving: rung by rung). 0 when it ran to its end, else the signal
 * number that stopped it. */
int jk_sweep_exec(jk_sweep *sw);
/* Writes DIR/<v>/status.json for v. */
void jk_sweep_save_state(const jk_sweep *sw, const jk_variant *v);

/* jk_sweep_report.c: finds each variant's results-store row and its metric (run_id,
 * metric); 0, or -1 when the store cannot be read (said on stderr). upto > 0: the
 * metric's best over epochs 1..upto only (a halving rung's ranking: a variant that ran
 * past the rung before is not ranked by its later epochs). */
int jk_sweep_collect(jk_sweep *sw);
int jk_sweep_collect_upto(jk_sweep *sw, int upto);
/* The summary: printed, DIR/summary.csv and DIR/summary.svg. 0 or -1. */
int jk_sweep_report(jk_sweep *sw);

/* jk_sweep_store.c, for -o s3://BUCKET/PREFIX (each a no-op for a local DIR):
 * open checks the store (a wrong key, a missing bucket, a bad endpoint: -1, said on
 * stderr) and, unless check_only, makes the staging directory the sweep's local DIR
 * and points every variant's run directory and notebook at the URL. put uploads
 * DIR/rel to PREFIX/rel (a failure is said, not fatal: the next put tries again); get
 * downloads PREFIX/rel to DIR/rel: 0, 1 when the store has no such object, -1. */
int jk_sweep_store_open(jk_sweep *sw, int check_only);
void jk_sweep_store_put(const jk_sweep *sw, const char *rel);
int jk_sweep_store_get(const jk_sweep *sw, const char *rel);
void jk_sweep_store_close(jk_sweep *sw);

#endif
