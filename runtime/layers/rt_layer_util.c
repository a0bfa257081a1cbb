/* rt_layer_util.c - small helpers shared by the rt_layer_*.c files: argument parsing,
 * shape setting and PyTorch's default parameter initialisation. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "rt_layer.h"
#include "rt_rng.h"

/* 0 on success, -1 when s is not a positive integer, 1 when it is one above
 * RT_LAYER_MAX_INT (the caller says "too large" and gives the limit). */
int rtp_parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v <= 0 || (errno && errno != ERANGE)) return -1;
    if (errno == ERANGE || v > RT_LAYER_MAX_INT) return 1;
    *out = (int)v;
    return 0;
}

int rtp_parse_float(const char *s, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int rtp_opt(const char *s, const char *key, const char **val)
{
    size_t n = strlen(key);
    if (strncmp(s, key, n) || s[n] != '=') return 0;
    *val = s + n + 1;
    return 1;
}

int rtp_bias_opt(rt_layer *l, const char *arg, char *why)
{
    const char *v;
    if (!rtp_opt(arg, "bias", &v)) return 0;
    if (!strcasecmp(v, "true") || !strcasecmp(v, "false")) {
        l->no_bias = !strcasecmp(v, "false");
        return 1;
    }
    snprintf(why, RT_LAYER_WHY, "'%s' needs true or false", arg);
    return -1;
}

void rtp_weight_bias(rt_layer *l, int wndim)
{
    l->nparams = l->no_bias ? 1 : 2;
    l->param_name[0] = "weight";
    l->param_ndim[0] = wndim;
    if (l->no_bias) return;
    rtp_shape(&l->param[1], l->k, 1, 1, 1);
    l->param_name[1] = "bias";
    l->param_ndim[1] = 1;
}

const rt_tensor *rtp_bias(const rt_layer *l) { return l->no_bias ? NULL : &l->param[1]; }

rt_tensor *rtp_bias_grad(rt_layer *l) { return l->no_bias ? NULL : &l->grad[1]; }

void rtp_shape(rt_tensor *t, int n, int c, int h, int w)
{
    t->data = NULL;
    t->dtype = RT_F32;
    t->n = n;
    t->c = c;
    t->h = h;
    t->w = w;
}

void rtp_init_uniform(float *dst, size_t n, int fan_in, uint64_t seed, int layer, int param)
{
    /* kaiming_uniform_(a=sqrt(5)): gain = sqrt(2/(1+5)), bound = gain*sqrt(3/fan_in)
     * = 1/sqrt(fan_in); PyTorch's bias bound is the same 1/sqrt(fan_in). */
    float bound = fan_in > 0 ? 1.0f / sqrtf((float)fan_in) : 0.0f;
    rt_rng r = rt_rng_stream(seed, RT_RNG_INIT, (uint32_t)layer, (uint32_t)param);
    rt_rng_fill_uniform(&r, dst, n, -bound, bound);
}

rt_status rtp_pool_parse(rt_layer *l, int argc, char **argv, char *why)
{
    l->stride = 0;
    l->pad = 0;
    int pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (rtp_opt(argv[i], "pad", &v) || rtp_opt(argv[i], "padding", &v)) {
            if (!(v[0] == '0' && !v[1]) && rtp_parse_int(v, &l->pad)) {
                snprintf(why, RT_LAYER_WHY, "'%s' needs a non-negative integer value", argv[i]);
                return RT_EINVAL;
            }
        } else if (rtp_opt(argv[i], "stride", &v)) {
            int rc = rtp_parse_int(v, &l->stride);
            if (rc > 0) {
                snprintf(why, RT_LAYER_WHY, "'%s' is too large (at most %d)", argv[i],
                         RT_LAYER_MAX_INT);
                return RT_EINVAL;
            }
            if (rc) {
                snprintf(why, RT_LAYER_WHY, "'%s' needs a positive integer value", argv[i]);
                return RT_EINVAL;
            }
        } else if (pos == 0) {
            int rc = rtp_parse_int(argv[i], &l->r);
            if (rc > 0) {
                snprintf(why, RT_LAYER_WHY, "window '%s' is too large (at most %d)", argv[i],
                         RT_LAYER_MAX_INT);
                return RT_EINVAL;
            }
            if (rc) {
                snprintf(why, RT_LAYER_WHY, "'%s' is not a positive integer window", argv[i]);
                return RT_EINVAL;
            }
            pos++;
        } else {
            snprintf(why, RT_LAYER_WHY, "unexpected argument '%s'", argv[i]);
            return RT_EINVAL;
        }
    }
    if (!pos) {
        snprintf(why, RT_LAYER_WHY, "missing the window size");
        return RT_EINVAL;
    }
    if (!l->stride) l->stride = l->r;
    return RT_OK;
}

rt_status rtp_need_chw(const rt_layer *l, const char *hint, char *why)
{
    if (!l->in_flat) return RT_OK;
    snprintf(why, RT_LAYER_WHY, "needs a (C,H,W) input but gets %d flat features%s", l->in_c, hint);
    return RT_EINVAL;
}

rt_status rtp_pool_infer(rt_layer *l, char *why)
{
    RT_TRY(rtp_need_chw(l, "", why));
    if (2 * l->pad > l->r) {
        snprintf(why, RT_LAYER_WHY, "pad=%d is more than half the window %d (PyTorch's limit)",
                 l->pad, l->r);
        return RT_EINVAL;
    }
    if (l->r > l->in_h + 2 * l->pad || l->r > l->in_w + 2 * l->pad) {
        snprintf(why, RT_LAYER_WHY, "window %dx%d is larger than the input %dx%dx%d", l->r, l->r,
                 l->in_c, l->in_h, l->in_w);
        return RT_EINVAL;
    }
    l->out_c = l->in_c;
    l->out_h = (l->in_h + 2 * l->pad - l->r) / l->stride + 1;
    l->out_w = (l->in_w + 2 * l->pad - l->r) / l->stride + 1;
    l->out_flat = 0;
    return RT_OK;
}

void rtp_pool_desc(const rt_layer *l, int N, rt_pool_desc *d)
{
    *d = (rt_pool_desc){.N = N,
                        .C = l->in_c,
                        .H = l->in_h,
                        .W = l->in_w,
                        .R = l->r,
                        .S = l->r,
                        .stride = l->stride,
                        .P = l->out_h,
                        .Q = l->out_w,
                        .pad = l->pad};
}

void rtp_pool_format(const rt_layer *l, const char *kind, char *buf, size_t n)
{
    if (l->pad) snprintf(buf, n, "%s %d stride=%d pad=%d", kind, l->r, l->stride, l->pad);
    else snprintf(buf, n, "%s %d stride=%d", kind, l->r, l->stride);
}

rt_status rtp_noargs(int argc, char **argv, char *why)
{
    if (argc == 0) return RT_OK;
    snprintf(why, RT_LAYER_WHY, "takes no arguments, got '%s'", argv[0]);
    return RT_EINVAL;
}

rt_status rtp_same_shape(rt_layer *l, char *why)
{
    l->out_c = l->in_c;
    l->out_h = l->in_h;
    l->out_w = l->in_w;
    l->out_flat = l->in_flat;
    return RT_OK;
}
