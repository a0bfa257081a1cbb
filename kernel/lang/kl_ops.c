/* kl_ops.c - arithmetic operators with Python semantics on int (64-bit, overflow is
 * an OverflowError instead of a bignum), float (never nan/inf: those cannot be
 * stored in JSON, so they are an OverflowError), bool (an int), and str and list
 * concatenation/repetition. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

#define OVERFLOW "integer overflow (Kiln integers are 64-bit)"
#define TOO_BIG "result would be too large"

static int is_int(json_t *v) { return json_is_integer(v) || json_is_boolean(v); }
static int is_num(json_t *v) { return is_int(v) || json_is_real(v); }
static long long ival(json_t *v)
{
    return json_is_boolean(v) ? json_is_true(v) : (long long)json_integer_value(v);
}
static double fval(json_t *v) { return json_is_real(v) ? json_real_value(v) : (double)ival(v); }

json_t *klp_real(klp_ctx *c, const klp_node *n, double v)
{
    if (isfinite(v)) return json_real(v);
    return klpb_fail(c, n, "OverflowError",
                     "float result is %s, which Kiln values cannot hold (they are JSON numbers)",
                     isnan(v) ? "nan" : "infinite");
}

/* ---- sequences: sizes checked and the budget asked before anything is built ---- */

static json_t *repeat(klp_ctx *c, const klp_node *n, json_t *seq, long long times)
{
    int str = json_is_string(seq);
    size_t len = str ? json_string_length(seq) : json_array_size(seq);
    if (times < 0 || !len) times = 0; /* empty, and free, whatever the count */
    if (len && (unsigned long long)times > (str ? KLP_MAX_STR : KLP_MAX_ITEMS) / len)
        return klpb_fail(c, n, "MemoryError", TOO_BIG);
    size_t total = len * (size_t)times;
    if (klp_budget_ask(c, n, str ? total : KLP_SZ_SLOT * total) < 0) return NULL;
    json_t *r = str ? NULL : json_array();
    for (long long i = 0; r && i < times; i++)
        if (json_array_extend(r, seq) < 0) json_decref(r), r = NULL;
    char *p = str ? malloc(total + 1) : NULL;
    if (!p) return r;
    /* one copy, then the filled part doubled (not one append per repetition) */
    if (total) memcpy(p, json_string_value(seq), len);
    for (size_t done = len; done < total; done *= 2)
        memcpy(p + done, p, done < total - done ? done : total - done);
    r = json_stringn(p, total);
    free(p);
    return r;
}

static json_t *concat(klp_ctx *c, const klp_node *n, json_t *a, json_t *b)
{
    int str = json_is_string(a);
    size_t la = str ? json_string_length(a) : json_array_size(a),
           lb = str ? json_string_length(b) : json_array_size(b);
    if (la + lb > (str ? KLP_MAX_STR : KLP_MAX_ITEMS))
        return klpb_fail(c, n, "MemoryError", TOO_BIG);
    if (klp_budget_ask(c, n, str ? la + lb : KLP_SZ_SLOT * (la + lb)) < 0) return NULL;
    json_t *r = str ? NULL : json_copy(a);
    if (r && json_array_extend(r, b) < 0) json_decref(r), r = NULL;
    char *p = str ? malloc(la + lb + 1) : NULL;
    if (!p) return r;
    memcpy(p, json_string_value(a), la);
    memcpy(p + la, json_string_value(b), lb);
    r = json_stringn(p, la + lb);
    free(p);
    return r;
}

/* ---- numbers ---- */

static json_t *float_op(klp_ctx *c, const klp_node *n, const char *op, double a, double b)
{
    if (!strcmp(op, "+")) return klp_real(c, n, a + b);
    if (!strcmp(op, "-")) return klp_real(c, n, a - b);
    if (!strcmp(op, "*")) return klp_real(c, n, a * b);
    if (!strcmp(op, "**")) {
        if (a == 0 && b < 0)
            return klpb_fail(c, n, "ZeroDivisionError", "0.0 cannot be raised to a negative power");
        if (a < 0 && b != floor(b))
            return klpb_fail(c, n, "ValueError",
                             "negative number cannot be raised to a fractional power (complex "
                             "numbers are not supported)");
        return klp_real(c, n, pow(a, b));
    }
    if (b == 0)
        return klpb_fail(c, n, "ZeroDivisionError", "float %s by zero",
                         !strcmp(op, "/")    ? "division"
                         : !strcmp(op, "//") ? "floor division"
                                             : "modulo");
    if (!strcmp(op, "/")) return klp_real(c, n, a / b);
    double mod = fmod(a, b), div = (a - mod) / b; /* CPython's float_divmod */
    if (mod && (b < 0) != (mod < 0)) mod += b, div -= 1.0;
    if (!strcmp(op, "%")) return klp_real(c, n, mod ? mod : copysign(0.0, b));
    double fl = floor(div);
    return klp_real(c, n, !div ? copysign(0.0, a / b) : div - fl > 0.5 ? fl + 1.0 : fl);
}

static json_t *int_op(klp_ctx *c, const klp_node *n, const char *op, long long a, long long b)
{
    long long r = 1, q, m;
    int of = 0;
    if (!strcmp(op, "/") || (!strcmp(op, "**") && b < 0))
        return float_op(c, n, op, (double)a, (double)b);
    if ((op[0] == '/' || op[0] == '%') && b == 0)
        return klpb_fail(c, n, "ZeroDivisionError", "integer division or modulo by zero");
    if (!strcmp(op, "+")) of = __builtin_add_overflow(a, b, &r);
    else if (!strcmp(op, "-")) of = __builtin_sub_overflow(a, b, &r);
    else if (!strcmp(op, "*")) of = __builtin_mul_overflow(a, b, &r);
    else if (!strcmp(op, "**")) /* by squaring */
        for (; b > 0 && !of; b >>= 1) {
            if (b & 1) of = __builtin_mul_overflow(r, a, &r);
            if (b > 1 && !of) of = __builtin_mul_overflow(a, a, &a);
        }
    else if (b == -1) /* // and % by -1: a / b would trap on INT64_MIN */
        of = op[0] == '/' && a == INT64_MIN, r = op[0] == '/' && !of ? -a : 0;
    else { /* // and %, rounding toward minus infinity */ q = a / b, m = a % b;
        if (m && (m < 0) != (b < 0)) q--, m += b;
        r = op[0] == '/' ? q : m;
    }
    return of ? klpb_fail(c, n, "OverflowError", OVERFLOW) : json_integer(r);
}

static json_t *binop(klp_ctx *c, const klp_node *n, const char *op, json_t *a, json_t *b)
{
    int seq = json_is_string(a) || json_is_array(a);
    if (is_int(a) && is_int(b)) return int_op(c, n, op, ival(a), ival(b));
    if (is_num(a) && is_num(b)) return float_op(c, n, op, fval(a), fval(b));
    if (!strcmp(op, "+") && seq && json_typeof(a) == json_typeof(b)) return concat(c, n, a, b);
    if (!strcmp(op, "*") && seq && is_int(b)) return repeat(c, n, a, ival(b));
    if (!strcmp(op, "*") && (json_is_string(b) || json_is_array(b)) && is_int(a))
        return repeat(c, n, b, ival(a));
    if (!strcmp(op, "%") && json_is_string(a))
        return klpb_fail(c, n, "TypeError",
                         "%%-formatting of strings is not supported; use an f-string such as "
                         "f'{x}'");
    if (!strcmp(op, "+") && seq)
        return klpb_fail(c, n, "TypeError", "can only concatenate %s (not \"%s\") to %s",
                         klp_type_name(a), klp_type_name(b), klp_type_name(a));
    return klpb_fail(c, n, "TypeError", "unsupported operand type(s) for %s: '%s' and '%s'", op,
                     klp_type_name(a), klp_type_name(b));
}

json_t *klp_binop(klp_ctx *c, const klp_node *n, const char *op, json_t *a, json_t *b)
{
    json_t *r = binop(c, n, op, a, b);
    if (!r && !c->err->set) klp_fail(c->err, n->line, n->col, "MemoryError", TOO_BIG);
    return r;
}

json_t *klp_unary(klp_ctx *c, const klp_node *n, const char *op, json_t *a)
{
    if (!is_num(a))
        return klpb_fail(c, n, "TypeError", "bad operand type for unary %s: '%s'", op,
                         klp_type_name(a));
    if (json_is_real(a))
        return klp_real(c, n, op[0] == '-' ? -json_real_value(a) : json_real_value(a));
    if (op[0] == '-' && ival(a) == INT64_MIN) return klpb_fail(c, n, "OverflowError", OVERFLOW);
    return json_integer(op[0] == '-' ? -ival(a) : ival(a));
}
