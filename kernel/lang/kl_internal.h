/* kl_internal.h - private types of the cell engine, shared by the kernel/lang sources only.
 *
 * Pipeline for one cell: the lexer (kl_lex.c) turns UTF-8 source into tokens, the
 * parser (kl_parse*.c) builds an AST in a per-cell arena, the executor (kl_exec.c)
 * runs statements, evaluating expressions (kl_eval.c, kl_ops.c, kl_builtins.c) to
 * jansson values. Errors travel as a klp_err (name, message, line/column) and are
 * turned into a Jupyter error with a traceback by kl_error.c at the very end.
 *
 * The syntax half - kl_lex.c, kl_parse*.c, kl_fstr.c, kl_literal.c, kl_repr.c,
 * kl_utf8.c, kl_arena.c, kl_buf.c, kl_error.c - is the kl_syntax library (kernel/meson.build),
 * which kernel/forms and the wire code link without the engine: those files call
 * nothing of the engine's.
 *
 * Limits that keep hostile input from crashing the process live here as constants.
 */
#ifndef KL_INTERNAL_H
#define KL_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "kl.h"
#include "kl_buf.h"

#define KLP_MAX_DEPTH 200               /* AST nesting and value nesting limit */
#define KLP_MAX_ITEMS (1u << 21)        /* largest list an operation may create (~120 MB) */
#define KLP_MAX_STR (1u << 26)          /* largest str an operation may create (64 MiB) */
#define KLP_MAX_REPR (1u << 20)         /* repr output is cut after 1 MiB */
#define KLP_MAX_RUN_DEPTH 8             /* %%time nesting of run_cell */
#define KLP_BUDGET_DEFAULT (256u << 20) /* all values together (KILN_VALUE_BUDGET) */
#define KLP_BUDGET_MIN (1u << 20)
#define KLP_SZ_SCALAR 32 /* what an int or float value takes (budget estimate) */
#define KLP_SZ_SLOT 8    /* what one list slot takes */

/* ---- errors ---- */

typedef struct klp_err {
    char ename[64];
    char evalue[1024];
    int line, col, end_col; /* 1-based; 0 = unknown */
    int is_syntax;          /* SyntaxError-style report (caret under the column) */
    int set;
} klp_err;

int klp_fail(klp_err *e, int line, int col, const char *ename, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int klp_syntax(klp_err *e, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* klp_fail with "<what><repr(v)>" as the message (repr cut after 900 bytes). */
int klp_fail_repr(klp_err *e, int line, int col, const char *ename, const char *what, json_t *v);
/* Builds the public error (with traceback pointing into src). */
void klp_err_export(const klp_err *e, const char *src, kl_error *out);

/* ---- arena (per cell; tokens, AST, decoded strings) ---- */

typedef struct klp_arena klp_arena;
klp_arena *klp_arena_create(void);
void klp_arena_destroy(klp_arena *a);
void *klp_arena_alloc(klp_arena *a, size_t n); /* zeroed; NULL on OOM */

/* ---- UTF-8 ---- */

int klp_utf8_valid(const char *s, size_t n);
size_t klp_utf8_len(const char *s, size_t n);               /* code points */
size_t klp_utf8_offset(const char *s, size_t n, size_t cp); /* byte offset of code point */
int klp_utf8_encode(uint32_t cp, char out[4]);              /* bytes written; 0 if invalid */
/* Bytes of s[0..n) that form complete valid sequences, invalid bytes replaced by
 * U+FFFD into b; returns how many trailing bytes were held back (incomplete). */
size_t klp_utf8_sanitize(kl_buf *b, const char *s, size_t n, int final);

/* ---- tokens ---- */

typedef enum {
    KLP_T_EOF,
    KLP_T_NEWLINE,
    KLP_T_NAME,
    KLP_T_INT,
    KLP_T_FLOAT,
    KLP_T_STR,
    KLP_T_OP,
    KLP_T_MAGIC, /* "%name args" line: text = the line after the '%' */
    KLP_T_SHELL, /* "!cmd": text = the command */
    KLP_T_HELP   /* "name?" / "?name" / "%magic?": text = the name (with '%' if a magic) */
} klp_tok_kind;

typedef struct klp_tok {
    klp_tok_kind kind;
    int line, col, end_col; /* end_col: 0 when the token spans lines */
    const char *text;       /* NAME/OP/MAGIC/SHELL/HELP: NUL-terminated (arena); STR: decoded */
    size_t len;             /* STR: decoded byte length */
    long long ival;
    double fval;
    int fstring; /* STR with an f prefix: text is the raw template */
} klp_tok;

typedef struct klp_toks {
    klp_tok *v;
    size_t n;
    int incomplete; /* ended inside brackets / a string / after a backslash */
} klp_toks;

/* Tokenises src (valid UTF-8). Returns 0, or -1 with err (SyntaxError/IndentationError);
 * toks->incomplete is set when the error is "unexpected end of input". */
RT_MUST_USE int klp_lex(klp_arena *a, const char *src, klp_toks *toks, klp_err *err);
/* One number or quoted string at the start of src (no prefix, no sign), by the same
 * scanners: *tok its token, *used its length in bytes; -1 with err when there is none. */
RT_MUST_USE int klp_lex_literal(klp_arena *a, const char *src, klp_tok *tok, size_t *used,
                                klp_err *err);

/* The end of the expression at s[0], just after a '{' in text that is not a cell (an
 * f-string's template, a magic's or shell line's {expr}): the index of the '}' (in an
 * f-string also of a ':' or a '!' that is not '!=') outside brackets and quotes, or n
 * when there is none. The one scanner of braced expressions. */
size_t klp_scan_expr(const char *s, size_t n, int fstring);

/* ---- AST ---- */

typedef enum {
    KLP_N_CONST_INT,
    KLP_N_CONST_FLOAT,
    KLP_N_CONST_STR,
    KLP_N_NONE,
    KLP_N_TRUE,
    KLP_N_FALSE,
    KLP_N_NAME,
    KLP_N_LIST,
    KLP_N_DICT,
    KLP_N_BINOP,
    KLP_N_UNARY,
    KLP_N_NOT,
    KLP_N_AND,
    KLP_N_OR,
    KLP_N_COMPARE,
    KLP_N_IFEXP,
    KLP_N_CALL,
    KLP_N_INDEX,
    KLP_N_SLICE,
    KLP_N_ATTR,
    KLP_N_FSTR,
    /* statements */
    KLP_S_EXPR,
    KLP_S_ASSIGN,
    KLP_S_AUGASSIGN,
    KLP_S_PASS,
    KLP_S_DEL,
    KLP_S_MAGIC,
    KLP_S_SHELL,
    KLP_S_HELP
} klp_node_kind;

typedef struct klp_node klp_node;
struct klp_node {
    klp_node_kind kind;
    int line, col, end_col;
    int depth;
    const char *op;  /* BINOP/UNARY/COMPARE/AUGASSIGN operator */
    const char *str; /* NAME/ATTR/STR/MAGIC/SHELL/HELP text; keyword names */
    size_t len;
    long long ival;
    double fval;
    klp_node **kids;  /* children (see each kind in kl_parse.c) */
    const char **ops; /* CALL: keyword names (NULL = positional); FSTR: "r"/"" per part */
    size_t n;
    int suppress; /* S_EXPR followed by ';' at the end of the cell */
};

typedef struct klp_prog {
    klp_node **stmts;
    size_t n;
} klp_prog;

/* Parses tokens into statements. Returns 0 or -1 with a SyntaxError in err. */
RT_MUST_USE int klp_parse(klp_arena *a, const klp_toks *toks, klp_prog *prog, klp_err *err);
/* Parses one expression (for {expr} interpolation, f-strings, user_expressions). */
RT_MUST_USE int klp_parse_expr(klp_arena *a, const char *src, klp_node **out, klp_err *err);

/* ---- evaluation ---- */

typedef struct klp_ctx {
    kl_engine *eng;
    const mg_out *out;
    klp_err *err;
} klp_ctx;

int klp_interrupted(kl_engine *e);

json_t *klp_eval(klp_ctx *c, const klp_node *n);
/* Parses and evaluates one expression; new ref or NULL with err. */
json_t *klp_eval_source(kl_engine *e, const char *src, const mg_out *out,
                        klp_err *err);                   /* new ref or NULL with c->err */
RT_MUST_USE int klp_exec(klp_ctx *c, const klp_prog *p); /* 0 or -1 */

/* The total budget of the values (kl_budget.c); one per engine. */
typedef struct klp_budget {
    size_t limit;      /* bytes */
    size_t base;       /* the namespace's footprint at the last walk */
    size_t stmt;       /* charged by the running statement */
    size_t since_walk; /* charged since the last walk (and the statement it was in) */
    int stale;         /* a statement started since the last walk */
} klp_budget;

/* The engine: its namespace and state (kl_engine.c makes it). */
struct kl_engine {
    atomic_int *interrupt;
    json_t *vars;
    mg_session *session;
    mg_host host;
    json_t *cell_metadata; /* borrowed, for the running cell */
    int run_depth;
    struct fm_registry *forms;
    klp_err nested;       /* the last error of a cell run through host->run_cell */
    mg_settings settings; /* what magics see in mg_ctx.settings */
    char *next_input;     /* the last cell's code with its form's values written in */
    klp_budget budget;    /* the values' total memory (KILN_VALUE_BUDGET) */
};

/* The default, or setting (KILN_VALUE_BUDGET) when valid; a bad one is warned about. */
void klp_budget_init(klp_budget *b, const char *setting);
void klp_budget_statement(klp_budget *b); /* a statement starts */
/* MemoryError (0 / -1) when bytes more would pass the budget; ask does not charge. */
int klp_budget_ask(klp_ctx *c, const klp_node *n, size_t bytes);
int klp_budget_charge(klp_ctx *c, const klp_node *n, size_t bytes);
/* Charges v, the result of evaluating n, when the evaluation made it (refcount 1). */
int klp_budget_charge_value(klp_ctx *c, const klp_node *n, json_t *v);

/* Operators (kl_ops.c). All return new refs or NULL with err filled (line/col from n). */
json_t *klp_binop(klp_ctx *c, const klp_node *n, const char *op, json_t *a, json_t *b);
json_t *klp_unary(klp_ctx *c, const klp_node *n, const char *op, json_t *a);
int klp_compare(klp_ctx *c, const klp_node *n, const char *op, json_t *a, json_t *b);
int klp_truthy(json_t *v);
json_t *klp_index(klp_ctx *c, const klp_node *n, json_t *obj, json_t *idx);
json_t *klp_slice(klp_ctx *c, const klp_node *n, json_t *obj, json_t *lo, json_t *hi);
json_t *klp_real(klp_ctx *c, const klp_node *n, double v); /* rejects nan/inf */
/* 1 when container v is or (transitively) contains target. */
int klp_reaches(json_t *v, json_t *target);
int klp_check_depth(klp_ctx *c, const klp_node *n, json_t *v);
/* The items of a list, the characters of a str or the keys of a dict, as a new list. */
int klp_iter_items(klp_ctx *c, const klp_node *n, json_t *v, json_t **list_out);

/* Helpers of the builtins and methods (kl_builtins.c): klp_fail at n (returns NULL); a
 * TypeError unless lo <= na <= hi ("f() takes exactly 1 argument (2 given)"); the string
 * built in b (freed), NULL when it ran out of memory. */
json_t *klpb_fail(klp_ctx *c, const klp_node *n, const char *ename, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int klpb_count(klp_ctx *c, const klp_node *n, const char *name, size_t na, size_t lo, size_t hi);
json_t *klpb_str_new(kl_buf *b);

/* Builtins (kl_builtins.c) and methods (kl_methods.c). args/kw borrowed. */
int klp_is_builtin(const char *name);
const char *klp_builtin_doc(const char *name);
/* The i-th builtin's name (table order), NULL past the end. */
const char *klp_builtin_name(size_t i);
json_t *klp_call_builtin(klp_ctx *c, const klp_node *n, const char *name, json_t **args,
                         size_t nargs, const char **kwnames, json_t **kwvals, size_t nkw);
json_t *klp_call_method(klp_ctx *c, const klp_node *n, json_t *self, const char *name,
                        json_t **args, size_t nargs);
/* The next method of self's type from table position *i on (advances *i), NULL at the end. */
const char *klp_method_name(json_t *self, size_t *i);

/* repr()/str() (kl_repr.c): appended to b. */
const char *klp_type_name(json_t *v);
void klp_repr(kl_buf *b, json_t *v);
void klp_str(kl_buf *b, json_t *v);

/* $name / {expr} interpolation in a shell line (kl_interp.c), each value quoted as one
 * sh word ($!name / {!expr}: raw): new string (free()), or NULL on OOM. */
char *klp_interpolate(kl_engine *e, const char *text);
/* The same for magic arguments, each value quoted as one mg_args word (quoted != 0) or
 * as it is (quoted == 0, for magics that split nothing): a {expr} raising NameError
 * returns NULL with that error in *name_err (name_err->ename[0] != 0; NULL otherwise
 * means out of memory); the first undefined `$name` (with its `$`) goes to
 * undef[nundef] ("" when none). */
char *klp_interpolate_args(kl_engine *e, const char *text, int quoted, klp_err *name_err,
                           char *undef, size_t nundef);

/* Shell (kl_shell.c): runs cmd, streaming into out. 0, or -1 (interrupt / failure). */
RT_MUST_USE int klp_shell_run(kl_engine *e, const char *cmd, const mg_out *out, int *status,
                              klp_err *err);

/* Magics (kl_magic.c). text = "name args" (line) or the whole cell (cell magic). */
int klp_magic_line(klp_ctx *c, const klp_node *n);
RT_MUST_USE int klp_magic_cell(kl_engine *e, const char *code, const mg_out *out, klp_err *err);
int klp_help(klp_ctx *c, const char *name);
/* What a bare `help` and help() print: where the help is (kl_builtins.c). */
extern const char klp_help_pointer[];
/* Help text (new string) for a magic or name, or NULL. */
char *klp_help_text(kl_engine *e, const char *name);

#endif
