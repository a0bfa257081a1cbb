/* kl_ops.c - arithmetic operators with Python semantics on int (64-bit, overflow is
 * an OverflowError instead of a bignum), float (never nan/inf: those cannot be
 * stored in JSON, so they are an OverflowError), bool (an int), and str and list
 * concatenation/repetition. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

static int is_int(json_t *v) { return json_is_integer(v) || json_is_boolean(v); }
static int is_num(json_t *v) { return is_int(v) || json_is_real(v); }
static long long ival(json_t *v)
{
    return json_is_boolean(v) ? json_is_true(v) : (long long)json_integer_value(v);
}
static double fval(json_t *v) { return json_is_real(v) ? json_real_value(v) : (double)ival(v); }

json_t *klp_real(klp_ctx *c, const klp_node *n, double v)
{
    if (!isfinite(v)) {
        klp_fail(c->err, n->line, n->col, "OverflowError",
                 "float result is %s, which Kiln values cannot hold (they are JSON numbers)",
                 isnan(v) ? "nan" : "infinite");
        return NULL;
    }
    json_t *r = json_real(v);
    if (!r) klp_fail(c->err, n->line, n->col, "MemoryError", "out of memory");
    return r;
}

static json_t *mkint(klp_ctx *c, const klp_node *n, long long v)
{
    json_t *r = json_integer(v);
    if (!r) klp_fail(c->err, n->line, n->col, "MemoryError", "out of memory");
    return r;
}

static json_t *overflow(klp_ctx *c, const klp_node *n)
{
    klp_fail(c->err, n->line, n->col, "OverflowError",
             "integer overflow (Kiln integers are 64-bit)");
    return NULL;
}

static json_t *unsupported(klp_ctx *c, const klp_node *n, const char *op, json_t *a, json_t *b)
{
    if (!strcmp(op, "+") && json_is_string(a))
        klp_fail(c->err, n->line, n->col, "TypeError",
                 "can only concatenate str (not \"%s\") to str", klp_type_name(b));
    else if (!strcmp(op, "+") && json_is_array(a))
        klp_fail(c->err, n->line, n->col, "TypeError",
                 "can only concatenate list (not \"%s\") to list", klp_type_name(b));
    else
        klp_fail(c->err, n->line, n->col, "TypeError",
                 "unsupported operand type(s) for %s: '%s' and '%s'", op, klp_type_name(a),
                 klp_type_name(b));
    return NULL;
}

static json_t *zerodiv(klp_ctx *c, const klp_node *n, const char *msg)
{
    klp_fail(c->err, n->line, n->col, "ZeroDivisionError", "%s", msg);
    return NULL;
}

static json_t *too_big(klp_ctx *c, const klp_node *n)
{
    klp_fail(c->err, n->line, n->col, "MemoryError", "result would be too large");
    return NULL;
}

/* ---- sequences ---- */

static json_t *repeat(klp_ctx *c, const klp_node *n, json_t *seq, long long times)
{
    if (times < 0) times = 0;
    /* an empty sequence repeated any number of times is empty (and costs nothing) */
    if (json_is_string(seq) ? json_string_length(seq) == 0 : json_array_size(seq) == 0) times = 0;
    if (json_is_string(seq)) {
        size_t len = json_string_length(seq);
        if (len && (unsigned long long)times > KLP_MAX_STR / len) return too_big(c, n);
        if (klp_budget_ask(c, n, len * (size_t)times) < 0) return NULL;
        /* one copy, then the filled part doubled (not one append per repetition) */
        size_t total = len * (size_t)times, done = len;
        char *p = total ? malloc(total) : NULL;
        if (total && !p) return too_big(c, n);
        if (total) memcpy(p, json_string_value(seq), len);
        for (; done < total; done *= 2)
            memcpy(p + done, p, done < total - done ? done : total - done);
        json_t *r = json_stringn(p ? p : "", total);
        free(p);
        if (!r) return too_big(c, n);
        return r;
    }
    size_t len = json_array_size(seq);
    if (len && (unsigned long long)times > KLP_MAX_ITEMS / len) return too_big(c, n);
    if (klp_budget_ask(c, n, KLP_SZ_SLOT * len * (size_t)times) < 0) return NULL;
    json_t *r = json_array();
    for (long long i = 0; r && i < times; i++)
        if (json_array_extend(r, seq) < 0) {
            json_decref(r);
            return too_big(c, n);
        }
    return r;
}

static json_t *concat(klp_ctx *c, const klp_node *n, json_t *a, json_t *b)
{
    if (json_is_string(a)) {
        size_t la = json_string_length(a), lb = json_string_length(b);
        if (la + lb > KLP_MAX_STR) return too_big(c, n);
        if (klp_budget_ask(c, n, la + lb) < 0) return NULL;
        kl_buf buf = {0};
        kl_buf_add(&buf, json_string_value(a), la);
        kl_buf_add(&buf, json_string_value(b), lb);
        json_t *r = buf.oom ? NULL : json_stringn(buf.s, buf.n);
        kl_buf_free(&buf);
        return r ? r : too_big(c, n);
    }
    if (json_array_size(a) + json_array_size(b) > KLP_MAX_ITEMS) return too_big(c, n);
    if (klp_budget_ask(c, n, KLP_SZ_SLOT * (json_array_size(a) + json_array_size(b))) < 0)
        return NULL;
    json_t *r = json_copy(a);
    if (!r || json_array_extend(r, b) < 0) {
        json_decref(r);
        return too_big(c, n);
    }
    return r;
}

/* ---- numbers ---- */

static json_t *int_pow(klp_ctx *c, const klp_node *n, long long base, long long e)
{
    long long r = 1;
    while (e > 0) {
        if (e & 1)
            if (__builtin_mul_overflow(r, base, &r)) return overflow(c, n);
        e >>= 1;
        if (e && __builtin_mul_overflow(base, base, &base)) return overflow(c, n);
    }
    return mkint(c, n, r);
}

static json_t *int_op(klp_ctx *c, const klp_node *n, const char *op, long long a, long long b)
{
    long long r;
    switch (op[0]) {
    case '+':
        if (__builtin_add_overflow(a, b, &r)) return overflow(c, n);
        break;
    case '-':
        if (__builtin_sub_overflow(a, b, &r)) return overflow(c, n);
        break;
    case '*':
        if (op[1] == '*') {
            if (b < 0) {
                if (a == 0) return zerodiv(c, n, "0.0 cannot be raised to a negative power");
                return klp_real(c, n, pow((double)a, (double)b));
            }
            return int_pow(c, n, a, b);
        }
        if (__builtin_mul_overflow(a, b, &r)) return overflow(c, n);
        break;
    case '/':
        if (op[1] == '/') {
            if (b == 0) return zerodiv(c, n, "integer division or modulo by zero");
            if (a == INT64_MIN && b == -1) return overflow(c, n);
            r = a / b;
            if ((a % b != 0) && ((a < 0) != (b < 0))) r--;
            break;
        }
        if (b == 0) return zerodiv(c, n, "division by zero");
        return klp_real(c, n, (double)a / (double)b);
    case '%':
        if (b == 0) return zerodiv(c, n, "integer modulo by zero");
        if (b == -1) {
            r = 0;
            break;
        }
        r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        break;
    default: return NULL;
    }
    return mkint(c, n, r);
}

static json_t *float_op(klp_ctx *c, const klp_node *n, const char *op, double a, double b)
{
    switch (op[0]) {
    case '+': return klp_real(c, n, a + b);
    case '-': return klp_real(c, n, a - b);
    case '*':
        if (op[1] == '*') {
            if (a == 0 && b < 0) return zerodiv(c, n, "0.0 cannot be raised to a negative power");
            if (a < 0 && b != floor(b)) {
                klp_fail(c->err, n->line, n->col, "ValueError",
                         "negative number cannot be raised to a fractional power (complex numbers "
                         "are not supported)");
                return NULL;
            }
            return klp_real(c, n, pow(a, b));
        }
        return klp_real(c, n, a * b);
    case '/': {
        if (b == 0)
            return zerodiv(
                c, n, op[1] == '/' ? "float floor division by zero" : "float division by zero");
        if (!op[1]) return klp_real(c, n, a / b);
        /* CPython's float_divmod */
        double mod = fmod(a, b), div = (a - mod) / b, fl;
        if (mod) {
            if ((b < 0) != (mod < 0)) div -= 1.0;
        }
        if (div) {
            fl = floor(div);
            if (div - fl > 0.5) fl += 1.0;
        } else {
            fl = copysign(0.0, a / b);
        }
        return klp_real(c, n, fl);
    }
    case '%': {
        if (b == 0) return zerodiv(c, n, "float modulo by zero");
        double mod = fmod(a, b);
        if (mod) {
            if ((b < 0) != (mod < 0)) mod += b;
        } else {
            mod = copysign(0.0, b);
        }
        return klp_real(c, n, mod);
    }
    }
    return NULL;
}

json_t *klp_binop(klp_ctx *c, const klp_node *n, const char *op, json_t *a, json_t *b)
{
    if (is_num(a) && is_num(b)) {
        if (is_int(a) && is_int(b)) return int_op(c, n, op, ival(a), ival(b));
        return float_op(c, n, op, fval(a), fval(b));
    }
    if (!strcmp(op, "+") &&
        ((json_is_string(a) && json_is_string(b)) || (json_is_array(a) && json_is_array(b))))
        return concat(c, n, a, b);
    if (!strcmp(op, "*") && (json_is_string(a) || json_is_array(a)) && is_int(b))
        return repeat(c, n, a, ival(b));
    if (!strcmp(op, "*") && (json_is_string(b) || json_is_array(b)) && is_int(a))
        return repeat(c, n, b, ival(a));
    if (!strcmp(op, "%") && json_is_string(a)) {
        klp_fail(c->err, n->line, n->col, "TypeError",
                 "%%-formatting of strings is not supported; use an f-string such as f'{x}'");
        return NULL;
    }
    return unsupported(c, n, op, a, b);
}

json_t *klp_unary(klp_ctx *c, const klp_node *n, const char *op, json_t *a)
{
    if (!is_num(a)) {
        klp_fail(c->err, n->line, n->col, "TypeError", "bad operand type for unary %s: '%s'", op,
                 klp_type_name(a));
        return NULL;
    }
    if (json_is_real(a))
        return klp_real(c, n, op[0] == '-' ? -json_real_value(a) : json_real_value(a));
    long long v = ival(a);
    if (op[0] == '+') return mkint(c, n, v);
    if (v == INT64_MIN) return overflow(c, n);
    return mkint(c, n, -v);
}
