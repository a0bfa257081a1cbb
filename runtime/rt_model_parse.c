/* rt_model_parse.c - the `%%model` spec parser and shape inference.
 *
 * One layer a line; '#' comments and blank lines are skipped. `residual:` opens a
 * block: the indented lines after it are its layers, an indented `shortcut:` starts
 * its projection branch, and the next unindented line closes it (an add layer is
 * appended; rt_layer_residual.c). Indentation outside a block means nothing. Every error names the
 * 1-based line and what was expected (the layer's usage string). Shape inference walks
 * the layers from the input (C,H,W); a layer whose input does not fit names its line and
 * both shapes. The last layer must produce exactly num_classes flat features. Also
 * builds the canonical spec text and the summary rows.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rt_model_internal.h"

#define MAX_TOKENS 16

static const struct {
    const char *word;
    const rt_layer_type *type;
} keywords[] = {
    {"conv2d", &rt_layer_conv2d},
    {"conv", &rt_layer_conv2d},
    {"maxpool", &rt_layer_maxpool},
    {"maxpool2d", &rt_layer_maxpool},
    {"avgpool", &rt_layer_avgpool},
    {"avgpool2d", &rt_layer_avgpool},
    {"relu", &rt_layer_relu},
    {"leakyrelu", &rt_layer_leakyrelu},
    {"leaky_relu", &rt_layer_leakyrelu},
    {"relu6", &rt_layer_relu6},
    {"sigmoid", &rt_layer_sigmoid},
    {"tanh", &rt_layer_tanh},
    {"gelu", &rt_layer_gelu},
    {"silu", &rt_layer_silu},
    {"swish", &rt_layer_silu},
    {"batchnorm", &rt_layer_batchnorm},
    {"batchnorm2d", &rt_layer_batchnorm},
    {"bn", &rt_layer_batchnorm},
    {"dropout", &rt_layer_dropout},
    {"flatten", &rt_layer_flatten},
    {"dense", &rt_layer_dense},
    {"linear", &rt_layer_dense},
    {"globalavgpool", &rt_layer_globalavgpool},
    {"gap", &rt_layer_globalavgpool},
    {"adaptiveavgpool", &rt_layer_globalavgpool}, /* with a size: rt_layer_adaptiveavgpool */
    {"adaptiveavgpool2d", &rt_layer_globalavgpool},
};

const char *rt_model_layer_word(size_t i)
{
    return i < sizeof keywords / sizeof keywords[0] ? keywords[i].word : NULL;
}

static const rt_layer_type *lookup(const char *word)
{
    char low[32];
    size_t i;
    for (i = 0; word[i] && i + 1 < sizeof low; i++) low[i] = (char)tolower((unsigned char)word[i]);
    low[i] = 0;
    for (size_t k = 0; k < sizeof keywords / sizeof keywords[0]; k++)
        if (!strcmp(low, keywords[k].word)) return keywords[k].type;
    return NULL;
}

/* Splits one line (modified in place) into tokens; returns the count or -1 if too many. */
static int tokenize(char *line, char **tok)
{
    char *hash = strchr(line, '#'), *save = NULL;
    if (hash) *hash = 0;
    int n = 0;
    for (char *p = strtok_r(line, " \t\r", &save); p; p = strtok_r(NULL, " \t\r", &save)) {
        if (n == MAX_TOKENS) return -1;
        tok[n++] = p;
    }
    return n;
}

static rt_status add_layer(rt_model *m, int *cap, const rt_layer_type *t, int line, rt_layer **out,
                           rt_error *err)
{
    if (m->nlayers == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        rt_layer *nl = realloc(m->layers, (size_t)nc * sizeof *nl);
        if (!nl) return RT_ERR(err, RT_ENOMEM, "out of memory parsing the model");
        m->layers = nl;
        *cap = nc;
    }
    rt_layer *l = &m->layers[m->nlayers];
    memset(l, 0, sizeof *l);
    l->type = t;
    l->index = m->nlayers++;
    l->line = line;
    *out = l;
    return RT_OK;
}

/* Takes a `name=PREFIX` word out of tok[1..n) into l->tname (every layer kind has it):
 * the prefix of the layer's tensor names, as a PyTorch module path ("layer1.0.conv1"). */
static int take_name(rt_layer *l, int *n, char **tok, char *why)
{
    for (int i = 1; i < *n; i++) {
        const char *v;
        if (!rtp_opt(tok[i], "name", &v)) continue;
        size_t len = strlen(v);
        int ok = len > 0 && len < sizeof l->tname && v[0] != '.' && v[len - 1] != '.' &&
                 !strstr(v, "..");
        for (size_t k = 0; ok && k < len; k++)
            ok = isalnum((unsigned char)v[k]) || v[k] == '_' || v[k] == '.';
        if (!ok) {
            snprintf(why, RT_LAYER_WHY,
                     "name=%.60s: expected a tensor-name prefix of letters, digits, '_' "
                     "and inner '.', at most %d characters (e.g. name=layer1.0.conv1)",
                     v, (int)sizeof l->tname - 1);
            return -1;
        }
        memcpy(l->tname, v, len + 1);
        memmove(tok + i, tok + i + 1, (size_t)(*n - i - 1) * sizeof *tok);
        (*n)--;
        return 0;
    }
    return 0;
}

/* "residual:" / "shortcut:" (the colon optional, any case): 1 / 2, else 0. */
static int block_word(const char *w)
{
    char low[16];
    size_t i;
    for (i = 0; w[i] && w[i] != ':' && i + 1 < sizeof low; i++)
        low[i] = (char)tolower((unsigned char)w[i]);
    low[i] = 0;
    if (w[i] && (w[i] != ':' || w[i + 1])) return 0;
    return !strcmp(low, "residual") ? 1 : !strcmp(low, "shortcut") ? 2 : 0;
}

/* The block being parsed: where it began, its shortcut, how many layers each part has. */
typedef struct open_block {
    int begin, shortcut, nmain, nshort, line;
} open_block;

/* Ends the open block (if any) with its add layer. */
static rt_status close_block(rt_model *m, int *cap, open_block *ob, int line, rt_error *err)
{
    if (ob->begin < 0) return RT_OK;
    if (ob->nmain == 0)
        return RT_ERR(err, RT_EINVAL,
                      "line %d: the residual block has no layers (indent "
                      "them under 'residual:')",
                      ob->line);
    if (ob->shortcut >= 0 && ob->nshort == 0)
        return RT_ERR(err, RT_EINVAL,
                      "line %d: 'shortcut:' has no layers (indent the "
                      "projection under it, e.g. 'conv2d K 1 stride=2' and 'batchnorm')",
                      m->layers[ob->shortcut].line);
    rt_layer *l = NULL;
    RT_TRY(add_layer(m, cap, &rt_layer_res_add, line, &l, err));
    ob->begin = -1;
    return RT_OK;
}

/* Points every begin/shortcut/add layer at its block's three layers; marks the layers
 * inside a block with depth 1. */
static void link_blocks(rt_model *m)
{
    rt_layer *begin = NULL, *sc = NULL;
    for (int i = 0; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i];
        if (l->type == &rt_layer_res_begin) begin = l, sc = NULL;
        else if (l->type == &rt_layer_res_shortcut) sc = l;
        else if (l->type == &rt_layer_res_add) {
            rt_layer *b[3] = {begin, sc, l};
            for (int k = 0; k < 3; k++)
                if (b[k]) memcpy(b[k]->block, b, sizeof b);
            l->depth = 1; /* shown as the block's last row */
            begin = sc = NULL;
            continue;
        }
        if (begin && l->type != &rt_layer_res_begin) l->depth = 1;
    }
}

static rt_status parse_lines(rt_model *m, rt_error *err)
{
    char *text = strdup(m->spec);
    if (!text) return RT_ERR(err, RT_ENOMEM, "out of memory parsing the model");
    rt_status s = RT_OK;
    int cap = 0, lineno = 0;
    open_block ob = {.begin = -1, .shortcut = -1};
    char *tok[MAX_TOKENS], why[RT_LAYER_WHY];
    for (char *p = text; p && s == RT_OK; lineno++) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        char *line = p;
        p = nl ? nl + 1 : NULL;
        int indented = line[0] == ' ' || line[0] == '\t';
        int n = tokenize(line, tok);
        if (n == 0) continue;
        if (n < 0) {
            s = RT_ERR(err, RT_EINVAL, "line %d: too many words (at most %d)", lineno + 1,
                       MAX_TOKENS);
            break;
        }
        int bw = block_word(tok[0]);
        if (!indented && bw != 2 && (s = close_block(m, &cap, &ob, lineno + 1, err)) != RT_OK)
            break;
        if (bw) {
            rt_layer *l = NULL;
            if (n > 1)
                s = RT_ERR(err, RT_EINVAL,
                           "line %d: '%s' takes nothing after it (the "
                           "block's layers follow, indented, one a line)",
                           lineno + 1, tok[0]);
            else if (bw == 1 && ob.begin >= 0)
                s = RT_ERR(err, RT_EINVAL,
                           "line %d: a residual block inside another is not "
                           "supported (start it without indentation)",
                           lineno + 1);
            else if (bw == 2 && (ob.begin < 0 || ob.shortcut >= 0))
                s = RT_ERR(err, RT_EINVAL,
                           "line %d: 'shortcut:' belongs inside a residual "
                           "block, once, after its layers",
                           lineno + 1);
            else if ((s = add_layer(m, &cap, bw == 1 ? &rt_layer_res_begin : &rt_layer_res_shortcut,
                                    lineno + 1, &l, err)) == RT_OK) {
                if (bw == 1) ob = (open_block){l->index, -1, 0, 0, lineno + 1};
                else ob.shortcut = l->index;
            }
            continue;
        }
        if (ob.begin >= 0 && ob.shortcut >= 0) ob.nshort++;
        else if (ob.begin >= 0) ob.nmain++;
        const rt_layer_type *t = lookup(tok[0]);
        if (!t) {
            s = RT_ERR(err, RT_EINVAL,
                       "line %d: unknown layer '%s' (expected one of conv2d, "
                       "maxpool, avgpool, globalavgpool, adaptiveavgpool, relu, leakyrelu, "
                       "relu6, sigmoid, tanh, gelu, silu, batchnorm, dropout, "
                       "flatten, dense, or a 'residual:' block)",
                       lineno + 1, tok[0]);
            break;
        }
        rt_layer *l = NULL;
        if ((s = add_layer(m, &cap, t, lineno + 1, &l, err)) != RT_OK) break;
        why[0] = 0;
        int named = take_name(l, &n, tok, why);
        if (t == &rt_layer_globalavgpool && n > 1 && !strncasecmp(tok[0], "adaptive", 8))
            l->type = t = &rt_layer_adaptiveavgpool; /* adaptiveavgpool H [W] */
        if (named < 0) s = RT_ERR(err, RT_EINVAL, "line %d: %s: %s", lineno + 1, t->name, why);
        else if (t->parse(l, n - 1, tok + 1, why) != RT_OK)
            s = RT_ERR(err, RT_EINVAL, "line %d: %s: %s (expected '%s')", lineno + 1, t->name, why,
                       t->usage);
    }
    free(text);
    if (s == RT_OK) s = close_block(m, &cap, &ob, lineno, err);
    if (s == RT_OK) link_blocks(m);
    if (s == RT_OK && m->nlayers == 0)
        s = RT_ERR(err, RT_EINVAL,
                   "the model has no layers (write one layer a line, e.g. "
                   "'conv2d 32 3', ending with 'dense <classes>')");
    return s;
}

static rt_status infer_shapes(rt_model *m, rt_error *err)
{
    int c = m->in.c, h = m->in.h, w = m->in.w, flat = 0;
    char why[RT_LAYER_WHY], spec[80];
    for (int i = 0; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i];
        l->in_c = c, l->in_h = h, l->in_w = w, l->in_flat = flat;
        why[0] = 0;
        l->type->format(l, spec, sizeof spec);
        if (l->type->infer(l, why) != RT_OK)
            return RT_ERR(err, RT_EINVAL, "line %d: %s: %s", l->line, spec, why);
        if ((double)l->out_c * l->out_h * l->out_w > RT_LAYER_MAX_ELEMS)
            return RT_ERR(err, RT_EINVAL, "line %d: %s: the output %dx%dx%d is too large", l->line,
                          spec, l->out_c, l->out_h, l->out_w);
        if (l->out_c < 1 || l->out_h < 1 || l->out_w < 1)
            return RT_ERR(err, RT_EINVAL, "line %d: %s: the output would be empty (%dx%dx%d)",
                          l->line, spec, l->out_c, l->out_h, l->out_w);
        c = l->out_c, h = l->out_h, w = l->out_w, flat = l->out_flat;
    }
    const rt_layer *last = &m->layers[m->nlayers - 1];
    int features = c * h * w;
    if (m->in.num_classes > 0 && (features != m->in.num_classes || (!flat && h * w > 1))) {
        char shape[48];
        if (flat || h * w == 1) snprintf(shape, sizeof shape, "%d outputs", features);
        else snprintf(shape, sizeof shape, "a %dx%dx%d output", c, h, w);
        return RT_ERR(err, RT_EINVAL,
                      "line %d: the model ends with %s but the data has %d "
                      "classes ---> HINT: end the model with 'flatten' (if needed) and "
                      "'dense %d'",
                      last->line, shape, m->in.num_classes, m->in.num_classes);
    }
    return RT_OK;
}

/* Every tensor name is the model's once (two layers given the same name= would not be). */
static rt_status check_names(const rt_model *m, rt_error *err)
{
    char a[64], b[64];
    for (int i = 0; i < m->nlayers; i++) {
        const rt_layer *l = &m->layers[i];
        if (!l->tname[0] || !l->nparams) continue;
        rtp_tensor_name(l, l->param_name[0], a, sizeof a);
        for (int j = 0; j < m->nlayers; j++) {
            const rt_layer *o = &m->layers[j];
            for (int p = 0; j != i && p < o->nparams + o->nbufs; p++) {
                rtp_tensor_name(o, p < o->nparams ? o->param_name[p] : o->buf_name[p - o->nparams],
                                b, sizeof b);
                if (!strcmp(a, b))
                    return RT_ERR(err, RT_EINVAL,
                                  "line %d: name=%s: the tensor '%s' is also line %d's "
                                  "(each layer's name must be its own)",
                                  l->line, l->tname, a, o->line);
            }
        }
    }
    return RT_OK;
}

static rt_status build_summary(rt_model *m, rt_error *err)
{
    size_t nl = m->nlayers > 0 ? (size_t)m->nlayers : 1;
    m->rows = calloc(nl, sizeof *m->rows);
    size_t cap = nl * (sizeof m->rows->spec + 2) + 1, used = 0;
    m->canonical = malloc(cap);
    if (!m->rows || !m->canonical) return RT_ERR(err, RT_ENOMEM, "out of memory");
    m->total_params = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const rt_layer *l = &m->layers[i];
        rt_summary_row *r = &m->rows[i];
        r->index = i;
        r->line = l->line;
        r->type = l->type->name;
        /* inside a block: indented 4 (the shortcut line 2), as the spec is written */
        const char *indent = l->type == &rt_layer_res_shortcut ? "  " : l->depth ? "    " : "";
        char text[64];
        l->type->format(l, text, sizeof text);
        snprintf(r->spec, sizeof r->spec, "%s%s%s%s", indent, text, l->tname[0] ? " name=" : "",
                 l->tname);
        r->out_c = l->out_c, r->out_h = l->out_h, r->out_w = l->out_w;
        r->out_flat = l->out_flat;
        for (int p = 0; p < l->nparams; p++) r->params += (long)rt_tensor_numel(&l->param[p]);
        m->total_params += r->params;
        if (l->type != &rt_layer_res_add) /* the end of a block is implicit */
            used += (size_t)snprintf(m->canonical + used, cap - used, "%s\n", r->spec);
    }
    return RT_OK;
}

rt_status rtp_model_parse(rt_model *m, rt_error *err)
{
    if (m->in.c < 1 || m->in.h < 1 || m->in.w < 1 ||
        (double)m->in.c * m->in.h * m->in.w > RT_LAYER_MAX_ELEMS)
        return RT_ERR(err, RT_EINVAL, "bad input shape %dx%dx%d", m->in.c, m->in.h, m->in.w);
    RT_TRY(parse_lines(m, err));
    RT_TRY(infer_shapes(m, err));
    RT_TRY(check_names(m, err));
    return build_summary(m, err);
}
