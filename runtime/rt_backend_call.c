/* rt_backend_call.c - the one place backend ops are called: the arguments are checked
 * here, then the backend's table is called.
 *
 * Every backend therefore refuses the same calls with the same words (RT_EINVAL naming
 * the op and the tensor), and a backend op is written without argument checks. What a
 * backend still checks itself is what needs the data: label values, the epoch order and
 * the loss scale are read on the CPU, and left to the kernels' defensive rules on a
 * device (reading them back would synchronise every step).
 */
#include "rt_backend.h"

#include <math.h>

static size_t numel_of(const rt_tensor *t) { return t ? rt_tensor_numel(t) : 0; }

/* A tensor is bound and holds at least numel elements. */
static rt_status check(const rt_tensor *t, size_t numel, const char *what, rt_error *err)
{
    if (!t || !t->data) return RT_ERR(err, RT_EINVAL, "%s: unbound tensor", what);
    if (rt_tensor_numel(t) < numel)
        return RT_ERR(err, RT_EINVAL, "%s: tensor has %zu elements, op needs %zu", what,
                      rt_tensor_numel(t), numel);
    return RT_OK;
}

/* An optional op the backend may leave NULL. */
static rt_status present(const rt_backend *b, int has, const char *name, rt_error *err)
{
    if (!has) return RT_ERR(err, RT_EINVAL, "the %s backend has no %s op", b->ops->name, name);
    return RT_OK;
}

/* ---- memory ---- */

rt_status rt_backend_upload(rt_backend *b, rt_tensor *dst, const void *host_src, size_t bytes,
                            rt_error *err)
{
    if (!dst || !dst->data || bytes > rt_tensor_bytes(dst))
        return RT_ERR(err, RT_EINVAL, "upload of %zu bytes into a %zu-byte tensor", bytes,
                      dst && dst->data ? rt_tensor_bytes(dst) : 0);
    if (bytes && !host_src) return RT_ERR(err, RT_EINVAL, "upload from no host memory");
    return b->ops->upload(b, dst, host_src, bytes, err);
}

rt_status rt_backend_download(rt_backend *b, void *host_dst, const rt_tensor *src, size_t bytes,
                              rt_error *err)
{
    if (!src || !src->data || bytes > rt_tensor_bytes(src))
        return RT_ERR(err, RT_EINVAL, "download of %zu bytes from a %zu-byte tensor", bytes,
                      src && src->data ? rt_tensor_bytes(src) : 0);
    if (bytes && !host_dst) return RT_ERR(err, RT_EINVAL, "download into no host memory");
    return b->ops->download(b, host_dst, src, bytes, err);
}

rt_status rt_backend_fill(rt_backend *b, rt_tensor *dst, float value, rt_error *err)
{
    RT_TRY(check(dst, 0, "fill", err));
    return b->ops->fill(b, dst, value, err);
}

rt_status rt_backend_copy(rt_backend *b, rt_tensor *dst, const rt_tensor *src, rt_error *err)
{
    RT_TRY(check(src, 0, "copy source", err));
    RT_TRY(check(dst, rt_tensor_numel(src), "copy", err));
    return b->ops->copy(b, dst, src, err);
}

/* add and add_relu: whether the backend has the op, its name, its three tensors */
static rt_status add_check(const rt_backend *b, int has, int relu, const rt_tensor *dst,
                           const rt_tensor *a, const rt_tensor *x, rt_error *err)
{
    RT_TRY(present(b, has, relu ? "add_relu" : "add", err));
    size_t n = numel_of(dst);
    RT_TRY(check(dst, n, relu ? "add_relu output" : "add output", err));
    RT_TRY(check(a, n, relu ? "add_relu input" : "add input", err));
    return check(x, n, relu ? "add_relu input" : "add input", err);
}

rt_status rt_backend_add(rt_backend *b, rt_tensor *dst, const rt_tensor *a, const rt_tensor *x,
                         rt_error *err)
{
    RT_TRY(add_check(b, b->ops->add != NULL, 0, dst, a, x, err));
    return b->ops->add(b, dst, a, x, err);
}

rt_status rt_backend_add_relu(rt_backend *b, rt_tensor *dst, const rt_tensor *a, const rt_tensor *x,
                              rt_error *err)
{
    RT_TRY(add_check(b, b->ops->add_relu != NULL, 1, dst, a, x, err));
    return b->ops->add_relu(b, dst, a, x, err);
}

/* ---- convolution ---- */

static rt_status conv_check(const rt_conv_desc *d, const rt_tensor *x, const rt_tensor *y,
                            const rt_tensor *w, rt_error *err)
{
    RT_TRY(check(x, (size_t)d->N * d->C * d->H * d->W, "conv2d input", err));
    RT_TRY(check(y, (size_t)d->N * d->K * d->P * d->Q, "conv2d output", err));
    if (d->groups < 0 || d->C % rt_conv_groups(d) || d->K % rt_conv_groups(d))
        return RT_ERR(err, RT_EINVAL, "conv2d: %d groups do not divide C=%d and K=%d", d->groups,
                      d->C, d->K);
    RT_TRY(check(w, rt_conv_weight_numel(d), "conv2d weight", err));
    if (d->stride < 1 || d->pad < 0 || d->P != (d->H + 2 * d->pad - d->R) / d->stride + 1 ||
        d->Q != (d->W + 2 * d->pad - d->S) / d->stride + 1)
        return RT_ERR(err, RT_EINVAL, "conv2d: inconsistent descriptor (P=%d, Q=%d)", d->P, d->Q);
    return RT_OK;
}

rt_status rt_backend_conv2d_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                                const rt_tensor *w, const rt_tensor *bias, const rt_conv_desc *d,
                                rt_error *err)
{
    RT_TRY(conv_check(d, in, out, w, err));
    if (bias) RT_TRY(check(bias, (size_t)d->K, "conv2d bias", err));
    return b->ops->conv2d_fwd(b, out, in, w, bias, d, err);
}

rt_status rt_backend_conv2d_fwd_moments(rt_backend *b, rt_tensor *out, rt_tensor *moments,
                                        const rt_tensor *in, const rt_tensor *w,
                                        const rt_tensor *bias, const rt_conv_desc *d, rt_error *err)
{
    RT_TRY(present(b, b->ops->conv2d_fwd_moments != NULL, "conv2d_fwd_moments", err));
    RT_TRY(conv_check(d, in, out, w, err));
    if (bias) RT_TRY(check(bias, (size_t)d->K, "conv2d bias", err));
    RT_TRY(check(moments, (size_t)d->N * d->K * RT_MOMENT_FLOATS, "conv2d moments", err));
    return b->ops->conv2d_fwd_moments(b, out, moments, in, w, bias, d, err);
}

rt_status rt_backend_conv2d_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                     const rt_tensor *w, const rt_conv_desc *d, rt_error *err)
{
    RT_TRY(conv_check(d, din, dout, w, err));
    return b->ops->conv2d_bwd_data(b, din, dout, w, d, err);
}

rt_status rt_backend_conv2d_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                       const rt_tensor *dout, const rt_tensor *in,
                                       const rt_conv_desc *d, rt_error *err)
{
    RT_TRY(conv_check(d, in, dout, dw, err));
    if (dbias) RT_TRY(check(dbias, (size_t)d->K, "conv2d bias gradient", err));
    return b->ops->conv2d_bwd_filter(b, dw, dbias, dout, in, d, err);
}

/* ---- pooling ---- */

static rt_status pool_check(const rt_tensor *x, const rt_tensor *y, const rt_pool_desc *d,
                            rt_error *err)
{
    if (!d->adaptive && (d->pad < 0 || 2 * d->pad > d->R || 2 * d->pad > d->S || d->stride < 1 ||
                         d->P != (d->H + 2 * d->pad - d->R) / d->stride + 1 ||
                         d->Q != (d->W + 2 * d->pad - d->S) / d->stride + 1))
        return RT_ERR(err, RT_EINVAL, "pool: window %dx%d stride %d pad %d on %dx%d gives no %dx%d",
                      d->R, d->S, d->stride, d->pad, d->H, d->W, d->P, d->Q);
    if (d->adaptive && (d->P < 1 || d->Q < 1))
        return RT_ERR(err, RT_EINVAL, "adaptive pool: output %dx%d", d->P, d->Q);
    RT_TRY(check(x, (size_t)d->N * d->C * d->H * d->W, "pool input", err));
    return check(y, (size_t)d->N * d->C * d->P * d->Q, "pool output", err);
}

rt_status rt_backend_maxpool_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                                 const rt_pool_desc *d, rt_error *err)
{
    RT_TRY(pool_check(in, out, d, err));
    return b->ops->maxpool_fwd(b, out, in, d, err);
}

rt_status rt_backend_maxpool_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                 const rt_tensor *in, const rt_tensor *out, const rt_pool_desc *d,
                                 rt_error *err)
{
    RT_TRY(pool_check(in, out, d, err));
    RT_TRY(pool_check(din, dout, d, err));
    return b->ops->maxpool_bwd(b, din, dout, in, out, d, err);
}

rt_status rt_backend_avgpool_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                                 const rt_pool_desc *d, rt_error *err)
{
    RT_TRY(pool_check(in, out, d, err));
    return b->ops->avgpool_fwd(b, out, in, d, err);
}

rt_status rt_backend_avgpool_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                 const rt_pool_desc *d, rt_error *err)
{
    RT_TRY(pool_check(din, dout, d, err));
    return b->ops->avgpool_bwd(b, din, dout, d, err);
}

/* ---- activations and dropout ---- */

rt_status rt_backend_relu_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in, float slope,
                              rt_error *err)
{
    size_t n = numel_of(in);
    RT_TRY(check(in, n, "relu input", err));
    RT_TRY(check(out, n, "relu output", err));
    return b->ops->relu_fwd(b, out, in, slope, err);
}

rt_status rt_backend_relu_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                              const rt_tensor *out, float slope, rt_error *err)
{
    size_t n = numel_of(out);
    RT_TRY(check(out, n, "relu output", err));
    RT_TRY(check(dout, n, "relu output gradient", err));
    RT_TRY(check(din, n, "relu input gradient", err));
    return b->ops->relu_bwd(b, din, dout, out, slope, err);
}

static rt_status act_kind_check(rt_act_kind kind, rt_error *err)
{
    if ((int)kind < 0 || kind >= RT_ACT_COUNT)
        return RT_ERR(err, RT_EINVAL, "activation: unknown kind %d", (int)kind);
    return RT_OK;
}

rt_status rt_backend_act_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in, rt_act_kind kind,
                             rt_error *err)
{
    size_t n = numel_of(in);
    RT_TRY(act_kind_check(kind, err));
    RT_TRY(present(b, b->ops->act_fwd != NULL, "act_fwd", err));
    RT_TRY(check(in, n, "activation input", err));
    RT_TRY(check(out, n, "activation output", err));
    return b->ops->act_fwd(b, out, in, kind, err);
}

rt_status rt_backend_act_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                             const rt_tensor *in, const rt_tensor *out, rt_act_kind kind,
                             rt_error *err)
{
    size_t n = numel_of(out);
    RT_TRY(act_kind_check(kind, err));
    RT_TRY(present(b, b->ops->act_bwd != NULL, "act_bwd", err));
    RT_TRY(check(in, n, "activation input", err));
    RT_TRY(check(out, n, "activation output", err));
    RT_TRY(check(dout, n, "activation output gradient", err));
    RT_TRY(check(din, n, "activation input gradient", err));
    return b->ops->act_bwd(b, din, dout, in, out, kind, err);
}

rt_status rt_backend_dropout_fwd(rt_backend *b, rt_tensor *out, rt_tensor *mask,
                                 const rt_tensor *in, const rt_dropout_desc *d, rt_error *err)
{
    size_t n = (size_t)d->N * d->C * d->H * d->W;
    RT_TRY(check(in, n, "dropout input", err));
    RT_TRY(check(out, n, "dropout output", err));
    RT_TRY(check(mask, n, "dropout mask", err));
    if (!(d->p >= 0.0f && d->p < 1.0f))
        return RT_ERR(err, RT_EINVAL, "dropout p=%g must be in [0, 1)", (double)d->p);
    return b->ops->dropout_fwd(b, out, mask, in, d, err);
}

rt_status rt_backend_dropout_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                 const rt_tensor *mask, rt_error *err)
{
    size_t n = numel_of(mask);
    RT_TRY(check(mask, n, "dropout mask", err));
    RT_TRY(check(dout, n, "dropout output gradient", err));
    RT_TRY(check(din, n, "dropout input gradient", err));
    return b->ops->dropout_bwd(b, din, dout, mask, err);
}

/* ---- batch normalisation ---- */

static rt_status bn_check(const rt_tensor *x, const rt_tensor *y, const char *ywhat,
                          const rt_bn_desc *d, rt_error *err)
{
    size_t n = (size_t)d->N * d->C * d->H * d->W;
    RT_TRY(check(x, n, "batchnorm input", err));
    return check(y, n, ywhat, err);
}

/* A norm with an add fused writes out in the pass that reads in and skip: out may be
 * neither (rt_backend.h). */
static rt_status bn_add_apart(const rt_tensor *out, const rt_tensor *in, const rt_tensor *skip,
                              rt_error *err)
{
    if (out->data == in->data || out->data == skip->data)
        return RT_ERR(err, RT_EINVAL, "batchnorm + add: the output aliases an input");
    return RT_OK;
}

/* The tensors bn_fwd_train, bn_add_fwd_train and bn_fwd_train_moments share. */
static rt_status bn_train_check(rt_tensor *out, rt_tensor *save_mean, rt_tensor *save_invstd,
                                rt_tensor *running_mean, rt_tensor *running_var,
                                const rt_tensor *in, const rt_tensor *gamma, const rt_tensor *beta,
                                const rt_bn_desc *d, rt_error *err)
{
    const size_t C = (size_t)d->C;
    RT_TRY(bn_check(in, out, "batchnorm output", d, err));
    RT_TRY(check(save_mean, C, "batchnorm mean", err));
    RT_TRY(check(save_invstd, C, "batchnorm invstd", err));
    RT_TRY(check(running_mean, C, "batchnorm running mean", err));
    RT_TRY(check(running_var, C, "batchnorm running var", err));
    RT_TRY(check(gamma, C, "batchnorm weight", err));
    return check(beta, C, "batchnorm bias", err);
}

rt_status rt_backend_bn_fwd_train(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                                  rt_tensor *save_invstd, rt_tensor *running_mean,
                                  rt_tensor *running_var, const rt_tensor *in,
                                  const rt_tensor *gamma, const rt_tensor *beta,
                                  const rt_bn_desc *d, rt_error *err)
{
    RT_TRY(bn_train_check(out, save_mean, save_invstd, running_mean, running_var, in, gamma, beta,
                          d, err));
    return b->ops->bn_fwd_train(b, out, save_mean, save_invstd, running_mean, running_var, in,
                                gamma, beta, d, err);
}

rt_status rt_backend_bn_add_fwd_train(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                                      rt_tensor *save_invstd, rt_tensor *running_mean,
                                      rt_tensor *running_var, const rt_tensor *in,
                                      const rt_tensor *skip, const rt_tensor *gamma,
                                      const rt_tensor *beta, const rt_bn_desc *d, rt_error *err)
{
    RT_TRY(present(b, b->ops->bn_add_fwd_train != NULL, "bn_add_fwd_train", err));
    RT_TRY(bn_train_check(out, save_mean, save_invstd, running_mean, running_var, in, gamma, beta,
                          d, err));
    RT_TRY(bn_check(in, skip, "batchnorm + add input", d, err));
    RT_TRY(bn_add_apart(out, in, skip, err));
    return b->ops->bn_add_fwd_train(b, out, save_mean, save_invstd, running_mean, running_var, in,
                                    skip, gamma, beta, d, err);
}

rt_status rt_backend_bn_fwd_train_moments(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                                          rt_tensor *save_invstd, rt_tensor *running_mean,
                                          rt_tensor *running_var, const rt_tensor *in,
                                          const rt_tensor *skip, const rt_tensor *gamma,
                                          const rt_tensor *beta, const rt_tensor *moments,
                                          const rt_bn_desc *d, rt_error *err)
{
    RT_TRY(present(b, b->ops->bn_fwd_train_moments != NULL, "bn_fwd_train_moments", err));
    RT_TRY(bn_train_check(out, save_mean, save_invstd, running_mean, running_var, in, gamma, beta,
                          d, err));
    if (skip) RT_TRY(bn_check(in, skip, "batchnorm + add input", d, err));
    if (skip) RT_TRY(bn_add_apart(out, in, skip, err));
    RT_TRY(check(moments, (size_t)d->N * d->C * RT_MOMENT_FLOATS, "batchnorm moments", err));
    return b->ops->bn_fwd_train_moments(b, out, save_mean, save_invstd, running_mean, running_var,
                                        in, skip, gamma, beta, moments, d, err);
}

rt_status rt_backend_bn_fwd_eval(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                                 const rt_tensor *gamma, const rt_tensor *beta,
                                 const rt_tensor *running_mean, const rt_tensor *running_var,
                                 const rt_bn_desc *d, rt_error *err)
{
    const size_t C = (size_t)d->C;
    RT_TRY(bn_check(in, out, "batchnorm output", d, err));
    RT_TRY(check(running_mean, C, "batchnorm running mean", err));
    RT_TRY(check(running_var, C, "batchnorm running var", err));
    RT_TRY(check(gamma, C, "batchnorm weight", err));
    RT_TRY(check(beta, C, "batchnorm bias", err));
    return b->ops->bn_fwd_eval(b, out, in, gamma, beta, running_mean, running_var, d, err);
}

/* The tensors bn_bwd and bn_relu_bwd share. */
static rt_status bn_bwd_check(rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                              const rt_tensor *dout, const rt_tensor *in, const rt_tensor *gamma,
                              const rt_tensor *save_mean, const rt_tensor *save_invstd,
                              const rt_bn_desc *d, rt_error *err)
{
    const size_t C = (size_t)d->C;
    RT_TRY(bn_check(in, dout, "batchnorm output gradient", d, err));
    RT_TRY(check(din, (size_t)d->N * C * d->H * d->W, "batchnorm input gradient", err));
    RT_TRY(check(dgamma, C, "batchnorm weight gradient", err));
    RT_TRY(check(dbeta, C, "batchnorm bias gradient", err));
    RT_TRY(check(gamma, C, "batchnorm weight", err));
    RT_TRY(check(save_mean, C, "batchnorm mean", err));
    return check(save_invstd, C, "batchnorm invstd", err);
}

rt_status rt_backend_bn_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                            const rt_tensor *dout, const rt_tensor *in, const rt_tensor *gamma,
                            const rt_tensor *save_mean, const rt_tensor *save_invstd,
                            const rt_bn_desc *d, rt_error *err)
{
    RT_TRY(bn_bwd_check(din, dgamma, dbeta, dout, in, gamma, save_mean, save_invstd, d, err));
    return b->ops->bn_bwd(b, din, dgamma, dbeta, dout, in, gamma, save_mean, save_invstd, d, err);
}

rt_status rt_backend_bn_relu_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                                 const rt_tensor *dout, const rt_tensor *in, const rt_tensor *gamma,
                                 const rt_tensor *beta, const rt_tensor *save_mean,
                                 const rt_tensor *save_invstd, const rt_bn_desc *d, rt_error *err)
{
    RT_TRY(present(b, b->ops->bn_relu_bwd != NULL, "bn_relu_bwd", err));
    RT_TRY(bn_bwd_check(din, dgamma, dbeta, dout, in, gamma, save_mean, save_invstd, d, err));
    RT_TRY(check(beta, (size_t)d->C, "batchnorm bias", err));
    return b->ops->bn_relu_bwd(b, din, dgamma, dbeta, dout, in, gamma, beta, save_mean, save_invstd,
                               d, err);
}

rt_status rt_backend_bn_add_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                                rt_tensor *keep, const rt_tensor *dout, const rt_tensor *dout2,
                                const rt_tensor *out, const rt_tensor *in, const rt_tensor *gamma,
                                const rt_tensor *save_mean, const rt_tensor *save_invstd,
                                const rt_bn_desc *d, rt_error *err)
{
    RT_TRY(present(b, b->ops->bn_add_bwd != NULL, "bn_add_bwd", err));
    RT_TRY(bn_bwd_check(din, dgamma, dbeta, dout, in, gamma, save_mean, save_invstd, d, err));
    RT_TRY(bn_check(in, keep, "batchnorm + add kept gradient", d, err));
    RT_TRY(bn_check(in, out, "batchnorm + add output", d, err));
    if (dout2) RT_TRY(bn_check(in, dout2, "batchnorm + add second output gradient", d, err));
    return b->ops->bn_add_bwd(b, din, dgamma, dbeta, keep, dout, dout2, out, in, gamma, save_mean,
                              save_invstd, d, err);
}

/* ---- dense ---- */

static rt_status dense_check(const rt_tensor *x, const rt_tensor *y, const rt_tensor *w,
                             const rt_dense_desc *d, rt_error *err)
{
    RT_TRY(check(x, (size_t)d->N * d->F, "dense input", err));
    RT_TRY(check(y, (size_t)d->N * d->O, "dense output", err));
    return check(w, (size_t)d->O * d->F, "dense weight", err);
}

rt_status rt_backend_dense_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                               const rt_tensor *w, const rt_tensor *bias, const rt_dense_desc *d,
                               rt_error *err)
{
    RT_TRY(dense_check(in, out, w, d, err));
    if (bias) RT_TRY(check(bias, (size_t)d->O, "dense bias", err));
    return b->ops->dense_fwd(b, out, in, w, bias, d, err);
}

rt_status rt_backend_dense_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                    const rt_tensor *w, const rt_dense_desc *d, rt_error *err)
{
    RT_TRY(dense_check(din, dout, w, d, err));
    return b->ops->dense_bwd_data(b, din, dout, w, d, err);
}

rt_status rt_backend_dense_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                      const rt_tensor *dout, const rt_tensor *in,
                                      const rt_dense_desc *d, rt_error *err)
{
    RT_TRY(dense_check(in, dout, dw, d, err));
    if (dbias) RT_TRY(check(dbias, (size_t)d->O, "dense bias gradient", err));
    return b->ops->dense_bwd_filter(b, dw, dbias, dout, in, d, err);
}

/* ---- softmax cross-entropy ---- */

static rt_status xent_check(const rt_tensor *probs, const char *pwhat, const rt_tensor *labels,
                            const rt_xent_desc *d, rt_error *err)
{
    if (d->N < 1 || d->L < 1)
        return RT_ERR(err, RT_EINVAL, "xent: %d samples, %d classes", d->N, d->L);
    if (!(d->smoothing >= 0.0f && d->smoothing < 1.0f))
        return RT_ERR(err, RT_EINVAL, "xent: label smoothing %g outside [0, 1)",
                      (double)d->smoothing);
    RT_TRY(check(probs, (size_t)d->N * d->L, pwhat, err));
    return check(labels, (size_t)d->N, "xent labels", err);
}

rt_status rt_backend_xent_fwd(rt_backend *b, rt_tensor *loss, rt_tensor *probs,
                              const rt_tensor *logits, const rt_tensor *labels,
                              const rt_xent_desc *d, rt_error *err)
{
    RT_TRY(xent_check(logits, "xent logits", labels, d, err));
    RT_TRY(check(probs, (size_t)d->N * d->L, "xent probs", err));
    RT_TRY(check(loss, (size_t)d->N, "xent loss", err));
    return b->ops->xent_fwd(b, loss, probs, logits, labels, d, err);
}

rt_status rt_backend_xent_bwd(rt_backend *b, rt_tensor *dlogits, const rt_tensor *probs,
                              const rt_tensor *labels, float scale, const rt_xent_desc *d,
                              rt_error *err)
{
    RT_TRY(xent_check(probs, "xent probs", labels, d, err));
    RT_TRY(check(dlogits, (size_t)d->N * d->L, "xent logits gradient", err));
    return b->ops->xent_bwd(b, dlogits, probs, labels, scale, d, err);
}

/* ---- optimisers ---- */

static rt_status adam_check(const rt_tensor *param, const rt_tensor *m, const rt_tensor *v,
                            const rt_tensor *grad, rt_error *err)
{
    size_t n = numel_of(param);
    RT_TRY(check(param, n, "adam param", err));
    RT_TRY(check(m, n, "adam m", err));
    RT_TRY(check(v, n, "adam v", err));
    return check(grad, n, "adam grad", err);
}

static rt_status sgd_check(const rt_tensor *param, const rt_tensor *momentum_buf,
                           const rt_tensor *grad, const rt_sgd_desc *d, rt_error *err)
{
    size_t n = numel_of(param);
    RT_TRY(check(param, n, "sgd param", err));
    RT_TRY(check(grad, n, "sgd grad", err));
    if (d->momentum != 0.0) RT_TRY(check(momentum_buf, n, "sgd momentum buffer", err));
    return RT_OK;
}

rt_status rt_backend_adam_update(rt_backend *b, rt_tensor *param, rt_tensor *m, rt_tensor *v,
                                 const rt_tensor *grad, const rt_adam_desc *d, rt_error *err)
{
    RT_TRY(adam_check(param, m, v, grad, err));
    if (d->step < 1) return RT_ERR(err, RT_EINVAL, "adam step must be >= 1");
    return b->ops->adam_update(b, param, m, v, grad, d, err);
}

rt_status rt_backend_sgd_update(rt_backend *b, rt_tensor *param, rt_tensor *momentum_buf,
                                const rt_tensor *grad, const rt_sgd_desc *d, rt_error *err)
{
    RT_TRY(sgd_check(param, momentum_buf, grad, d, err));
    if (d->step < 1) return RT_ERR(err, RT_EINVAL, "sgd step must be >= 1");
    return b->ops->sgd_update(b, param, momentum_buf, grad, d, err);
}

rt_status rt_backend_clip_grad(rt_backend *b, rt_tensor *grad, rt_tensor *norm,
                               const rt_clip_desc *d, rt_error *err)
{
    RT_TRY(present(b, b->ops->clip_grad != NULL, "clip_grad", err));
    if (!(d->max_norm >= 0.0) || !(d->clip_value >= 0.0) || !isfinite(d->max_norm) ||
        !isfinite(d->clip_value))
        return RT_ERR(err, RT_EINVAL, "clip_grad: max norm %g and clip value %g must be >= 0",
                      d->max_norm, d->clip_value);
    RT_TRY(check(grad, numel_of(grad), "clip_grad grad", err));
    RT_TRY(check(norm, RT_CLIP_WORDS, "clip_grad norm", err));
    return b->ops->clip_grad(b, grad, norm, d, err);
}

/* ---- the trainer's device path ---- */

rt_status rt_backend_gather_batch(rt_backend *b, rt_tensor *images, rt_tensor *labels,
                                  const rt_tensor *data, const rt_tensor *data_labels,
                                  const rt_tensor *order, const rt_gather_desc *d, rt_error *err)
{
    RT_TRY(present(b, b->ops->gather_batch != NULL, "gather_batch", err));
    if (d->n < 1 || d->C < 1 || d->H < 1 || d->W < 1 || d->count < 0 || d->start < 0 ||
        d->start + d->count > d->n)
        return RT_ERR(err, RT_EINVAL,
                      "gather_batch: positions [%lld, %lld) outside a data set "
                      "of %d images of %dx%dx%d",
                      (long long)d->start, (long long)d->start + d->count, d->n, d->C, d->H, d->W);
    if (d->augment && (d->C > 4 || d->pad < 0 || d->pad > 64 || d->cutout < 0 ||
                       d->cutout > (d->H > d->W ? d->H : d->W)))
        return RT_ERR(err, RT_EINVAL,
                      "gather_batch: augmentation needs C <= 4, pad in "
                      "[0, 64] and cutout in [0, %d] (got C %d, pad %d, cutout %d)",
                      d->H > d->W ? d->H : d->W, d->C, d->pad, d->cutout);
    size_t img = (size_t)d->C * d->H * d->W;
    RT_TRY(check(images, (size_t)d->count * img, "gather_batch images", err));
    RT_TRY(check(labels, (size_t)d->count, "gather_batch labels", err));
    RT_TRY(check(data, (size_t)d->n * img, "gather_batch data", err));
    RT_TRY(check(data_labels, (size_t)d->n, "gather_batch data labels", err));
    RT_TRY(check(order, (size_t)d->n, "gather_batch order", err));
    return b->ops->gather_batch(b, images, labels, data, data_labels, order, d, err);
}

rt_status rt_backend_xent_stats(rt_backend *b, rt_tensor *stats, int row, const rt_tensor *loss,
                                const rt_tensor *probs, const rt_tensor *labels,
                                const rt_xent_desc *d, rt_error *err)
{
    RT_TRY(present(b, b->ops->xent_stats != NULL, "xent_stats", err));
    if (row < 0 || d->N < 1 || d->L < 1)
        return RT_ERR(err, RT_EINVAL, "xent_stats: row %d, %d samples, %d classes", row, d->N,
                      d->L);
    RT_TRY(check(loss, (size_t)d->N, "xent_stats loss", err));
    RT_TRY(check(probs, (size_t)d->N * d->L, "xent_stats probs", err));
    RT_TRY(check(labels, (size_t)d->N, "xent_stats labels", err));
    RT_TRY(check(stats, (size_t)(row + 1) * RT_STEP_STATS, "xent_stats ring", err));
    return b->ops->xent_stats(b, stats, row, loss, probs, labels, d, err);
}

rt_status rt_backend_bytes_to_f32(rt_backend *b, rt_tensor *dst, const rt_tensor *src,
                                  const rt_tensor *lut, int C, size_t plane, rt_error *err)
{
    RT_TRY(present(b, b->ops->bytes_to_f32 != NULL, "bytes_to_f32", err));
    size_t n = dst ? rt_tensor_numel(dst) : 0;
    if (C < 1 || C > 4 || plane == 0 || n % ((size_t)C * plane) != 0)
        return RT_ERR(err, RT_EINVAL,
                      "bytes_to_f32: %zu floats are not whole images of %d planes of %zu", n, C,
                      plane);
    RT_TRY(check(dst, n, "bytes_to_f32 floats", err));
    RT_TRY(check(src, (n + 3) / 4, "bytes_to_f32 bytes", err));
    RT_TRY(check(lut, (size_t)C * 256, "bytes_to_f32 table", err));
    return b->ops->bytes_to_f32(b, dst, src, lut, C, plane, err);
}

/* ---- dynamic loss scaling ---- */

static rt_status amp_check(const rt_tensor *amp, const rt_tensor *t, const char *what,
                           rt_error *err)
{
    RT_TRY(check(amp, RT_AMP_WORDS, "loss-scaling state", err));
    return check(t, numel_of(t), what, err);
}

rt_status rt_backend_amp_scale(rt_backend *b, rt_tensor *t, const rt_tensor *amp, rt_error *err)
{
    RT_TRY(present(b, b->ops->amp_scale != NULL, "amp_scale", err));
    RT_TRY(amp_check(amp, t, "amp_scale tensor", err));
    return b->ops->amp_scale(b, t, amp, err);
}

rt_status rt_backend_amp_unscale(rt_backend *b, rt_tensor *grad, rt_tensor *amp, rt_error *err)
{
    RT_TRY(present(b, b->ops->amp_unscale != NULL, "amp_unscale", err));
    RT_TRY(amp_check(amp, grad, "amp_unscale gradient", err));
    return b->ops->amp_unscale(b, grad, amp, err);
}

rt_status rt_backend_amp_adam_update(rt_backend *b, rt_tensor *param, rt_tensor *m, rt_tensor *v,
                                     const rt_tensor *grad, rt_tensor *amp, const rt_adam_desc *d,
                                     rt_error *err)
{
    RT_TRY(present(b, b->ops->amp_adam_update != NULL, "amp_adam_update", err));
    RT_TRY(check(amp, RT_AMP_WORDS, "loss-scaling state", err));
    RT_TRY(adam_check(param, m, v, grad, err));
    return b->ops->amp_adam_update(b, param, m, v, grad, amp, d, err);
}

rt_status rt_backend_amp_sgd_update(rt_backend *b, rt_tensor *param, rt_tensor *momentum_buf,
                                    const rt_tensor *grad, rt_tensor *amp, const rt_sgd_desc *d,
                                    rt_error *err)
{
    RT_TRY(present(b, b->ops->amp_sgd_update != NULL, "amp_sgd_update", err));
    RT_TRY(check(amp, RT_AMP_WORDS, "loss-scaling state", err));
    RT_TRY(sgd_check(param, momentum_buf, grad, d, err));
    return b->ops->amp_sgd_update(b, param, momentum_buf, grad, amp, d, err);
}

/* ---- CUDA graphs ---- */

static rt_status vars_check(const rt_step_vars *v, const char *op, rt_error *err)
{
    if (!v || v->start < 0 || v->row < 0 || !(v->lr >= 0.0) || v->step < 1)
        return RT_ERR(err, RT_EINVAL, "%s: step values missing or out of range", op);
    return RT_OK;
}

rt_status rt_backend_graph_begin(rt_backend *b, const rt_step_vars *v, rt_error *err)
{
    RT_TRY(present(b, b->ops->graph_begin != NULL, "graph_begin", err));
    RT_TRY(vars_check(v, "graph_begin", err));
    return b->ops->graph_begin(b, v, err);
}

rt_status rt_backend_graph_end(rt_backend *b, rt_graph **out, rt_error *err)
{
    RT_TRY(present(b, b->ops->graph_end != NULL, "graph_end", err));
    *out = NULL;
    return b->ops->graph_end(b, out, err);
}

rt_status rt_backend_graph_launch(rt_backend *b, rt_graph *g, const rt_step_vars *v, int *ran,
                                  rt_error *err)
{
    *ran = 0;
    RT_TRY(present(b, b->ops->graph_launch != NULL, "graph_launch", err));
    if (!g) return RT_ERR(err, RT_EINVAL, "graph_launch: no graph");
    RT_TRY(vars_check(v, "graph_launch", err));
    return b->ops->graph_launch(b, g, v, ran, err);
}

void rt_backend_graph_free(rt_backend *b, rt_graph *g)
{
    if (g && b->ops->graph_free) b->ops->graph_free(b, g);
}
