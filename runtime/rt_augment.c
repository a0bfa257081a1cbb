/* rt_augment.c - the --augment and --normalize texts (rt_augment.h). */
#include "rt_augment.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITEMS "crop:PAD, flip, cutout:SIZE or none, joined by commas"

/* The integer after "name:" in item (of length len), or -1 when it is not one. */
static long item_int(const char *item, size_t len, size_t skip)
{
    if (len <= skip) return -1;
    long v = 0;
    for (size_t i = skip; i < len; i++) {
        if (!isdigit((unsigned char)item[i]) || v > 100000) return -1;
        v = v * 10 + (item[i] - '0');
    }
    return v;
}

rt_status rt_augment_parse(const char *spec, rt_augment *out, rt_error *err)
{
    rt_augment a = {0};
    int seen_crop = 0, nitems = 0, none = 0;
    const char *p = spec ? spec : "";
    while (*p) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        size_t len = (size_t)(e - p);
        while (len > 0 && p[len - 1] == ' ') len--;
        if (len == 0)
            return RT_ERR(err, RT_EINVAL, "--augment '%s': an empty item (give " ITEMS ")", spec);
        nitems++;
        long v;
        if (len == 4 && !strncmp(p, "none", 4)) {
            none = 1;
        } else if (len == 4 && !strncmp(p, "flip", 4)) {
            if (a.flip) return RT_ERR(err, RT_EINVAL, "--augment '%s': flip given twice", spec);
            a.flip = 1;
        } else if (len >= 5 && !strncmp(p, "crop:", 5)) {
            if (seen_crop) return RT_ERR(err, RT_EINVAL, "--augment '%s': crop given twice", spec);
            if ((v = item_int(p, len, 5)) < 0 || v > 64)
                return RT_ERR(err, RT_EINVAL,
                              "--augment %.*s: the padding must be an integer in [0, 64]", (int)len,
                              p);
            a.crop_pad = (int)v, seen_crop = 1;
        } else if (len >= 7 && !strncmp(p, "cutout:", 7)) {
            if (a.cutout) return RT_ERR(err, RT_EINVAL, "--augment '%s': cutout given twice", spec);
            if ((v = item_int(p, len, 7)) < 1 || v > 4096)
                return RT_ERR(err, RT_EINVAL, "--augment %.*s: the size must be an integer >= 1",
                              (int)len, p);
            a.cutout = (int)v;
        } else {
            return RT_ERR(err, RT_EINVAL, "--augment: unknown item '%.*s' (give " ITEMS ")",
                          (int)len, p);
        }
        p = *e ? e + 1 : e;
        if (*e && !*p)
            return RT_ERR(err, RT_EINVAL, "--augment '%s': an empty item (give " ITEMS ")", spec);
    }
    if (!nitems) return RT_ERR(err, RT_EINVAL, "--augment: empty (give " ITEMS ")");
    if (none && nitems > 1)
        return RT_ERR(err, RT_EINVAL, "--augment '%s': none cannot be combined", spec);
    a.on = !none && (a.crop_pad > 0 || a.flip || a.cutout > 0);
    *out = a;
    return RT_OK;
}

void rt_augment_format(const rt_augment *a, char *buf, size_t n)
{
    if (!n) return;
    buf[0] = '\0';
    if (!a->on) {
        snprintf(buf, n, "none");
        return;
    }
    size_t k = 0;
    if (a->crop_pad > 0) k += (size_t)snprintf(buf + k, n - k, "crop:%d", a->crop_pad);
    if (a->flip && k < n) k += (size_t)snprintf(buf + k, n - k, "%sflip", k ? "," : "");
    if (a->cutout > 0 && k < n) snprintf(buf + k, n - k, "%scutout:%d", k ? "," : "", a->cutout);
}

rt_augment rt_augment_default(const rt_dataset *d)
{
    rt_augment a = {.on = 1, .crop_pad = 4, .flip = d->c >= 3};
    const char *known = rt_dataset_default_augment(d->name);
    rt_error ignored;
    if (known && rt_augment_parse(known, &a, &ignored) != RT_OK) a.flip = 0;
    return a;
}

rt_status rt_augment_check(const rt_augment *a, const rt_dataset *d, rt_error *err)
{
    if (!a->on) return RT_OK;
    char text[64];
    rt_augment_format(a, text, sizeof text);
    if (d->c > 4)
        return RT_ERR(err, RT_EINVAL, "--augment %s: images of %d channels (4 at most)", text,
                      d->c);
    if (a->crop_pad > d->h || a->crop_pad > d->w)
        return RT_ERR(err, RT_EINVAL, "--augment crop:%d: more padding than the %dx%d images",
                      a->crop_pad, d->h, d->w);
    if (a->cutout > (d->h > d->w ? d->h : d->w))
        return RT_ERR(err, RT_EINVAL, "--augment cutout:%d: larger than the %dx%d images",
                      a->cutout, d->h, d->w);
    return RT_OK;
}

rt_status rt_normalize_parse(const char *text, float mean[4], float std[4], int *nch, rt_error *err)
{
    double v[9];
    int n = 0;
    const char *p = text ? text : "";
    for (;;) {
        while (*p == ' ' || *p == '(' || *p == ')' || *p == ',' || *p == '[' || *p == ']') p++;
        if (!*p) break;
        char *end;
        double x = strtod(p, &end);
        if (end == p || !isfinite(x))
            return RT_ERR(err, RT_EINVAL,
                          "--normalize '%s': '%.12s' is not a number (give MEAN,STD per "
                          "channel: 0.1307,0.3081)",
                          text, p);
        if (n == 9) break;
        v[n++] = x;
        p = end;
    }
    if (n == 0 || n % 2 || n > 8)
        return RT_ERR(err, RT_EINVAL,
                      "--normalize '%s': %d numbers; give a mean and a standard deviation a "
                      "channel, the means first (0.1307,0.3081 or 0.49,0.48,0.45,0.25,0.24,0.26)",
                      text, n);
    int c = n / 2;
    for (int i = 0; i < c; i++) {
        if (!(v[c + i] > 0))
            return RT_ERR(err, RT_EINVAL,
                          "--normalize '%s': standard deviation %g of channel %d must be > 0", text,
                          v[c + i], i);
        mean[i] = (float)v[i], std[i] = (float)v[c + i];
    }
    *nch = c;
    return RT_OK;
}
