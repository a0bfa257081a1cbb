/* mg.h - the public face of magics/: the output API, the host interface a magic
 * calls back into, the magic command table and the shared argument parser.
 *
 * magics/ knows nothing about ZeroMQ or the wire: everything a magic shows goes
 * through an mg_out (the kernel's IOPub publisher is one implementation, the
 * `kiln run` notebook writer another). Everything a magic needs from the cell
 * language (variables, running a cell body, the interrupt flag) comes through
 * mg_host. Long-lived state a magic keeps between cells (models, data sets, the
 * last run) lives in the mg_session slots, owned by the engine - no globals.
 *
 * JSON ownership follows jansson: "borrowed" arguments are not kept; "stolen"
 * ones are released by the callee.
 */
#ifndef MG_H
#define MG_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "rt_error.h" /* RT_MUST_USE */

/* ---- output ---- */

typedef struct mg_out {
    void *user;
    /* Text on "stdout" or "stderr". */
    void (*stream)(void *user, const char *name, const char *text, size_t len);
    /* A display_data: data is a MIME bundle {"text/plain": ..., "image/png": <base64>, ...}
     * (borrowed); metadata may be NULL. display_id may be NULL; with update != 0 the
     * display with that id is replaced in place (update_display_data). */
    void (*display)(void *user, json_t *data, json_t *metadata, const char *display_id, int update);
    /* The value of a cell's trailing expression (execute_result), borrowed bundle. */
    void (*result)(void *user, json_t *data, json_t *metadata);
    /* clear_output; wait != 0 clears when the next output arrives. */
    void (*clear)(void *user, int wait);
    /* Comms (widgets): send comm_open / comm_msg / comm_close from the kernel.
     * data and metadata are borrowed. May be NULL where a frontend has no comms
     * (kiln run): callers must check and fall back to plain displays. */
    void (*comm_open)(void *user, const char *comm_id, const char *target_name, json_t *data,
                      json_t *metadata);
    void (*comm_msg)(void *user, const char *comm_id, json_t *data, json_t *metadata);
    void (*comm_close)(void *user, const char *comm_id, json_t *data);
    /* Asks the frontend for a line of input (input_request on stdin). Returns a new
     * string (free()) or NULL when the frontend does not allow stdin or the request
     * was interrupted. May itself be NULL. */
    char *(*input)(void *user, const char *prompt, int password);
    /* A copy of this output that stays valid after the cell returns, for a helper
     * thread that updates a display the cell showed (stream and display only; any
     * thread). NULL where outputs cannot outlive their cell (kiln run); may itself be
     * NULL. The copy is freed by its own release. */
    struct mg_out *(*detach)(void *user);
    void (*release)(struct mg_out *self);
} mg_out;

/* The one place mg_out's optional callbacks are checked: buf becomes a copy of in
 * (NULL: none) whose missing stream, display, result and clear drop their output, so
 * that code given the result calls them without checking. comm_* and input stay as
 * they are (NULL means the frontend has none; callers check and fall back). Returns
 * buf. The cell engine passes every mg_out through it before a magic or a form sees
 * it. */
const mg_out *mg_out_complete(const mg_out *in, mg_out *buf);

/* Convenience wrappers: printf-style stream output, plain text display. */
void mg_printf(const mg_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mg_eprintf(const mg_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Displays text/plain + text/html as one output and frees both; 0 when shown, -1 when
 * either is NULL (an out-of-memory while building them) or the bundle cannot be made. */
RT_MUST_USE int mg_display_text_html(const mg_out *out, char *text, char *html);

/* ---- errors ----
 * One rule for the exception a magic raises: a line that cannot be read (an unknown
 * option, a missing value, stray words, an open quote) is a UsageError; a value that an
 * option cannot take (not a number, out of range, not one of the choices, too long) is a
 * ValueError; a runtime failure raises its status's exception (mg_fail_status). */

typedef struct mg_error {
    char ename[64];    /* "UsageError", "ValueError", "KeyboardInterrupt", ... */
    char evalue[1024]; /* one line, names the magic and the option at fault; a cell
                          magic's error about a line of its body says "cell line N: "
                          (the body's first line is cell line 2), and the engine's
                          traceback then points at that line */
} mg_error;

/* Fills err and returns -1, so `return mg_fail(err, ...)` reads naturally. Not for a
 * runtime failure (an rt_error): that is mg_fail_status's, and the lint suite fails on an
 * mg_fail that carries an rt_error's message. */
int mg_fail(mg_error *err, const char *ename, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fills err from a runtime failure: the exception name is rt_status_exception(re->code)
 * (rt_error.h: the one table from status to exception), the message is fmt's. Every
 * magic reports a runtime status this way. re may be NULL (RuntimeError). */
struct rt_error;
int mg_fail_status(mg_error *err, const struct rt_error *re, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- session state (per engine; replaces globals) ---- */

typedef struct mg_session mg_session;
mg_session *mg_session_create(void);
void mg_session_destroy(mg_session *s); /* runs every slot's destructor; accepts NULL */
/* Borrowed pointer stored under key, or NULL. */
void *mg_session_get(mg_session *s, const char *key);
/* Stores ptr under key (taking ownership; the previous value's destructor runs). */
RT_MUST_USE int mg_session_set(mg_session *s, const char *key, void *ptr, void (*destroy)(void *));

/* ---- host: what the cell language offers to magics ---- */

typedef struct mg_host {
    void *user;
    /* Variables of the cell language, as JSON values (int, real, string, bool, null,
     * array, object). get returns a borrowed ref or NULL; set steals value. */
    json_t *(*var_get)(void *user, const char *name);
    int (*var_set)(void *user, const char *name, json_t *value);
    /* New ref: array of variable names in definition order. */
    json_t *(*var_names)(void *user);
    /* The Python type name of a variable's value ("int", "str", "NoneType", ...), as the
     * cell language's type() says it (static string). */
    const char *(*type_name)(void *user, json_t *value);
    /* Runs code as a cell (for %%time); returns 0 or -1 with err filled. */
    int (*run_cell)(void *user, const char *code, const mg_out *out, mg_error *err);
    /* Non-zero once an interrupt has been requested for the running cell. */
    int (*interrupted)(void *user);
} mg_host;

/* ---- the context a magic runs in ---- */

/* %train's resume rule (--resume): continue a run directory's run when its options
 * match (AUTO), always start a new run (NEVER), or insist on continuing (MUST). */
typedef enum { MG_RESUME_AUTO = 0, MG_RESUME_NEVER, MG_RESUME_MUST } mg_resume_mode;

/* How the host runs magics, fixed for the engine's life (set by `kiln run` options
 * and the kernel's command line; all zero = the defaults). */
typedef struct mg_settings {
    mg_resume_mode train_resume; /* %train's --resume when not given (`kiln run
                                    --no-resume`: MG_RESUME_NEVER) */
    int device_path;             /* %train on the CPU takes the trainer's device path
                                    (what a GPU runs; `kiln kernel --device-path`), so
                                    that path is checked on machines without a GPU */
    /* Overrides of every %train, for `kiln run` under `kiln sweep` (NULL / 0: what the
     * notebook says). Strings are borrowed for the engine's life. */
    const char *run_dir;     /* --run-dir */
    const char *results;     /* --results */
    const char *device;      /* --device */
    int threads;             /* CPU threads of the backend (0: all the cores) */
    int stop_epoch;          /* stop (checkpointed, not an error) after this epoch */
    const char *const *tags; /* KEY=VALUE parameters added to each run's record */
    int ntags;
} mg_settings;

typedef struct mg_ctx {
    const mg_out *out;
    const mg_host *host;
    mg_session *session;
    json_t *cell_metadata;       /* borrowed request metadata (JupyterLab's cellId), may be NULL */
    const mg_settings *settings; /* may be NULL: the defaults */
} mg_ctx;

/* ---- arguments ---- */

typedef enum { MG_OPT_FLAG, MG_OPT_STRING, MG_OPT_INT, MG_OPT_FLOAT, MG_OPT_CHOICE } mg_opt_kind;

typedef struct mg_option {
    const char *name; /* "--epochs" */
    mg_opt_kind kind;
    const char *metavar; /* "N" */
    const char *help;    /* one line */
    const char *choices; /* MG_OPT_CHOICE: "adam|sgd|adamw". MG_OPT_FLAG: NULL, or the
                            starts of the value a flag may take ("crop:|flip|none"):
                            `--opt=V`, or the next word when its first comma-separated
                            item starts with one of them (else the flag stands alone and
                            its value is "") */
} mg_option;

#define MG_MAX_ARGS 64
typedef struct mg_args {
    int npos;
    char *pos[MG_MAX_ARGS]; /* positional words, in order */
    int nopt;
    const mg_option *opt[MG_MAX_ARGS];
    char *val[MG_MAX_ARGS]; /* option values ("" for flags) */
    const char *body;       /* cell magic body (after the first line), or NULL */
    char *storage;          /* owns all strings above */
    const char *raw;        /* the whole argument string as the magic got it
                                      (borrowed from the caller; for MG_RAW_ARGS) */
} mg_args;

/* ---- the command table ---- */

/* MG_NO_VAR_EXPAND: the engine passes the arguments as typed, without $name/{expr}
 * interpolation. MG_RAW_ARGS: no option parsing either; the magic reads args->raw
 * (both for magics whose argument is code, like %time). */
enum { MG_LINE = 1u, MG_CELL = 2u, MG_LONG_RUNNING = 4u, MG_NO_VAR_EXPAND = 8u, MG_RAW_ARGS = 16u };

typedef struct mg_command {
    const char *name;         /* without %: "train" */
    const char *summary;      /* one line for %lsmagic */
    const char *usage;        /* full help text: usage line, description, examples */
    unsigned flags;           /* MG_LINE | MG_CELL | MG_LONG_RUNNING */
    const mg_option *options; /* terminated by {NULL}; may be NULL */
    int (*run)(mg_ctx *ctx, const mg_args *args, mg_error *err);
    const char *positional; /* "a|b": what the first word may be, for completion
                                   (besides paths); may be NULL */
    /* A magic whose options are rows of a larger struct that begins with its mg_option
     * (%train's mg_train_option): the size of one row (0 = sizeof(mg_option)), and the
     * help's "(default)" note of an option (NULL or "" = none); both may be 0/NULL. */
    size_t option_size;
    const char *(*option_default)(const mg_option *o, char *buf, size_t n);
} mg_command;

/* The option after o in cmd's table (for (o = cmd->options; o && o->name; o =
 * mg_option_next(cmd, o))). */
static inline const mg_option *mg_option_next(const mg_command *cmd, const mg_option *o)
{
    return (const mg_option *)(const void *)((const char *)o +
                                             (cmd->option_size ? cmd->option_size : sizeof *o));
}

/* The registry: every magic Kiln ships, in one static table (magics/mg_registry.c). */
const mg_command *mg_registry_find(const char *name);
const mg_command *const *mg_registry_all(size_t *n);
/* The magic whose name is closest to a mistyped one ("trian" -> "train"), or NULL when
 * none is close (for "did you mean"). */
const char *mg_registry_suggest(const char *name);
/* Levenshtein distance of two short strings (99 past 40 characters). */
size_t mg_edit_distance(const char *a, const char *b);

/* Parses a magic's argument string (already interpolated) against its option table.
 * Shell-like words: quotes and backslashes; `--opt=value` and `--opt value`.
 * Unknown options, missing values and bad numbers are errors naming the option.
 * On success returns 0 and args must be released with mg_args_deinit. */
RT_MUST_USE int mg_args_parse(const mg_command *cmd, const char *line, const char *body,
                              mg_args *args, mg_error *err);
void mg_args_deinit(mg_args *args);
/* Borrowed value of an option, or NULL when absent. */
const char *mg_args_get(const mg_args *args, const char *name);
int mg_args_has(const mg_args *args, const char *name);
/* Typed getters: 0 with *out set (def when absent), -1 with err naming the option. */
RT_MUST_USE int mg_args_int(const mg_args *args, const char *name, long def, long *out,
                            mg_error *err);
RT_MUST_USE int mg_args_float(const mg_args *args, const char *name, double def, double *out,
                              mg_error *err);
/* 1 when the argument string asks for help (a `--help` or `-h` word outside quotes). */
int mg_args_wants_help(const char *line);
/* Prints the magic's usage and option table (for --help and NAME?). New string; free(). */
char *mg_command_help(const mg_command *cmd);

/* The HTML-escaped copy of s (& < > " ' as entities), for text and attribute values.
 * New string (free()); NULL on no memory. _n: the first n bytes of s. mg_escape.c. */
char *mg_html_escape(const char *s);
char *mg_html_escape_n(const char *s, size_t n);
/* Writes s to f escaped the same way, for HTML and for SVG (XML): C0 control characters
 * other than tab and line ends, which XML cannot hold, are left out. */
void mg_html_put(FILE *f, const char *s);

/* One line naming the CUDA toolkit and GPU architectures this build has, or that it
 * has none (`kiln --version`; magics/mg_registry.c). Static storage. */
const char *mg_device_build_info(void);

#endif
