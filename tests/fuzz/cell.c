/* cell.c - fuzz target: the cell engine (kl_engine_execute: lexer, parser,
 * evaluator, builtins, f-strings/format, form annotations, magic dispatch and
 * argument parsing) on arbitrary code, with an output sink that drops everything and
 * has only a stream and a result, as a minimal frontend's.
 *
 * What is kept out, so a fuzzer never runs commands or touches files: inputs with a
 * line starting with `!` (shell), and inputs whose line magics / cell magics are not
 * in the allow-list below (the others touch the filesystem, the network or the
 * process: %cd, %env, %results, %dataset, %train, ...). %time / %%time run their
 * argument as code, so that argument is checked as a line too. A watchdog sets the
 * engine's interrupt flag after a moment, so code that computes for long ends with
 * KeyboardInterrupt like it would in a kernel, instead of a fuzzer timeout.
 * Then is_complete, complete, inspect, user_expressions and the `kiln run -p` literal
 * parser run on the same text.
 * Input: the cell's text (up to the first NUL). Invariants: a failed cell has an
 * ename, a traceback and a valid UTF-8 evalue; the engine stays usable (a second cell
 * runs); a literal's repr parses back to an equal value. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "fz.h"
#include "kl.h"

static const char *const allowed[] = {"lsmagic", "who", "time", "html", "clear", "pwd", NULL};

static void sink_stream(void *u, const char *name, const char *text, size_t len)
{
    (void)u, (void)name, (void)text, (void)len;
}
static void sink_result(void *u, json_t *data, json_t *meta) { (void)u, (void)data, (void)meta; }

/* no display and no clear: the engine fills what a frontend leaves out
 * (mg_out_complete), which the corpus's %html input checks */
static const mg_out sink = {.stream = sink_stream, .result = sink_result};

/* 1 when the line (from p up to its end) is safe to run. */
static int line_ok(const char *p, const char *end)
{
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\f' || *p == '\v')) p++;
        if (p < end && *p == '!') return 0;
        if (p >= end || *p != '%') return 1;
        while (p < end && *p == '%') p++;
        const char *n = p;
        while (p < end && (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                           (*p >= '0' && *p <= '9')))
            p++;
        int ok = 0;
        for (int i = 0; allowed[i]; i++)
            if ((size_t)(p - n) == strlen(allowed[i]) && !memcmp(n, allowed[i], (size_t)(p - n)))
                ok = 1;
        if (!ok) return 0;
        if (!((size_t)(p - n) == 4 && !memcmp(n, "time", 4))) return 1;
        /* %time CODE: CODE is a line too */
    }
}

static int code_ok(const char *code)
{
    for (const char *p = code; p;) {
        const char *nl = strchr(p, '\n');
        const char *end = nl ? nl : p + strlen(p);
        if (!line_ok(p, end)) return 0;
        p = nl ? nl + 1 : NULL;
    }
    return 1;
}

typedef struct watchdog {
    atomic_int *flag;
    atomic_int done;
} watchdog;

static void *watch(void *arg)
{
    watchdog *w = arg;
    struct timespec tick = {0, 2 * 1000 * 1000}; /* 2 ms */
    for (int i = 0; i < 250 && !atomic_load(&w->done); i++) nanosleep(&tick, NULL);
    if (!atomic_load(&w->done)) atomic_store(w->flag, 1); /* after 0.5 s */
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *code = fz_strdup(data, size);
    if (!code) return 0;
    if (!code_ok(code)) {
        free(code);
        return -1; /* not added to the corpus */
    }
    atomic_int interrupt = 0;
    kl_engine *e = kl_engine_create(&interrupt);
    FZ_CHECK(e != NULL);
    watchdog w = {.flag = &interrupt};
    pthread_t th;
    int have_thread = pthread_create(&th, NULL, watch, &w) == 0;
    kl_error err;
    if (kl_engine_execute(e, code, &sink, NULL, &err) < 0) {
        FZ_CHECK(err.ename[0] != '\0' && json_is_array(err.traceback));
        json_t *ev = json_string(err.evalue); /* NULL when not valid UTF-8 */
        FZ_CHECK(ev != NULL);
        json_decref(ev);
        kl_error_deinit(&err);
    }
    atomic_store(&interrupt, 0);
    if (kl_engine_execute(e, "x__ = 1 + 1\nx__", &sink, NULL, &err) < 0) {
        /* only an interrupt that arrived just now may stop it */
        FZ_CHECK(!strcmp(err.ename, "KeyboardInterrupt"));
        kl_error_deinit(&err);
    }
    atomic_store(&w.done, 1);
    if (have_thread) pthread_join(th, NULL);
    /* completion and inspection on the same text */
    json_decref(kl_engine_complete(e, code, (int)(size % 64)));
    json_decref(kl_engine_inspect(e, code, (int)(size % 64), 1));
    const char *indent;
    (void)kl_engine_is_complete(e, code, &indent);
    /* user_expressions and the `kiln run -p` literal parser on the same text */
    json_t *ue = kl_engine_eval_expression(e, code);
    FZ_CHECK(ue == NULL || json_is_object(ue));
    json_decref(ue);
    json_t *lit = kl_literal_parse(code);
    if (lit) {
        char *repr = kl_value_repr(lit);
        FZ_CHECK(repr != NULL);
        /* a literal's repr reads back as the same value */
        json_t *back = kl_literal_parse(repr);
        FZ_CHECK(back != NULL && json_equal(back, lit));
        json_decref(back);
        free(repr);
        json_decref(lit);
    }
    kl_engine_destroy(e);
    free(code);
    return 0;
}
