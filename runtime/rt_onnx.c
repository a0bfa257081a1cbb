/* rt_onnx.c - the inference graph of a model as an ONNX ModelProto (rt_onnx.h): one
 * node (or none) per layer, weights as initializers, metadata for the user.
 *
 * Field numbers are onnx.proto's; only the fields written are listed. Layer i's output
 * is the value named after the layer ("3.relu"); layers that compute nothing at
 * inference (dropout, the begin and shortcut markers of a residual block, which are
 * views of their input in the chain) pass their input's name on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_model_internal.h"
#include "rt_onnx.h"
#include "rt_onnx_pb.h"
#include "rt_file.h"
#include "kiln_config.h"

/* ModelProto */
enum {
    MODEL_IR = 1,
    MODEL_PRODUCER = 2,
    MODEL_PRODUCER_VERSION = 3,
    MODEL_DOC = 6,
    MODEL_GRAPH = 7,
    MODEL_OPSET = 8,
    MODEL_META = 14
};
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2, ENTRY_KEY = 1, ENTRY_VALUE = 2 };
/* GraphProto, NodeProto, AttributeProto */
enum { GRAPH_NODE = 1, GRAPH_NAME = 2, GRAPH_INIT = 5, GRAPH_INPUT = 11, GRAPH_OUTPUT = 12 };
enum { NODE_IN = 1, NODE_OUT = 2, NODE_NAME = 3, NODE_OP = 4, NODE_ATTR = 5 };
enum { ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_INTS = 8, ATTR_TYPE = 20 };
enum { ATTR_FLOAT = 1, ATTR_INT = 2, ATTR_INTS_TYPE = 7 };
/* TensorProto, ValueInfoProto, TypeProto(.Tensor), TensorShapeProto(.Dimension) */
enum { TENSOR_DIMS = 1, TENSOR_TYPE = 2, TENSOR_NAME = 8, TENSOR_RAW = 9, ONNX_FLOAT = 1 };
enum {
    VI_NAME = 1,
    VI_TYPE = 2,
    TYPE_TENSOR = 1,
    TT_ELEM = 1,
    TT_SHAPE = 2,
    SHAPE_DIM = 1,
    DIM_VALUE = 1,
    DIM_PARAM = 2
};

#define NAME_MAX_LEN 48
#define RT_ONNX_MAX_BYTES ((size_t)2147483647)

/* One node: op, inputs, output (named), attributes written by the caller between
 * node_begin and node_end. */
static size_t node_begin(rt_pb *g, const char *op, const char *const *in, int nin, const char *out)
{
    size_t mark = rt_pb_open(g, GRAPH_NODE);
    for (int i = 0; i < nin; i++) rt_pb_str(g, NODE_IN, in[i]);
    rt_pb_str(g, NODE_OUT, out);
    rt_pb_str(g, NODE_NAME, out);
    rt_pb_str(g, NODE_OP, op);
    return mark;
}

/* An attribute: open, name and type; the caller writes the value and closes it. */
static size_t attr_begin(rt_pb *g, const char *name, int type)
{
    size_t m = rt_pb_open(g, NODE_ATTR);
    rt_pb_str(g, ATTR_NAME, name);
    rt_pb_int(g, ATTR_TYPE, type);
    return m;
}

/* (a, b) or, with n = 4, (a, b, a, b): kernel_shape, strides, pads. */
static void attr_ints(rt_pb *g, const char *name, int64_t a, int64_t b, int n)
{
    int64_t v[4] = {a, b, a, b};
    size_t m = attr_begin(g, name, ATTR_INTS_TYPE);
    rt_pb_packed_ints(g, ATTR_INTS, v, n);
    rt_pb_close(g, m);
}

static void attr_int(rt_pb *g, const char *name, int64_t v)
{
    size_t m = attr_begin(g, name, ATTR_INT);
    rt_pb_int(g, ATTR_I, v);
    rt_pb_close(g, m);
}

static void attr_float(rt_pb *g, const char *name, float v)
{
    size_t m = attr_begin(g, name, ATTR_FLOAT);
    rt_pb_float(g, ATTR_F, v);
    rt_pb_close(g, m);
}

/* A float32 initializer; data in host order, written little-endian. */
static void initializer(rt_pb *g, const char *name, const int64_t *dims, int ndim,
                        const float *data, size_t n)
{
    size_t m = rt_pb_open(g, GRAPH_INIT);
    rt_pb_packed_ints(g, TENSOR_DIMS, dims, ndim);
    rt_pb_int(g, TENSOR_TYPE, ONNX_FLOAT);
    rt_pb_str(g, TENSOR_NAME, name);
    size_t raw = rt_pb_open(g, TENSOR_RAW);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &data[i], 4);
        uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
        rt_pb_raw(g, le, 4);
    }
    rt_pb_close(g, raw);
    rt_pb_close(g, m);
}

/* A graph input or output: float32 with dims; a dim < 0 is the symbolic "batch". */
static void value_info(rt_pb *g, int field, const char *name, const int64_t *dims, int ndim)
{
    size_t m = rt_pb_open(g, field);
    rt_pb_str(g, VI_NAME, name);
    size_t ty = rt_pb_open(g, VI_TYPE);
    size_t tt = rt_pb_open(g, TYPE_TENSOR);
    rt_pb_int(g, TT_ELEM, ONNX_FLOAT);
    size_t sh = rt_pb_open(g, TT_SHAPE);
    for (int i = 0; i < ndim; i++) {
        size_t d = rt_pb_open(g, SHAPE_DIM);
        if (dims[i] < 0) rt_pb_str(g, DIM_PARAM, "batch");
        else rt_pb_int(g, DIM_VALUE, dims[i]);
        rt_pb_close(g, d);
    }
    rt_pb_close(g, sh);
    rt_pb_close(g, tt);
    rt_pb_close(g, ty);
    rt_pb_close(g, m);
}

/* Every model tensor of layer l (params then buffers, as rt_model_tensor numbers them
 * from *next) as initializers; names[k] gets tensor k's name. */
static rt_status layer_weights(rt_model *m, const rt_layer *l, int *next, rt_pb *g,
                               char names[][64], rt_error *err)
{
    int count = l->nparams + l->nbufs;
    for (int k = 0; k < count; k++, (*next)++) {
        rt_named_tensor t;
        RT_TRY(rt_model_tensor(m, *next, &t, err));
        float *host = malloc(t.numel * sizeof *host);
        if (!host) return RT_ERR(err, RT_ENOMEM, "out of memory exporting %s", t.name);
        rt_status s = rt_model_tensor_read(m, *next, host, err);
        if (s == RT_OK) {
            int64_t dims[4];
            for (int d = 0; d < t.ndim; d++) dims[d] = t.shape[d];
            initializer(g, t.name, dims, t.ndim, host, t.numel);
        }
        free(host);
        RT_TRY(s);
        snprintf(names[k], 64, "%s", t.name);
    }
    return RT_OK;
}

typedef struct graph_state {
    rt_model *m;
    rt_pb *g;
    char (*out)[NAME_MAX_LEN]; /* (nlayers) the value each layer's output is */
    const char *first;         /* the first layer's input value */
    int next_tensor;           /* rt_model_tensor index of the next layer's weights */
} graph_state;

static const char *in_name(const graph_state *s, int i) { return i ? s->out[i - 1] : s->first; }

/* The averaging matrix of adaptive pooling along one axis: m (out x in), row p holding
 * 1 / size over that window (rt_backend.h rt_pool_desc). */
static void adaptive_matrix(float *m, int out, int in)
{
    for (int p = 0; p < out; p++) {
        int a = (int)((long)p * in / out), b = (int)(((long)(p + 1) * in + out - 1) / out);
        for (int h = 0; h < in; h++) m[(size_t)p * in + h] = h >= a && h < b ? 1.0f / (b - a) : 0;
    }
}

/* Adaptive average pooling whose windows differ (or overlap) as two MatMuls with
 * constant matrices, since it is separable: x (N,C,H,W) . Cw^T (W,Q) -> (N,C,H,Q), then
 * Rh (P,H) . that -> (N,C,P,Q), the node the caller writes with inputs rn (Rh) and co
 * (the first product), named here. */
static rt_status adaptive_matmuls(rt_pb *g, const rt_layer *l, const char *x, const char *out,
                                  char rn[NAME_MAX_LEN + 16], char co[NAME_MAX_LEN + 16],
                                  rt_error *err)
{
    int H = l->in_h, W = l->in_w, P = l->out_h, Q = l->out_w;
    float *rows = malloc((size_t)P * H * sizeof *rows),
          *cols = malloc((size_t)Q * W * sizeof *cols),
          *colsT = malloc((size_t)W * Q * sizeof *colsT);
    if (!rows || !cols || !colsT) {
        free(rows), free(cols), free(colsT);
        return RT_ERR(err, RT_ENOMEM, "out of memory for an adaptive pool's matrices");
    }
    adaptive_matrix(rows, P, H);
    adaptive_matrix(cols, Q, W);
    for (int q = 0; q < Q; q++)
        for (int w = 0; w < W; w++) colsT[(size_t)w * Q + q] = cols[(size_t)q * W + w];
    char cn[NAME_MAX_LEN + 16];
    snprintf(rn, NAME_MAX_LEN + 16, "%s.rows", out);
    snprintf(cn, sizeof cn, "%s.cols", out);
    snprintf(co, NAME_MAX_LEN + 16, "%s.colpool", out);
    const int64_t rd[2] = {P, H}, cd[2] = {W, Q};
    initializer(g, rn, rd, 2, rows, (size_t)P * H);
    initializer(g, cn, cd, 2, colsT, (size_t)W * Q);
    free(rows), free(cols), free(colsT);
    const char *in[] = {x, cn};
    rt_pb_close(g, node_begin(g, "MatMul", in, 2, co));
    return RT_OK;
}

/* A float scalar initializer named "<out>.<what>" into name. */
static void scalar(rt_pb *g, const char *out, const char *what, float v,
                   char name[NAME_MAX_LEN + 16])
{
    snprintf(name, NAME_MAX_LEN + 16, "%s.%s", out, what);
    initializer(g, name, NULL, 0, &v, 1);
}

/* The activations of rt_layer_act.c at opset RT_ONNX_OPSET: relu6 is Clip(0, 6), sigmoid
 * and tanh their own ops, silu x * Sigmoid(x), gelu 0.5 x (1 + Erf(x / sqrt 2)) (Gelu
 * is an op from opset 20 only). Writes every node but the last, which it opens and
 * returns for the caller to close. */
static size_t act_nodes(rt_pb *g, const rt_layer *l, const char *x, const char *out)
{
    char a[NAME_MAX_LEN + 16], b[NAME_MAX_LEN + 16], t1[NAME_MAX_LEN + 16], t2[NAME_MAX_LEN + 16];
    if (l->type == &rt_layer_relu6) {
        scalar(g, out, "min", 0.0f, a);
        scalar(g, out, "max", 6.0f, b);
        const char *in[] = {x, a, b};
        return node_begin(g, "Clip", in, 3, out);
    }
    if (l->type == &rt_layer_sigmoid) return node_begin(g, "Sigmoid", &x, 1, out);
    if (l->type == &rt_layer_tanh) return node_begin(g, "Tanh", &x, 1, out);
    if (l->type == &rt_layer_silu) {
        snprintf(t1, sizeof t1, "%s.sigmoid", out);
        rt_pb_close(g, node_begin(g, "Sigmoid", &x, 1, t1));
        const char *in[] = {x, t1};
        return node_begin(g, "Mul", in, 2, out);
    }
    /* gelu */
    scalar(g, out, "sqrt2", 1.41421356237309505f, a);
    snprintf(t1, sizeof t1, "%s.scaled", out);
    const char *div[] = {x, a};
    rt_pb_close(g, node_begin(g, "Div", div, 2, t1));
    snprintf(t2, sizeof t2, "%s.erf", out);
    const char *erf[] = {t1};
    rt_pb_close(g, node_begin(g, "Erf", erf, 1, t2));
    scalar(g, out, "one", 1.0f, b);
    snprintf(t1, sizeof t1, "%s.erf1", out);
    const char *add[] = {t2, b};
    rt_pb_close(g, node_begin(g, "Add", add, 2, t1));
    snprintf(t2, sizeof t2, "%s.xerf1", out);
    const char *mul[] = {x, t1};
    rt_pb_close(g, node_begin(g, "Mul", mul, 2, t2));
    scalar(g, out, "half", 0.5f, a);
    const char *half[] = {t2, a};
    return node_begin(g, "Mul", half, 2, out);
}

static rt_status layer_nodes(graph_state *s, int i, const char *out, rt_error *err)
{
    rt_pb *g = s->g;
    const rt_layer *l = &s->m->layers[i];
    const char *name = l->type->name, *x = in_name(s, i);
    char w[RT_LAYER_MAX_PARAMS * 2][64];
    RT_TRY(layer_weights(s->m, l, &s->next_tensor, g, w, err));
    size_t n;
    if (l->type == &rt_layer_conv2d) {
        const char *in[] = {x, w[0], w[1]}; /* no B input for a conv without bias */
        n = node_begin(g, "Conv", in, l->nparams + 1, out);
        attr_ints(g, "kernel_shape", l->r, l->r, 2);
        attr_ints(g, "strides", l->stride, l->stride, 2);
        attr_ints(g, "pads", l->pad, l->pad, 4);
        if (l->groups > 1) attr_int(g, "group", l->groups);
    } else if (l->type == &rt_layer_relu6 || l->type == &rt_layer_sigmoid ||
               l->type == &rt_layer_tanh || l->type == &rt_layer_gelu ||
               l->type == &rt_layer_silu) {
        n = act_nodes(g, l, x, out);
    } else if (l->type == &rt_layer_maxpool || l->type == &rt_layer_avgpool) {
        n = node_begin(g, l->type == &rt_layer_maxpool ? "MaxPool" : "AveragePool", &x, 1, out);
        attr_ints(g, "kernel_shape", l->r, l->r, 2);
        attr_ints(g, "strides", l->stride, l->stride, 2);
        if (l->pad) attr_ints(g, "pads", l->pad, l->pad, 4);
        if (l->pad && l->type == &rt_layer_avgpool) attr_int(g, "count_include_pad", 1);
    } else if (l->type == &rt_layer_adaptiveavgpool) {
        if (l->in_h % l->out_h == 0 && l->in_w % l->out_w == 0) { /* equal windows */
            n = node_begin(g, "AveragePool", &x, 1, out);
            attr_ints(g, "kernel_shape", l->in_h / l->out_h, l->in_w / l->out_w, 2);
            attr_ints(g, "strides", l->in_h / l->out_h, l->in_w / l->out_w, 2);
        } else {
            char rn[NAME_MAX_LEN + 16], co[NAME_MAX_LEN + 16];
            RT_TRY(adaptive_matmuls(g, l, x, out, rn, co, err));
            const char *in[] = {rn, co};
            n = node_begin(g, "MatMul", in, 2, out);
        }
    } else if (l->type == &rt_layer_globalavgpool) {
        n = node_begin(g, "GlobalAveragePool", &x, 1, out);
    } else if (l->type == &rt_layer_relu) {
        n = node_begin(g, "Relu", &x, 1, out);
    } else if (l->type == &rt_layer_leakyrelu) {
        n = node_begin(g, "LeakyRelu", &x, 1, out);
        attr_float(g, "alpha", l->f);
    } else if (l->type == &rt_layer_batchnorm) { /* weight, bias, running mean, var */
        const char *in[] = {x, w[0], w[1], w[2], w[3]};
        n = node_begin(g, "BatchNormalization", in, 5, out);
        attr_float(g, "epsilon", 1e-5f);
    } else if (l->type == &rt_layer_flatten) {
        n = node_begin(g, "Flatten", &x, 1, out);
        attr_int(g, "axis", 1);
    } else if (l->type == &rt_layer_dense) {
        if (!l->in_flat) { /* after globalavgpool: (C,1,1) -> C features */
            char flat[NAME_MAX_LEN + 8];
            snprintf(flat, sizeof flat, "%s.flat", out);
            rt_pb_close(g, node_begin(g, "Flatten", &x, 1, flat));
            const char *in[] = {flat, w[0], w[1]};
            n = node_begin(g, "Gemm", in, l->nparams + 1, out);
        } else {
            const char *in[] = {x, w[0], w[1]};
            n = node_begin(g, "Gemm", in, l->nparams + 1, out);
        }
        attr_int(g, "transB", 1);
    } else if (l->type == &rt_layer_res_add) {
        const rt_layer *begin = l->block[0], *sc = l->block[1];
        const char *in[] = {x, in_name(s, sc ? sc->index : begin->index)};
        n = node_begin(g, "Add", in, 2, out);
    } else {
        return RT_ERR(err, RT_EINVAL, "layer %d (%s) has no ONNX form", i, name);
    }
    rt_pb_close(g, n);
    return RT_OK;
}

/* Layers that compute nothing at inference: their output is their input's value. */
static int passes_through(const graph_state *s, int i)
{
    const rt_layer *l = &s->m->layers[i];
    if (l->type == &rt_layer_dropout || l->type == &rt_layer_res_begin) {
        snprintf(s->out[i], NAME_MAX_LEN, "%s", in_name(s, i));
        return 1;
    }
    if (l->type == &rt_layer_res_shortcut) { /* the projection reads the block input */
        snprintf(s->out[i], NAME_MAX_LEN, "%s", in_name(s, l->block[0]->index));
        return 1;
    }
    return 0;
}

/* The normalisation goes inside when it is known for every channel. */
static int has_norm(const rt_model *m, const rt_onnx_info *info)
{
    return info->mean && info->std && m->in.c <= 4;
}

static rt_status graph(rt_model *m, const rt_onnx_info *info, rt_pb *g, rt_error *err)
{
    const rt_model_input *in = &m->in;
    graph_state s = {.m = m, .g = g, .first = "input"};
    s.out = calloc((size_t)m->nlayers + 1, sizeof *s.out);
    if (!s.out) return RT_ERR(err, RT_ENOMEM, "out of memory exporting the model");
    rt_pb_str(g, GRAPH_NAME, info->model_name ? info->model_name : "kiln");
    if (has_norm(m, info)) { /* the input is pixel / 255: normalise inside */
        int64_t dims[4] = {1, in->c, 1, 1};
        initializer(g, "mean", dims, 4, info->mean, (size_t)in->c);
        initializer(g, "std", dims, 4, info->std, (size_t)in->c);
        const char *sub[] = {"input", "mean"}, *div[] = {"input.centred", "std"};
        rt_pb_close(g, node_begin(g, "Sub", sub, 2, "input.centred"));
        rt_pb_close(g, node_begin(g, "Div", div, 2, "input.normalised"));
        s.first = "input.normalised";
    }
    int last = m->nlayers - 1;
    const rt_layer *tail = &m->layers[last];
    int flat_end = tail->out_flat || tail->type == &rt_layer_dense;
    rt_status st = RT_OK;
    for (int i = 0; i < m->nlayers && st == RT_OK; i++) {
        if (passes_through(&s, i)) continue;
        if (i == last && flat_end) snprintf(s.out[i], NAME_MAX_LEN, "logits");
        else snprintf(s.out[i], NAME_MAX_LEN, "%d.%s", i, m->layers[i].type->name);
        st = layer_nodes(&s, i, s.out[i], err);
    }
    if (st == RT_OK && strcmp(s.out[last], "logits")) { /* (K,1,1) or a pass-through */
        const char *x = s.out[last];
        rt_pb_close(g, node_begin(g, "Flatten", &x, 1, "logits"));
    }
    free(s.out);
    RT_TRY(st);
    const char *logits = "logits";
    size_t n = node_begin(g, "Softmax", &logits, 1, "probabilities");
    attr_int(g, "axis", 1);
    rt_pb_close(g, n);
    int64_t xdims[4] = {-1, in->c, in->h, in->w}, ydims[2] = {-1, in->num_classes};
    value_info(g, GRAPH_INPUT, "input", xdims, 4);
    value_info(g, GRAPH_OUTPUT, "logits", ydims, 2);
    value_info(g, GRAPH_OUTPUT, "probabilities", ydims, 2);
    return RT_OK;
}

static void meta(rt_pb *b, const char *key, const char *value)
{
    size_t m = rt_pb_open(b, MODEL_META);
    rt_pb_str(b, ENTRY_KEY, key);
    rt_pb_str(b, ENTRY_VALUE, value);
    rt_pb_close(b, m);
}

/* Appends s as a JSON string literal at out (room: 6 * strlen(s) + 3 bytes); returns
 * the bytes written. */
static size_t json_str(char *out, const char *s)
{
    size_t k = 0;
    out[k++] = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') out[k++] = '\\', out[k++] = (char)c;
        else if (c < 0x20) k += (size_t)sprintf(out + k, "\\u%04x", c);
        else out[k++] = (char)c;
    }
    out[k++] = '"';
    out[k] = 0;
    return k;
}

static rt_status metadata(rt_pb *b, const rt_model *m, const rt_onnx_info *info, rt_error *err)
{
    const rt_model_input *in = &m->in;
    int norm = has_norm(m, info);
    char buf[256];
    meta(b, "input_name", "input");
    meta(b, "input_layout", "NCHW");
    snprintf(buf, sizeof buf, "[\"batch\", %d, %d, %d]", in->c, in->h, in->w);
    meta(b, "input_shape", buf);
    meta(b, "input_channels", in->c == 1 ? "grey" : in->c == 3 ? "RGB" : "other");
    meta(b, "input_range",
         norm ? "pixel / 255, in [0, 1]"
              : "normalised: ((pixel / 255) - "
                "mean) / std per channel");
    meta(b, "normalization",
         norm ? "included: the model subtracts mean and divides by std"
              : "not included: normalise the input yourself");
    if (norm) {
        char mean[160] = "[", std[160] = "[";
        for (int c = 0; c < in->c; c++) {
            size_t a = strlen(mean), d = strlen(std);
            snprintf(mean + a, sizeof mean - a, "%s%.9g", c ? ", " : "", info->mean[c]);
            snprintf(std + d, sizeof std - d, "%s%.9g", c ? ", " : "", info->std[c]);
        }
        strcat(mean, "]");
        strcat(std, "]");
        meta(b, "mean", mean);
        meta(b, "std", std);
    }
    meta(b, "outputs", "logits [batch, classes]; probabilities = softmax(logits)");
    snprintf(buf, sizeof buf, "%d", in->num_classes);
    meta(b, "num_classes", buf);
    if (info->class_names) {
        size_t cap = 3, k = 1;
        for (int c = 0; c < in->num_classes; c++) cap += 6 * strlen(info->class_names[c]) + 5;
        char *names = malloc(cap);
        if (!names) return RT_ERR(err, RT_ENOMEM, "out of memory exporting the class names");
        names[0] = '[';
        for (int c = 0; c < in->num_classes; c++) {
            if (c) names[k++] = ',', names[k++] = ' ';
            k += json_str(names + k, info->class_names[c]);
        }
        names[k++] = ']';
        names[k] = 0;
        meta(b, "class_names", names);
        free(names);
    }
    if (info->model_name) meta(b, "model_name", info->model_name);
    if (info->dataset) meta(b, "dataset", info->dataset);
    if (info->source) meta(b, "source", info->source);
    meta(b, "model_spec", m->canonical);
    return RT_OK;
}

rt_status rt_onnx_write(rt_model *m, const rt_onnx_info *info, const char *path, rt_error *err)
{
    if (!m->b) return RT_ERR(err, RT_EINVAL, "the model is not attached to a backend");
    rt_pb b = {0};
    rt_pb_int(&b, MODEL_IR, RT_ONNX_IR_VERSION);
    rt_pb_str(&b, MODEL_PRODUCER, "kiln");
    rt_pb_str(&b, MODEL_PRODUCER_VERSION, KILN_VERSION);
    rt_pb_str(&b, MODEL_DOC,
              "A Kiln model: feed 'input' as the metadata says; outputs "
              "'logits' and 'probabilities'.");
    size_t gm = rt_pb_open(&b, MODEL_GRAPH);
    rt_status s = graph(m, info, &b, err);
    rt_pb_close(&b, gm);
    if (s == RT_OK) {
        size_t op = rt_pb_open(&b, MODEL_OPSET);
        rt_pb_str(&b, OPSET_DOMAIN, "");
        rt_pb_int(&b, OPSET_VERSION, RT_ONNX_OPSET);
        rt_pb_close(&b, op);
        s = metadata(&b, m, info, err);
    }
    if (s == RT_OK && b.oom) s = RT_ERR(err, RT_ENOMEM, "out of memory writing %s", path);
    if (s == RT_OK && b.n > RT_ONNX_MAX_BYTES) /* protobuf parsers refuse more */
        s = RT_ERR(err, RT_EINVAL,
                   "the model takes %zu MiB as ONNX, more than the 2 GiB one "
                   "protobuf file can hold; %s not written",
                   b.n >> 20, path);
    rt_file f = {0};
    if (s == RT_OK) s = rt_file_begin(&f, path, err);
    if (s == RT_OK && fwrite(b.p, 1, b.n, f.f) != b.n) {
        rt_file_abort(&f);
        s = RT_ERR(err, RT_EIO, "cannot write %s", path);
    } else if (s == RT_OK) {
        s = rt_file_commit(&f, RT_FILE_MODE_UMASK, err);
    }
    rt_pb_free(&b);
    return s;
}
