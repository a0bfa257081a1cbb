/* kl_format.c - Python's format-spec mini-language for f-strings, format() and
 * str.format(): [[fill]align][sign][#][0][width][,|_][.precision][type] with the
 * types s, d, b, o, x, X, c, n, e, E, f, F, g, G, %. Widths count code points. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_builtins.h"

typedef struct spec {
    char fill[5];
    char align, sign, type, group;
    int alt, width, prec;
} spec;

static int parse_spec(const char *s, spec *sp)
{
    memset(sp, 0, sizeof *sp);
    strcpy(sp->fill, " ");
    sp->prec = -1;
    /* fill may be a multi-byte character */
    size_t fl = 1;
    if ((unsigned char)s[0] >= 0x80)
        while (fl < 4 && ((unsigned char)s[fl] & 0xc0) == 0x80) fl++;
    if (s[0] && s[fl] && strchr("<>=^", s[fl])) {
        memcpy(sp->fill, s, fl);
        sp->fill[fl] = 0;
        sp->align = s[fl];
        s += fl + 1;
    } else if (s[0] && strchr("<>=^", s[0])) {
        sp->align = *s++;
    }
    if (*s == '+' || *s == '-' || *s == ' ') sp->sign = *s++;
    if (*s == '#') sp->alt = 1, s++;
    if (*s == '0') {
        if (!sp->align) {
            strcpy(sp->fill, "0");
            sp->align = '=';
        }
        s++;
    }
    while (*s >= '0' && *s <= '9') {
        if (sp->width > 100000) return -1;
        sp->width = sp->width * 10 + (*s++ - '0');
    }
    if (*s == ',' || *s == '_') sp->group = *s++;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9')) return -1;
        sp->prec = 0;
        while (*s >= '0' && *s <= '9') {
            if (sp->prec > 1000) return -1;
            sp->prec = sp->prec * 10 + (*s++ - '0');
        }
    }
    if (*s) sp->type = *s++;
    return *s ? -1 : 0;
}

static void group_digits(klp_buf *b, const char *num, char sep)
{
    /* num: [-]digits[.rest] */
    const char *p = num;
    if (*p == '-' || *p == '+' || *p == ' ') klp_buf_add(b, p++, 1);
    size_t nd = strspn(p, "0123456789");
    for (size_t i = 0; i < nd; i++) {
        klp_buf_add(b, p + i, 1);
        if (sep && (nd - i - 1) % 3 == 0 && i + 1 < nd) klp_buf_add(b, &sep, 1);
    }
    klp_buf_puts(b, p + nd);
}

static json_t *pad(const spec *sp, const char *body, size_t n, char def_align)
{
    size_t w = klp_utf8_len(body, n);
    char align = sp->align ? sp->align : def_align;
    klp_buf b = {0};
    size_t fill = sp->width > 0 && (size_t)sp->width > w ? (size_t)sp->width - w : 0;
    size_t left = align == '>' ? fill : align == '^' ? fill / 2 : 0;
    size_t right = fill - left;
    if (align == '=') {
        size_t sgn = n && strchr("+- ", body[0]) ? 1 : 0;
        klp_buf_add(&b, body, sgn);
        for (size_t i = 0; i < fill; i++) klp_buf_puts(&b, sp->fill);
        klp_buf_add(&b, body + sgn, n - sgn);
    } else {
        for (size_t i = 0; i < left; i++) klp_buf_puts(&b, sp->fill);
        klp_buf_add(&b, body, n);
        if (align != '>')
            for (size_t i = 0; i < right; i++) klp_buf_puts(&b, sp->fill);
    }
    json_t *r = b.oom ? NULL : json_stringn(b.s ? b.s : "", b.n);
    klp_buf_free(&b);
    return r;
}

static json_t *bad(klp_ctx *c, const klp_node *n, const char *what, json_t *v, const char *s)
{
    klp_fail(c->err, n->line, n->col, "ValueError", "%s '%s' for object of type '%s'", what,
             s, klp_type_name(v));
    return NULL;
}

static json_t *fmt_int(klp_ctx *c, const klp_node *n, const spec *sp, long long v,
                       const char *s, json_t *orig)
{
    char digits[80];
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    const char *prefix = "";
    switch (sp->type ? sp->type : 'd') {
    case 'd': case 'n': snprintf(digits, sizeof digits, "%llu", u); break;
    case 'x': snprintf(digits, sizeof digits, "%llx", u); prefix = "0x"; break;
    case 'X': snprintf(digits, sizeof digits, "%llX", u); prefix = "0X"; break;
    case 'o': snprintf(digits, sizeof digits, "%llo", u); prefix = "0o"; break;
    case 'b': {
        int k = 0;
        char tmp[72];
        do tmp[k++] = (char)('0' + (u & 1)); while ((u >>= 1) && k < 70);
        for (int i = 0; i < k; i++) digits[i] = tmp[k - 1 - i];
        digits[k] = 0;
        prefix = "0b";
        break;
    }
    case 'c': {
        char enc[5] = {0};
        if (v < 0 || v > 0x10ffff || !klp_utf8_encode((uint32_t)v, enc)) {
            klp_fail(c->err, n->line, n->col, "OverflowError", "%%c arg not in range(0x110000)");
            return NULL;
        }
        return pad(sp, enc, strlen(enc), '<');
    }
    default: return bad(c, n, "Unknown format code", orig, s);
    }
    klp_buf b = {0};
    char sign[2] = {v < 0 ? '-' : (sp->sign == '+' || sp->sign == ' ') ? sp->sign : 0, 0};
    klp_buf_puts(&b, sign);
    if (sp->alt) klp_buf_puts(&b, prefix);
    klp_buf tmp = {0};
    group_digits(&tmp, digits, sp->group);
    klp_buf_puts(&b, tmp.s ? tmp.s : "");
    klp_buf_free(&tmp);
    json_t *r = pad(sp, b.s ? b.s : "", b.n, '>');
    klp_buf_free(&b);
    return r;
}

static json_t *fmt_float(klp_ctx *c, const klp_node *n, const spec *sp, double d,
                         const char *s, json_t *orig)
{
    char t = sp->type, buf[1200];
    int prec = sp->prec < 0 ? 6 : sp->prec;
    double x = d;
    const char *suffix = "";
    if (t == '%') {
        x *= 100;
        t = 'f';
        suffix = "%";
    }
    if (!t) {
        if (sp->prec < 0) {
            klp_buf r = {0};
            klp_float_repr(&r, fabs(d));
            snprintf(buf, sizeof buf, "%s", r.s ? r.s : "0");
            klp_buf_free(&r);
        } else {
            snprintf(buf, sizeof buf, "%.*g", prec ? prec : 1, fabs(x));
        }
    } else if (strchr("eEfFgG", t)) {
        char f[8] = {'%', '.', '*', t == 'F' ? 'f' : t, 0};
        snprintf(buf, sizeof buf, f, prec, fabs(x));
        if (sp->alt && !strchr(buf, '.') && strchr("fF", t)) strcat(buf, ".");
    } else {
        return bad(c, n, "Unknown format code", orig, s);
    }
    klp_buf b = {0};
    char sign[2] = {signbit(d) && d != 0 ? '-' : (sp->sign == '+' || sp->sign == ' ') ? sp->sign : 0, 0};
    if (signbit(d) && d == 0 && t) sign[0] = '-';
    klp_buf_puts(&b, sign);
    group_digits(&b, buf, sp->group);
    klp_buf_puts(&b, suffix);
    json_t *r = pad(sp, b.s ? b.s : "", b.n, '>');
    klp_buf_free(&b);
    return r;
}

/* format(v, spec) -> new str, or NULL with err. */
json_t *klp_format_value(klp_ctx *c, const klp_node *n, json_t *v, const char *s)
{
    spec sp;
    if (!*s || (json_is_boolean(v) && !*s)) {
        klp_buf b = {0};
        klp_str(&b, v);
        json_t *r = b.oom ? NULL : json_stringn(b.s ? b.s : "", b.n);
        klp_buf_free(&b);
        return r;
    }
    if (parse_spec(s, &sp) < 0) {
        klp_fail(c->err, n->line, n->col, "ValueError", "Invalid format specifier '%s' for "
                 "object of type '%s'", s, klp_type_name(v));
        return NULL;
    }
    if (json_is_string(v)) {
        if (sp.type && sp.type != 's') return bad(c, n, "Unknown format code", v, s);
        size_t len = json_string_length(v);
        if (sp.prec >= 0) len = klp_utf8_offset(json_string_value(v), len, (size_t)sp.prec);
        return pad(&sp, json_string_value(v), len, '<');
    }
    if (json_is_integer(v) || json_is_boolean(v)) {
        long long i = json_is_boolean(v) ? json_is_true(v) : (long long)json_integer_value(v);
        if (sp.type && strchr("eEfFgG%", sp.type)) return fmt_float(c, n, &sp, (double)i, s, v);
        if (sp.prec >= 0) {
            klp_fail(c->err, n->line, n->col, "ValueError", "Precision not allowed in integer "
                     "format specifier");
            return NULL;
        }
        return fmt_int(c, n, &sp, i, s, v);
    }
    if (json_is_real(v)) return fmt_float(c, n, &sp, json_real_value(v), s, v);
    klp_fail(c->err, n->line, n->col, "TypeError", "unsupported format string passed to "
             "%s.__format__", klp_type_name(v));
    return NULL;
}

/* str.format(*args): "{}", "{0}", "{0!r:>8}", "{{" and "}}". */
json_t *klp_str_format(klp_ctx *c, const klp_node *n, json_t *self, json_t **args, size_t na)
{
    const char *s = json_string_value(self);
    size_t len = json_string_length(self), auto_i = 0;
    klp_buf b = {0};
    for (size_t i = 0; i < len;) {
        char ch = s[i];
        if ((ch == '{' || ch == '}') && i + 1 < len && s[i + 1] == ch) {
            klp_buf_add(&b, &ch, 1);
            i += 2;
            continue;
        }
        if (ch == '}') {
            klp_fail(c->err, n->line, n->col, "ValueError", "Single '}' encountered in format "
                     "string");
            goto fail;
        }
        if (ch != '{') {
            klp_buf_add(&b, &ch, 1);
            i++;
            continue;
        }
        const char *close = memchr(s + i, '}', len - i);
        if (!close) {
            klp_fail(c->err, n->line, n->col, "ValueError", "Single '{' encountered in format "
                     "string");
            goto fail;
        }
        char field[256];
        size_t fl = (size_t)(close - (s + i + 1));
        if (fl >= sizeof field) fl = sizeof field - 1;
        memcpy(field, s + i + 1, fl);
        field[fl] = 0;
        i = (size_t)(close - s) + 1;
        char *fspec = strchr(field, ':');
        if (fspec) *fspec++ = 0;
        char *conv = strchr(field, '!');
        if (conv) *conv++ = 0;
        size_t idx;
        if (!field[0]) idx = auto_i++;
        else {
            char *end;
            idx = (size_t)strtoul(field, &end, 10);
            if (*end) {
                klp_fail(c->err, n->line, n->col, "KeyError", "'%s' (named fields need "
                         "keyword arguments, which str.format does not take in Kiln)", field);
                goto fail;
            }
        }
        if (idx >= na) {
            klp_fail(c->err, n->line, n->col, "IndexError", "Replacement index %zu out of range "
                     "for positional args tuple", idx);
            goto fail;
        }
        json_t *v = json_incref(args[idx]);
        if (conv && (*conv == 'r' || *conv == 'a' || *conv == 's')) {
            klp_buf r = {0};
            if (*conv == 's') klp_str(&r, v);
            else klp_repr(&r, v);
            json_decref(v);
            v = klpb_str_new(&r);
            if (!v) goto fail;
        }
        json_t *out = klp_format_value(c, n, v, fspec ? fspec : "");
        json_decref(v);
        if (!out) goto fail;
        klp_buf_add(&b, json_string_value(out), json_string_length(out));
        json_decref(out);
        if (b.n > KLP_MAX_STR) {
            klp_fail(c->err, n->line, n->col, "MemoryError", "result would be too large");
            goto fail;
        }
    }
    return klpb_str_new(&b);
fail:
    klp_buf_free(&b);
    return NULL;
}
