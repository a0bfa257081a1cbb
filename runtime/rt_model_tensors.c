/* rt_model_tensors.c - enumerating a model's parameters and buffers for checkpoints.
 *
 * Order: for each layer in order, its parameters ("weight", then "bias" unless the layer
 * has bias=false) then its buffers ("running_mean", "running_var"). Names are
 * "<layer index>.<type>.<name>", e.g. "0.conv2d.weight", or "<prefix>.<name>" for a layer
 * given `name=<prefix>` ("layer1.0.conv1.weight", a PyTorch state_dict's names); shapes are PyTorch's (conv
 * (K,C,R,S), dense (O,F), vectors (K)).
 * Host pointers are given only on a host backend (CPU); read/write work everywhere. Names
 * and shapes are there before the model is attached (data and host pointers are not).
 */
#include <stdio.h>
#include <string.h>

#include "rt_model_internal.h"

static rt_tensor *find(rt_model *m, int i, const rt_layer **lo, const char **name, int *trainable,
                       int *ndim)
{
    for (int k = 0; k < m->nlayers; k++) {
        rt_layer *l = &m->layers[k];
        if (i < l->nparams) {
            *lo = l, *name = l->param_name[i], *trainable = 1, *ndim = l->param_ndim[i];
            return &l->param[i];
        }
        i -= l->nparams;
        if (i < l->nbufs) {
            *lo = l, *name = l->buf_name[i], *trainable = 0, *ndim = 1;
            return &l->buf[i];
        }
        i -= l->nbufs;
    }
    return NULL;
}

void rtp_tensor_name(const rt_layer *l, const char *pname, char *buf, size_t n)
{
    if (l->tname[0]) snprintf(buf, n, "%s.%s", l->tname, pname);
    else snprintf(buf, n, "%d.%s.%s", l->index, l->type->name, pname);
}

int rt_model_num_tensors(const rt_model *m)
{
    int n = 0;
    for (int k = 0; k < m->nlayers; k++) n += m->layers[k].nparams + m->layers[k].nbufs;
    return n;
}

rt_status rt_model_tensor(rt_model *m, int i, rt_named_tensor *out, rt_error *err)
{
    const rt_layer *l;
    const char *name;
    int trainable, ndim;
    rt_tensor *t = i >= 0 ? find(m, i, &l, &name, &trainable, &ndim) : NULL;
    if (!t) return RT_ERR(err, RT_EINVAL, "model tensor %d does not exist", i);
    memset(out, 0, sizeof *out);
    rtp_tensor_name(l, name, out->name, sizeof out->name);
    int dims[4] = {t->n, t->c, t->h, t->w};
    out->ndim = ndim;
    for (int d = 0; d < ndim; d++) out->shape[d] = dims[d];
    out->numel = rt_tensor_numel(t);
    out->trainable = trainable;
    out->layer = (int)(l - m->layers);
    out->host = m->b && !strcmp(m->b->ops->name, "cpu") ? (float *)t->data : NULL;
    return RT_OK;
}

/* Tensor i of a model attached to a backend, or NULL. */
static rt_tensor *attached(rt_model *m, int i)
{
    const rt_layer *l;
    const char *name;
    int trainable, ndim;
    return i >= 0 && m->b ? find(m, i, &l, &name, &trainable, &ndim) : NULL;
}

rt_status rt_model_tensor_read(rt_model *m, int i, float *dst, rt_error *err)
{
    rt_tensor *t = attached(m, i);
    if (!t) return RT_ERR(err, RT_EINVAL, "model tensor %d does not exist", i);
    return rt_backend_download(m->b, dst, t, rt_tensor_bytes(t), err);
}

rt_status rt_model_tensor_write(rt_model *m, int i, const float *src, rt_error *err)
{
    rt_tensor *t = attached(m, i);
    if (!t) return RT_ERR(err, RT_EINVAL, "model tensor %d does not exist", i);
    return rt_backend_upload(m->b, t, src, rt_tensor_bytes(t), err);
}
