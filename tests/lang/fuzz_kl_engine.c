/* fuzz_kl_engine.c - libFuzzer target for the cell engine (meson -Dfuzz=true, clang):
 * every input runs as a cell, then through is_complete, complete, inspect,
 * user_expressions and the -p literal parser. Errors must carry a traceback and a
 * valid UTF-8 evalue. '!' is replaced so that the fuzzer never runs shell commands.
 *   ./fuzz_kl_engine -max_len=400 -timeout=5 CORPUS_DIR */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kl.h"
static void s(void *u, const char *n, const char *t, size_t l)
{
    (void)u;
    (void)n;
    (void)t;
    (void)l;
}
static void r(void *u, json_t *d, json_t *m)
{
    (void)u;
    (void)m;
    if (!json_is_object(d)) abort();
}
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static kl_engine *e;
    static atomic_int intr;
    if (!e) e = kl_engine_create(&intr);
    char *code = malloc(size + 1);
    memcpy(code, data, size);
    code[size] = 0;
    /* keep shell commands out of the fuzz run */
    for (size_t i = 0; i < size; i++)
        if (code[i] == '!') code[i] = '?';
    mg_out o = {0};
    o.stream = s;
    o.result = r;
    kl_error err;
    if (kl_engine_execute(e, code, &o, NULL, &err) < 0) {
        if (!err.traceback) abort();
        json_t *ev = json_string(err.evalue);
        if (!ev) abort();
        json_decref(ev);
        kl_error_deinit(&err);
    }
    const char *ind;
    kl_engine_is_complete(e, code, &ind);
    json_decref(kl_engine_complete(e, code, (int)(size % 17)));
    json_decref(kl_engine_inspect(e, code, (int)(size % 13), 0));
    json_decref(kl_engine_eval_expression(e, code));
    json_decref(kl_literal_parse(code));
    free(code);
    return 0;
}
