/* kl.h - the cell engine: Kiln's small Python-compatible cell language, magics
 * dispatch, `!command`, `NAME?`, completion and inspection.
 *
 * The engine is what both front ends drive: the Jupyter kernel (kernel/jk_*) and
 * the headless notebook runner (`kiln run`). It knows nothing about ZeroMQ: output
 * goes to an mg_out, and the interrupt arrives as an atomic flag the caller owns
 * (set by SIGINT or by interrupt_request; cleared by the caller before each cell).
 *
 * JSON return values are new references (caller json_decref's them).
 */
#ifndef KL_H
#define KL_H

#include <stdatomic.h>
#include <jansson.h>

#include "mg.h"

typedef struct kl_engine kl_engine;

/* An error raised by a cell, in Jupyter's terms. */
typedef struct kl_error {
    char ename[64]; /* "NameError", "SyntaxError", "UsageError", "KeyboardInterrupt" ... */
    char evalue[1024];
    json_t *traceback; /* new ref: array of strings (may contain ANSI colours), or NULL */
} kl_error;
void kl_error_deinit(kl_error *e); /* releases traceback; accepts NULL */

/* interrupt: borrowed; the engine polls it (never clears it). */
kl_engine *kl_engine_create(atomic_int *interrupt);
void kl_engine_destroy(kl_engine *e); /* accepts NULL */
/* The settings every magic of this engine sees (mg.h); zero = defaults. Set them
 * before the first cell runs. */
mg_settings *kl_engine_settings(kl_engine *e);

/* Runs one cell. Outputs (streams, displays, the trailing expression's value) go to
 * out. cell_metadata (borrowed, may be NULL) is the request's metadata.
 * Returns 0, or -1 with err filled (err->traceback a new ref). */
RT_MUST_USE int kl_engine_execute(kl_engine *e, const char *code, const mg_out *out,
                                  json_t *cell_metadata, kl_error *err);

/* "complete", "incomplete" or "invalid" (static string); *indent gets a suggested
 * indent for "incomplete" (static string, may be ""). */
const char *kl_engine_is_complete(kl_engine *e, const char *code, const char **indent);

/* {"matches": [...], "cursor_start": n, "cursor_end": n} for code at cursor_pos
 * (cursor_pos counts Unicode code points, as the protocol says). */
json_t *kl_engine_complete(kl_engine *e, const char *code, int cursor_pos);

/* A MIME bundle describing the name at cursor_pos (magic help, variable value),
 * or NULL when there is nothing to show. detail_level 0 or 1. */
json_t *kl_engine_inspect(kl_engine *e, const char *code, int cursor_pos, int detail_level);

/* Evaluates one expression for user_expressions: {"status":"ok","data":{...},"metadata":{}}
 * or {"status":"error","ename":...,"evalue":...,"traceback":[...]}. */
json_t *kl_engine_eval_expression(kl_engine *e, const char *expr);

/* The variable namespace, for `kiln run -p NAME VALUE` and the forms. get: borrowed. */
json_t *kl_engine_var_get(kl_engine *e, const char *name);
RT_MUST_USE int kl_engine_var_set(kl_engine *e, const char *name, json_t *value /* stolen */);

/* Incoming comm traffic from the frontend (widgets): the kernel's comm registry
 * forwards comm_open/comm_msg/comm_close content here. out carries any replies.
 * Returns 0 if a handler took it, -1 if the comm/target is unknown. */
int kl_engine_comm_msg(kl_engine *e, const char *msg_type, json_t *content, const mg_out *out);

/* Parses text as a literal of the cell language (numbers, strings, True/False/None,
 * lists, tuples and str-keyed dicts of literals, unary minus; blanks around it): new
 * ref, or NULL when it is not exactly one. Names, calls and operators are never
 * evaluated. (For `kiln run -p` and the forms; needs no engine: kl_syntax_dep.) */
json_t *kl_literal_parse(const char *text);
/* One number or quoted string at the start of s, read by the cell language's own
 * scanner (Python's quotes and escapes, int bases, floats; a + or - before a number):
 * new ref (integer, real or string) and *used its length in bytes, or NULL with why
 * (one line) when s does not start with one. For the forms' annotations. */
json_t *kl_literal_scan(const char *s, size_t *used, char *why, size_t why_len);
/* Python repr() of a value (NULL: None), as the engine prints it. New string; free(). */
char *kl_value_repr(const json_t *v);
/* Non-zero when s[0..n) is valid UTF-8 (no overlongs or surrogates; NUL is valid). */
int kl_utf8_valid(const char *s, size_t n);
/* A JSON string of s[0..n) that is always valid, whatever bytes a cell or a shell
 * command produced: NUL, invalid and cut-off sequences become U+FFFD. New ref; NULL
 * only when out of memory. */
json_t *kl_json_text(const char *s, size_t n);

/* Widget state of the forms shown so far (application/vnd.jupyter.widget-state+json),
 * new ref or NULL; `kiln run` stores it in the notebook metadata. */
json_t *kl_engine_widget_state(kl_engine *e);
/* After a form cell ran again with unchanged code: that code with the values set in the
 * form's widgets written in (what ran; new string, free()), for a set_next_input
 * payload; NULL otherwise. */
char *kl_engine_take_next_input(kl_engine *e);
/* Replaces each live form's display by its table of values (before the kernel exits,
 * so a saved notebook shows values, not a missing widget). Returns how many. */
int kl_engine_forms_fallback(kl_engine *e, const mg_out *out);
/* The forms to hand to the kernel after a restart (new ref, NULL when none), and
 * taking them in (borrowed; the number carried, -1 when doc is malformed). */
json_t *kl_engine_forms_carry(kl_engine *e);
int kl_engine_forms_carry_in(kl_engine *e, json_t *doc);

#endif
