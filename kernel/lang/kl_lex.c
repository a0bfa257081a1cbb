/* kl_lex.c - the tokenizer of the cell language (a Python subset).
 *
 * Python's rules where they matter to form and parameter cells: NEWLINE only at
 * bracket depth 0, backslash continuation, # comments, str literals with every
 * prefix Python has except bytes (r, u, f and combinations), single/double/triple
 * quotes and all escapes, int literals in 4 bases with underscores, floats.
 * Bitwise and matrix operators are a SyntaxError that names them.
 * IPython's line syntax is recognised at the start of a logical line:
 * `%magic args`, `!command`, `name?`, `?name`, `%magic?`.
 * No indentation is valid (there are no compound statements): an indented line is
 * an IndentationError, as Python says.
 * Errors carry line and column (1-based, columns in code points).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

typedef struct lexer {
    klp_arena *a;
    const char *s;
    size_t pos, n, line_start;
    int line;
    int depth;
    char br[KLP_MAX_DEPTH];
    int br_line[KLP_MAX_DEPTH], br_col[KLP_MAX_DEPTH];
    klp_toks *t;
    size_t cap;
    klp_err *err;
    size_t cache_ls, cache_pos; /* col_at memo: columns are counted incrementally */
    int cache_col;
} lexer;

/* Column (1-based, code points) of pos on the current line; amortised O(1) when
 * called with increasing positions, so long lines stay linear. */
static int col_at(lexer *L, size_t pos)
{
    if (pos < L->line_start) return 1;
    if (L->cache_ls != L->line_start || pos < L->cache_pos) {
        L->cache_ls = L->line_start;
        L->cache_pos = L->line_start;
        L->cache_col = 1;
    }
    L->cache_col += (int)klp_utf8_len(L->s + L->cache_pos, pos - L->cache_pos);
    L->cache_pos = pos;
    return L->cache_col;
}

static klp_tok *push(lexer *L, klp_tok_kind k, size_t start)
{
    if (L->t->n == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 64;
        klp_tok *v = klp_arena_alloc(L->a, cap * sizeof *v);
        if (!v) return NULL;
        if (L->t->n) memcpy(v, L->t->v, L->t->n * sizeof *v);
        L->t->v = v;
        L->cap = cap;
    }
    klp_tok *tk = &L->t->v[L->t->n++];
    memset(tk, 0, sizeof *tk);
    tk->kind = k;
    tk->line = L->line;
    tk->col = col_at(L, start);
    return tk;
}

static char *dup(lexer *L, const char *s, size_t n)
{
    char *p = klp_arena_alloc(L->a, n + 1);
    if (p) memcpy(p, s, n);
    return p;
}

static int oom(lexer *L) { return klp_fail(L->err, L->line, 0, "MemoryError", "out of memory"); }

static int is_id_start(unsigned char c) { return isalpha(c) || c == '_' || c >= 0x80; }
static int is_id(unsigned char c) { return isalnum(c) || c == '_' || c >= 0x80; }

static size_t eol_of(lexer *L, size_t p)
{
    while (p < L->n && L->s[p] != '\n') p++;
    return p;
}

/* ---- IPython line syntax at the start of a logical line ---- */

/* `name?`, `name??` or `?name` (help on a variable, builtin or magic: `%train?`),
 * `%magic args` or `!command`: its token and the line's NEWLINE, *handled = 1; else
 * *handled = 0. */
static int special_line(lexer *L, int *handled)
{
    const char *s = L->s;
    size_t st = L->pos, e = eol_of(L, st), te = e, h, ns = st + (s[st] == '?'), ne;
    if (te > st && s[te - 1] == '\r') te--;
    for (h = te; h > st && isspace((unsigned char)s[h - 1]);) h--;
    for (ne = ns + (s[ns] == '%'); ne < h && (is_id((unsigned char)s[ne]) || s[ne] == '.');) ne++;
    size_t marks = ns > st ? 0 : strspn(s + ne, "?");
    int help = ne > ns + (s[ns] == '%') && is_id_start((unsigned char)s[ns + (s[ns] == '%')]) &&
               (ns > st ? ne == h : (marks == 1 || marks == 2) && ne + marks == h);
    klp_tok_kind k = help           ? KLP_T_HELP
                     : s[st] == '%' ? KLP_T_MAGIC
                     : s[st] == '!' ? KLP_T_SHELL
                                    : KLP_T_EOF;
    if (!(*handled = k != KLP_T_EOF)) return 0;
    if (k == KLP_T_MAGIC && st + 1 < L->n && s[st + 1] == '%')
        return klp_syntax(L->err, L->line, col_at(L, st),
                          "a cell magic (%%%%name) must be on the first line of the cell");
    klp_tok *tk = push(L, k, st);
    if (!tk || !(tk->text = help ? dup(L, s + ns, ne - ns) : dup(L, s + st + 1, te - st - 1)))
        return oom(L);
    tk->len = strlen(tk->text);
    if (!push(L, KLP_T_NEWLINE, te)) return oom(L);
    L->pos = e;
    return 0;
}

/* ---- numbers ---- */

static int lex_number(lexer *L)
{
    size_t st = L->pos;
    const char *s = L->s;
    char clean[128];
    size_t k = 0;
    int is_float = 0, base = 10;
    size_t p = st;
    if (s[p] == '0' && p + 1 < L->n && strchr("xXoObB", s[p + 1])) {
        char b = (char)tolower((unsigned char)s[p + 1]);
        base = b == 'x' ? 16 : b == 'o' ? 8 : 2;
        p += 2;
        while (p < L->n && (isxdigit((unsigned char)s[p]) || s[p] == '_')) {
            if (s[p] != '_' && k < sizeof clean - 1) clean[k++] = s[p];
            p++;
        }
    } else {
        while (p < L->n &&
               (isdigit((unsigned char)s[p]) || s[p] == '_' || s[p] == '.' ||
                ((s[p] == 'e' || s[p] == 'E') && p > st) ||
                ((s[p] == '+' || s[p] == '-') && (s[p - 1] == 'e' || s[p - 1] == 'E')))) {
            if (s[p] == '.' || s[p] == 'e' || s[p] == 'E') is_float = 1;
            if (s[p] == '.' && p + 1 < L->n && s[p + 1] == '.') break;
            if (s[p] != '_' && k < sizeof clean - 1) clean[k++] = s[p];
            p++;
        }
    }
    clean[k] = 0;
    L->pos = p;
    if (p < L->n && (s[p] == 'j' || s[p] == 'J'))
        return klp_syntax(L->err, L->line, col_at(L, st), "complex numbers are not supported");
    if (p < L->n && is_id((unsigned char)s[p]))
        return klp_syntax(L->err, L->line, col_at(L, st), "invalid %s literal",
                          base == 10   ? "decimal"
                          : base == 16 ? "hexadecimal"
                          : base == 8  ? "octal"
                                       : "binary");
    if (k == 0 || (s[p - 1] == '_') || k >= sizeof clean - 1)
        return klp_syntax(L->err, L->line, col_at(L, st), "invalid number literal");
    klp_tok *tk = push(L, is_float ? KLP_T_FLOAT : KLP_T_INT, st);
    if (!tk) return oom(L);
    tk->text = dup(L, s + st, p - st);
    char *end;
    errno = 0;
    if (is_float) {
        tk->fval = strtod(clean, &end);
        if (*end) return klp_syntax(L->err, L->line, tk->col, "invalid float literal");
        if (!isfinite(tk->fval))
            return klp_fail(L->err, L->line, tk->col, "OverflowError",
                            "float literal %s is out of range", clean);
    } else {
        if (base == 10 && clean[0] == '0' && clean[1])
            for (size_t i = 1; i < k; i++)
                if (clean[i] != '0')
                    return klp_syntax(L->err, L->line, tk->col,
                                      "leading zeros in decimal integer literals are not "
                                      "permitted; use an 0o prefix for octal integers");
        unsigned long long v = strtoull(clean, &end, base);
        if (*end) return klp_syntax(L->err, L->line, tk->col, "invalid digit in literal");
        if (errno == ERANGE || v > (unsigned long long)INT64_MAX)
            return klp_fail(L->err, L->line, tk->col, "OverflowError",
                            "integer literal %s is too large (Kiln integers are 64-bit)", tk->text);
        tk->ival = (long long)v;
    }
    return 0;
}

/* ---- strings ---- */

/* Decodes the escapes of body[0..n) into the arena: Python's, less octal and \N{...}. */
static int decode(lexer *L, const char *b, size_t n, int raw, int line, int col, klp_tok *tk)
{
    static const char simple[] = "\\\\''\"\"a\ab\bf\fn\nr\rt\tv\v"; /* escape, value */
    char *o = klp_arena_alloc(L->a, n + 1), *w = o, hx[9] = {0}, enc[4];
    if (!o) return oom(L);
    for (size_t i = 0; i < n; i++) {
        char c = !raw && b[i] == '\\' && i + 1 < n ? b[++i] : 0;
        const char *e = c ? strchr(simple, c) : NULL;
        int hex = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0, m;
        if (!c) *w++ = b[i];
        else if (c == '\r') i += i + 1 < n && b[i + 1] == '\n';
        else if (e && (e - simple) % 2 == 0) *w++ = e[1];
        else if (hex) {
            if (i + (size_t)hex >= n ||
                strspn(memcpy(hx, b + i + 1, (size_t)hex), "0123456789abcdefABCDEF") < (size_t)hex)
                return klp_syntax(L->err, line, col, "(unicode error) truncated \\%c escape", c);
            hx[hex] = 0;
            if (!(m = klp_utf8_encode((uint32_t)strtoul(hx, NULL, 16), enc)))
                return klp_syntax(L->err, line, col,
                                  "(unicode error) illegal Unicode character \\%c%s", c, hx);
            memcpy(w, enc, (size_t)m);
            w += m;
            i += (size_t)hex;
        } else if (c == 'N' || (c >= '0' && c <= '7')) {
            return klp_syntax(L->err, line, col,
                              "(unicode error) \\%c escapes are not supported (write \\x, \\u or "
                              "\\U with hex digits)",
                              c);
        } else if (c != '\n') {
            *w++ = '\\';
            *w++ = c;
        }
    }
    tk->text = o;
    tk->len = (size_t)(w - o);
    return 0;
}

static int lex_string(lexer *L, size_t st, int raw, int fstr)
{
    const char *s = L->s;
    int line0 = L->line, col0 = col_at(L, st);
    char q = s[L->pos];
    int triple = L->pos + 2 < L->n && s[L->pos + 1] == q && s[L->pos + 2] == q;
    size_t p = L->pos + (triple ? 3 : 1), body = p;
    for (;;) {
        if (p >= L->n) {
            if (triple) {
                L->t->incomplete = 1;
                return klp_syntax(L->err, line0, col0,
                                  "unterminated triple-quoted string literal (detected at line %d)",
                                  L->line);
            }
            return klp_syntax(L->err, line0, col0,
                              "unterminated string literal (detected at line %d)", L->line);
        }
        char c = s[p];
        if (c == '\\' && p + 1 < L->n) {
            if (s[p + 1] == '\n') {
                L->line++;
                L->line_start = p + 2;
            }
            p += 2;
            continue;
        }
        if (c == '\n') {
            if (!triple)
                return klp_syntax(L->err, line0, col0,
                                  "unterminated string literal (detected at line %d)", line0);
            L->line++;
            L->line_start = p + 1;
        }
        if (c == q && (!triple || (p + 2 < L->n && s[p + 1] == q && s[p + 2] == q))) break;
        p++;
    }
    size_t bend = p;
    L->pos = p + (triple ? 3 : 1);
    klp_tok tmp;
    memset(&tmp, 0, sizeof tmp);
    if (decode(L, s + body, bend - body, raw, line0, col0, &tmp) < 0) return -1;
    klp_tok *tk = push(L, KLP_T_STR, L->pos);
    if (!tk) return oom(L);
    tk->line = line0;
    tk->col = col0;
    tk->text = tmp.text;
    tk->len = tmp.len;
    tk->fstring = fstr;
    return 0;
}

/* ---- operators ---- */

/* Python's operators; those after "" are left out (bitwise and matrix ones), lexed
 * whole so that the error names them. The longest match wins. */
static const char *const ops[] = {
    "**=", "//=", "...", "**", "//", "==", "!=", "<=", ">=", "+=",  "-=",  "*=", "/=",
    "%=",  "->",  ":=",  "+",  "-",  "*",  "/",  "%",  "<",  ">",   "(",   ")",  "[",
    "]",   "{",   "}",   ",",  ":",  ".",  ";",  "=",  "",   "<<=", ">>=", "<<", ">>",
    "&=",  "|=",  "^=",  "@=", "&",  "|",  "^",  "~",  "@",  NULL};

static int lex_op(lexer *L)
{
    const char *s = L->s + L->pos;
    size_t flen = 0;
    int refused = 0, past = 0, col = col_at(L, L->pos);
    for (int i = 0; ops[i]; i++) {
        size_t l = strlen(ops[i]);
        if (!l) past = 1;
        else if (l > flen && !strncmp(s, ops[i], l)) flen = l, refused = past;
    }
    unsigned char u = (unsigned char)*s;
    if (!flen && (u < 0x20 || u == 0x7f))
        return klp_syntax(L->err, L->line, col, "invalid non-printable character U+%04X", u);
    if (!flen) return klp_syntax(L->err, L->line, col, "invalid syntax");
    if (refused)
        return klp_syntax(L->err, L->line, col,
                          "the operator '%.*s' is not supported: Kiln cells have + - * / // %% "
                          "** and comparisons (no bitwise or matrix operators)",
                          (int)flen, s);
    char c = *s;
    if (flen == 1 && strchr("([{", c)) {
        if (L->depth >= KLP_MAX_DEPTH)
            return klp_syntax(L->err, L->line, col, "too many nested parentheses");
        L->br[L->depth] = c;
        L->br_line[L->depth] = L->line;
        L->br_col[L->depth] = col;
        L->depth++;
    } else if (flen == 1 && strchr(")]}", c)) {
        char open = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (L->depth == 0) return klp_syntax(L->err, L->line, col, "unmatched '%c'", c);
        if (L->br[L->depth - 1] != open)
            return klp_syntax(L->err, L->line, col,
                              "closing parenthesis '%c' does not match opening parenthesis '%c' "
                              "on line %d",
                              c, L->br[L->depth - 1], L->br_line[L->depth - 1]);
        L->depth--;
    }
    klp_tok *tk = push(L, KLP_T_OP, L->pos);
    if (!tk || !(tk->text = dup(L, s, flen))) return oom(L);
    tk->len = flen;
    L->pos += flen;
    return 0;
}

/* ---- names (and string prefixes) ---- */

static int lex_name(lexer *L)
{
    size_t st = L->pos, p = st;
    while (p < L->n && is_id((unsigned char)L->s[p])) p++;
    size_t n = p - st;
    char pre[3] = {0}, key[6];
    for (size_t i = 0; i < n && i < 2; i++) pre[i] = (char)tolower((unsigned char)L->s[st + i]);
    snprintf(key, sizeof key, " %s ", pre);
    if (n <= 2 && p < L->n && (L->s[p] == '\'' || L->s[p] == '"')) { /* a string's prefix */
        if (strchr(pre, 'b'))
            return klp_syntax(L->err, L->line, col_at(L, st), "bytes literals are not supported");
        if (strstr(" r u f rf fr ", key))
            return L->pos = p, lex_string(L, st, !!strchr(pre, 'r'), !!strchr(pre, 'f'));
    }
    klp_tok *tk = push(L, KLP_T_NAME, st);
    if (!tk || !(tk->text = dup(L, L->s + st, n))) return oom(L);
    tk->len = n;
    L->pos = p;
    return 0;
}

/* ---- braced expressions in text that is not a cell ---- */

size_t klp_scan_expr(const char *s, size_t n, int fstring)
{
    int depth = 0;
    char q = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (q) {
            if (c == '\\' && i + 1 < n) i++;
            else if (c == q) q = 0;
        } else if (c == '\'' || c == '"') {
            q = c;
        } else if (c == '(' || c == '[' || c == '{') {
            depth++;
        } else if (depth && (c == ')' || c == ']' || c == '}')) {
            depth--;
        } else if (c == '}' || (fstring && !depth &&
                                (c == ':' || (c == '!' && (i + 1 == n || s[i + 1] != '='))))) {
            return i;
        } else if (c == ')' || c == ']') {
            return n;
        }
    }
    return n;
}

/* ---- driver ---- */

static int newline(lexer *L, size_t at)
{
    if (L->t->n && L->t->v[L->t->n - 1].kind != KLP_T_NEWLINE)
        if (!push(L, KLP_T_NEWLINE, at)) return oom(L);
    return 0;
}

static void lexer_init(lexer *L, klp_arena *a, const char *src, klp_toks *toks, klp_err *err)
{
    *L = (lexer){
        .a = a, .s = src, .n = strlen(src), .line = 1, .t = toks, .err = err, .cache_col = 1};
    memset(toks, 0, sizeof *toks);
}

/* Past the newline at p: the next line starts. */
static void next_line(lexer *L, size_t p)
{
    L->pos = p + 1;
    L->line++;
    L->line_start = L->pos;
}

int klp_lex_literal(klp_arena *a, const char *src, klp_tok *tok, size_t *used, klp_err *err)
{
    lexer L;
    klp_toks toks;
    lexer_init(&L, a, src, &toks, err);
    char c = src[0];
    int rc = isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)src[1]))
                 ? lex_number(&L)
             : c == '\'' || c == '"' ? lex_string(&L, 0, 0, 0)
                                     : klp_syntax(err, 1, 1, "expected a literal");
    if (rc < 0) return -1;
    *tok = toks.v[0];
    *used = L.pos;
    return 0;
}

int klp_lex(klp_arena *a, const char *src, klp_toks *toks, klp_err *err)
{
    lexer L;
    lexer_init(&L, a, src, toks, err);
    int bol = 1;
    while (L.pos < L.n) {
        char c = src[L.pos];
        if (bol && L.depth == 0) {
            size_t p = L.pos;
            while (p < L.n && (src[p] == ' ' || src[p] == '\t' || src[p] == '\f')) p++;
            if (p >= L.n) break;
            if (src[p] == '\n' || src[p] == '#' || src[p] == '\r') { /* a blank line */
                p += strcspn(src + p, "\n");
                if (p < L.n) next_line(&L, p);
                else L.pos = p;
                continue;
            }
            if (p > L.pos)
                return klp_fail(err, L.line, col_at(&L, p), "IndentationError",
                                "unexpected indent");
            if (special_line(&L, &bol) < 0) return -1; /* bol stays 1 after such a line */
            continue;
        }
        int rc = 0;
        size_t ntok = toks->n;
        if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
            L.pos++;
        } else if (c == '\n') {
            if (L.depth == 0) {
                if (newline(&L, L.pos) < 0) return -1;
                bol = 1;
            }
            next_line(&L, L.pos);
        } else if (c == '#') {
            while (L.pos < L.n && src[L.pos] != '\n') L.pos++;
        } else if (c == '\\') {
            size_t p = L.pos + 1;
            if (p < L.n && src[p] == '\r') p++;
            if (p >= L.n) {
                toks->incomplete = 1;
                return klp_syntax(err, L.line, col_at(&L, L.pos),
                                  "unexpected EOF after line continuation character");
            }
            if (src[p] != '\n')
                return klp_syntax(err, L.line, col_at(&L, L.pos + 1),
                                  "unexpected character after line continuation character");
            next_line(&L, p);
        } else if (isdigit((unsigned char)c) ||
                   (c == '.' && L.pos + 1 < L.n && isdigit((unsigned char)src[L.pos + 1]))) {
            rc = lex_number(&L);
        } else if (c == '\'' || c == '"') {
            rc = lex_string(&L, L.pos, 0, 0);
        } else if (is_id_start((unsigned char)c)) {
            rc = lex_name(&L);
        } else if (c == '!' && !(L.pos + 1 < L.n && src[L.pos + 1] == '=')) {
            rc =
                klp_syntax(err, L.line, col_at(&L, L.pos),
                           "invalid syntax ('!' runs a shell command only at the start of a line)");
        } else if (c == '$' || c == '?' || c == '`') {
            rc = klp_syntax(err, L.line, col_at(&L, L.pos), "invalid syntax");
        } else {
            rc = lex_op(&L);
        }
        if (rc < 0) return -1;
        if (toks->n > ntok && toks->v[toks->n - 1].line == L.line)
            toks->v[toks->n - 1].end_col = col_at(&L, L.pos);
    }
    if (L.depth > 0) {
        toks->incomplete = 1;
        return klp_syntax(err, L.br_line[L.depth - 1], L.br_col[L.depth - 1],
                          "'%c' was never closed", L.br[L.depth - 1]);
    }
    if (newline(&L, L.pos) < 0) return -1;
    if (!push(&L, KLP_T_EOF, L.pos)) return oom(&L);
    return 0;
}
