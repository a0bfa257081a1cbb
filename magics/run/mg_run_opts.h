/* mg_run_opts.h - the %train options of a run: mg_run_opts, the option table that
 * drives parsing, defaults, bounds, help, completion and the JSON of checkpoints and the
 * results store (mg_train_table.c, mg_run_opts.c). The run (mg_run.h) and its
 * checkpoints (mg_ckpt.h) both read them; this header needs neither.
 */
#ifndef MG_RUN_OPTS_H
#define MG_RUN_OPTS_H

#include <stdint.h>

#include "mg.h"
#include "rt.h"

/* --checkpoint-every: "500steps" / "500" (steps), "10m" / "90s" / "1h30m" (time),
 * "1epoch" / "2epochs". */
typedef enum { MG_EVERY_NONE = 0, MG_EVERY_STEPS, MG_EVERY_SECONDS, MG_EVERY_EPOCHS } mg_every_unit;
typedef struct mg_every {
    mg_every_unit unit;
    double n; /* steps, seconds or epochs (> 0 unless NONE) */
} mg_every;

/* Every %train option (each field is one row of mg_train_table, mg_train_table.c,
 * except model, schedule_resolved, checkpoint_every, init_done, init_model and
 * resume_run_id). Strings are ""
 * when not given. */
typedef struct mg_run_opts {
    char model[64];              /* MODEL (positional); "" = the model defined last */
    char data[256];              /* --data NAME/PATH; "" = the data set loaded last */
    int epochs;                  /* --epochs (1) */
    int batch;                   /* --batch (64) */
    double lr;                   /* --lr (0.001) */
    char optimizer[16];          /* --optimizer adam|sgd|adamw ("adam") */
    double momentum;             /* --momentum (SGD; 0.9 when sgd and not given, else 0) */
    double weight_decay;         /* --weight-decay; NAN = the optimiser's default */
    int nesterov;                /* --nesterov (flag) */
    char schedule[256];          /* --schedule text (rt_schedule.h); "constant" */
    char schedule_resolved[256]; /* a continued run: the schedule fixed to its first plan
                                    (rt_schedule_format), used instead of schedule; "" */
    uint64_t seed;               /* --seed (0) */
    char device[32];             /* --device auto|cpu|cuda|cuda:N|cuda:N,M,..|cuda:all ("auto") */
    char precision[8];           /* --precision fp32|bf16|fp16 ("fp32"; GPU only for bf16/fp16) */
    char run_dir[1024];          /* --run-dir DIR; "" = no run directory */
    mg_every checkpoint_every;   /* --checkpoint-every (NONE; RESUME: 1 epoch with --run-dir) */
    char checkpoint_every_text[32];
    int keep;               /* --keep N newest checkpoints (3) */
    double time_limit_s;    /* --time-limit 8h30m (0 = none) */
    char results[1024];     /* --results PATH/URL; "" = KILN_RESULTS or the default */
    char augment_spec[64];  /* --augment [SPEC] (rt_augment.h): "none" (not given), "" (the
                               flag alone: the data set's default) or the SPEC */
    int accumulate;         /* --accumulate K micro-batches an update (1) */
    double clip_grad;       /* --clip-grad NORM (0 = off) */
    double clip_value;      /* --clip-value V (0 = off) */
    double label_smoothing; /* --label-smoothing EPS (0) */
    char normalize[128];    /* --normalize MEAN,STD text; "" = the data set's statistics */
    int early_stop;         /* --early-stop PATIENCE epochs without improvement (0 = off) */
    char monitor[16];       /* --monitor: the metric of early stopping, plateau and the best
                              checkpoint ("val_loss"; rt_early_stop.h) */
    double min_delta;       /* --min-delta: an improvement is more than this (0) */
    int restore_best;       /* --restore-best (flag): end with the best epoch's weights */
    int background;         /* --background (flag): trained by a kiln run of its own */
    int val;                /* --val N: validation images carved from train; -1 = as the
                                data set was loaded by %dataset */
    char name[64];          /* --name: run name in the results store ("" = model name) */
    char init[1024];        /* --init SOURCE: a run directory, a checkpoint or a
                               .safetensors state_dict to start from ("" = the seed) */
    int init_strict;        /* --init-strict (flag): a tensor not matched is an error */
    char freeze[512];       /* --freeze PREFIX,...|until:LAYER|body ("" = none) */
    char lr_mult[512];      /* --lr-mult PREFIX=F,... ("" = none) */
    int init_done;          /* a continued run: its checkpoint holds the weights, --init
                               is not read again (not an option) */
    char init_model[64];    /* %fine_tune: start from this workspace model's trained
                               weights instead of --init's file (not an option) */
    int64_t resume_run_id;  /* %resume: results-store run to continue (0 = a new run) */
    int resume;             /* --resume: an mg_resume_mode; -1 = the session's default */
} mg_run_opts;

/* ---- the %train option table (mg_train_table.c) ----
 * One row per option drives everything about it: parsing and the bounds check
 * (mg_run_opts_from_args, one message: "%train: --lr must be in (0, 100], got 500"),
 * the default (mg_run_opts_default), the help line and its "(default)", completion,
 * the checkpoint / results-store JSON (mg_run_opts_to_json / _from_json, which checks
 * the same bounds) and whether a run directory's run may continue under other values
 * (mg_run_opts_differences, for --resume auto and sweeps). A new option is a row here
 * plus its use in the trainer (docs/architecture.md, "A %train option"). */

/* How an option's value is kept in mg_run_opts. */
typedef enum {
    MG_TO_INT,      /* int */
    MG_TO_U64,      /* uint64_t */
    MG_TO_REAL,     /* double */
    MG_TO_TEXT,     /* char[size] */
    MG_TO_FLAG,     /* int, 1 when given */
    MG_TO_CHOICE,   /* int: the index of the value among opt.choices */
    MG_TO_DURATION, /* double seconds, typed as 8h30m / 45m / 90s */
    MG_TO_EVERY,    /* char[size] text, and the mg_every it means at parsed */
} mg_train_store;

enum {
    MG_TO_DEFINING = 1u, /* run-defining: a run continues only under an equal value */
    MG_TO_AT_LEAST = 2u, /* run-defining, but a larger typed value continues it too
                            (--epochs: trains it longer) */
    MG_TO_DATA = 4u,     /* defines the data set: compared through the data set's own
                            record (source, split), not here */
    MG_TO_OPEN_MIN = 8u, /* min itself is out of bounds (> min) */
    MG_TO_OPEN_MAX = 16u,
    MG_TO_REDACT = 32u, /* stored and shown without credentials (rt_results_redact) */
};

typedef struct mg_train_option {
    mg_option opt;        /* name, kind, metavar, help (without the default), choices */
    mg_train_store store; /* the field's type */
    size_t offset;        /* of the field in mg_run_opts */
    size_t size;          /* TEXT / EVERY: the char array's size */
    const char *key;      /* JSON key in checkpoints and the results store; NULL = none */
    double def;           /* the default of a number, flag or choice (index); NAN = not
                             set (not stored, never checked: the trainer decides) */
    const char *def_text; /* the default of TEXT / EVERY */
    const char *shown;    /* the help's "(default)" when the value alone does not say */
    double lo, hi;        /* a number's bounds (INT U64 REAL); lo < hi, else unchecked;
                             hi = INFINITY: no upper bound. The default always passes. */
    unsigned flags;       /* MG_TO_* */
    /* the value that acts, for the resume comparison (--momentum: 0.9 with sgd when
     * not given), NAN where it does not apply (then not compared); NULL = the field */
    double (*effective)(const mg_run_opts *o);
    size_t parsed; /* EVERY: offset of the mg_every read from the text */
    /* A TEXT value's own syntax check (--augment, --normalize), run with the bounds
     * check on typed and stored values; an error names who and the option. NULL: none */
    int (*check)(const mg_run_opts *o, const char *who, mg_error *err);
    /* A flag that has since taken a value, read from a record that stored it as true:
     * the value it meant then (--augment: crop:4,flip); NULL: alone */
    const char *legacy_true;
} mg_train_option;

/* The rows, terminated by one whose opt.name is NULL. The command reads them as its
 * options: mg_command.options = &mg_train_table[0].opt, option_size = sizeof a row. */
extern const mg_train_option mg_train_table[];
/* The row of an option name ("--lr"), or NULL. */
const mg_train_option *mg_train_option_find(const char *name);
/* The help's default note of a %train option (mg_command.option_default). */
const char *mg_train_option_default(const mg_option *o, char *buf, size_t n);
/* The value of row's field in o as the user would type it ("0.001", "on"/"off" for a
 * flag, "8h30m"...) into buf. */
const char *mg_train_option_format(const mg_train_option *row, const mg_run_opts *o, char *buf,
                                   size_t n);
/* Appends " --opt TYPED (checkpoint STORED)" to buf for every run-defining option
 * (MG_TO_DEFINING, not MG_TO_DATA) whose value in typed differs from stored's (an
 * MG_TO_AT_LEAST one only when typed is smaller). Returns how many differ. */
int mg_run_opts_differences(const mg_run_opts *typed, const mg_run_opts *stored, char *buf,
                            size_t n);

void mg_run_opts_default(mg_run_opts *o);
/* Reads MODEL and every option of args into o (on top of what o holds); errors name
 * the option ("%train: --lr: 'abc' is not a number"). */
RT_MUST_USE int mg_run_opts_from_args(mg_run_opts *o, const mg_args *args, mg_error *err);
/* The same for another magic that takes some of %train's options (%lr_find): args may
 * hold options of its own (not read here); errors name `who` ("%lr_find"). */
RT_MUST_USE int mg_run_opts_from_args_as(mg_run_opts *o, const mg_args *args, const char *who,
                                         mg_error *err);
/* Every value of o inside its row's bounds and syntax (the default always is); else
 * a ValueError "<who>: --lr must be in (0, 100], got 500". */
RT_MUST_USE int mg_run_opts_check(const mg_run_opts *o, const char *who, mg_error *err);
RT_MUST_USE int mg_run_parse_every(const char *text, mg_every *out, mg_error *err);
/* "8h30m", "90s", "45m", "2h", "1.5h", "3600" (seconds) -> seconds. */
RT_MUST_USE int mg_run_parse_duration(const char *text, double *seconds, mg_error *err);
/* The hyperparameters as a JSON object (new ref), for checkpoint metadata and the
 * results store; mg_run_opts_from_json reads it back (unknown keys are ignored). */
json_t *mg_run_opts_to_json(const mg_run_opts *o);
RT_MUST_USE int mg_run_opts_from_json(mg_run_opts *o, const json_t *j, mg_error *err);

/* --lr-mult "PREFIX=F,PREFIX=F": the pairs into prefix/factor (at most max; *n set).
 * Errors name who and the option. */
#define MG_LR_MULT_MAX 32
RT_MUST_USE int mg_run_parse_lr_mult(const char *text, const char *who, char (*prefix)[128],
                                     double *factor, int max, int *n, mg_error *err);
/* --freeze's syntax: "body", "until:LAYER" or PREFIX[,PREFIX...]. */
RT_MUST_USE int mg_run_check_freeze(const char *text, const char *who, mg_error *err);
/* One comma-separated item of the list at *p into buf (cut to n), *p past it; 0 at the
 * end of the list. */
int mg_run_next_item(const char **p, char *buf, size_t n);

#endif
