/* test_model_spec.c - the %%model spec parser: valid specs, canonical round trip,
 * summary parameter counts, and an error naming the line for every malformed input. */
#include <stdlib.h>

#include "../t.h"
#include "rt_model.h"

static const char *mnist_net =
    "# the PyTorch MNIST example\n"
    "conv2d 32 3\nrelu\nconv2d 64 3   # second conv\nrelu\nmaxpool 2\ndropout 0.25\n"
    "\nflatten\ndense 128\nrelu\ndropout 0.5\ndense 10\n";

static const rt_model_input mnist_in = {1, 28, 28, 10};

/* Creates a model expecting failure; returns the error message (static buffer). */
static const char *error_of(const char *spec, const rt_model_input *in)
{
    static rt_error err;
    rt_model *m = NULL;
    rt_error_clear(&err);
    if (rt_model_create(&m, spec, in, &err) == RT_OK) {
        rt_model_destroy(m);
        return "(no error)";
    }
    if (m) return "(model returned on error)";
    return err.msg;
}

T_TEST(mnist_summary)
{
    rt_error err = {0};
    rt_model *m = NULL;
    ASSERT_EQ(rt_model_create(&m, mnist_net, &mnist_in, &err), RT_OK);
    int n;
    long total;
    const rt_summary_row *r = rt_model_summary(m, &n, &total);
    ASSERT_EQ(n, 11);
    ASSERT_EQ(total, 1199882); /* PyTorch: sum(p.numel() for p in Net().parameters()) */
    ASSERT_EQ(r[0].params, 320);
    ASSERT_EQ(r[0].out_c, 32);
    ASSERT_EQ(r[0].out_h, 26);
    ASSERT_EQ(r[2].params, 18496);
    ASSERT_EQ(r[4].out_h, 12);
    ASSERT_EQ(r[6].out_c, 9216);
    ASSERT_EQ(r[6].out_flat, 1);
    ASSERT_EQ(r[7].params, 1179776);
    ASSERT_EQ(r[10].params, 1290);
    ASSERT_EQ(r[2].line, 4); /* comment line 1 and the blank line count */
    ASSERT_EQ(r[7].line, 10);
    ASSERT_STR_EQ(r[0].spec, "conv2d 32 3 stride=1 pad=0");
    rt_model_destroy(m);
}

T_TEST(canonical_round_trip)
{
    const char *specs[] = {
        mnist_net,
        "conv2d 8 5 stride=2 pad=2\nbatchnorm momentum=0.2\nleakyrelu 0.2\navgpool 2\n"
        "conv 4 3 padding=1\nLeakyReLU\nmaxpool 3 stride=1\nflatten\nlinear 10\n",
        "conv2d 8 3 bias=False\nbatchnorm\nconv2d 4 3 bias=true\nflatten\n"
        "dense 10 bias=FALSE\n",
    };
    const rt_model_input in = {3, 32, 32, 10};
    for (int k = 0; k < 3; k++) {
        rt_error err = {0};
        rt_model *a = NULL, *b = NULL;
        ASSERT_EQ(rt_model_create(&a, specs[k], k ? &in : &mnist_in, &err), RT_OK);
        ASSERT_STR_EQ(rt_model_spec(a), specs[k]);
        ASSERT_EQ(rt_model_create(&b, rt_model_spec_canonical(a), k ? &in : &mnist_in, &err),
                  RT_OK);
        ASSERT_STR_EQ(rt_model_spec_canonical(a), rt_model_spec_canonical(b));
        int na, nb;
        long ta, tb;
        const rt_summary_row *ra = rt_model_summary(a, &na, &ta),
                             *rb = rt_model_summary(b, &nb, &tb);
        ASSERT_EQ(na, nb);
        ASSERT_EQ(ta, tb);
        for (int i = 0; i < na; i++) {
            ASSERT_STR_EQ(ra[i].spec, rb[i].spec);
            ASSERT_EQ(ra[i].out_c * ra[i].out_h * ra[i].out_w,
                      rb[i].out_c * rb[i].out_h * rb[i].out_w);
        }
        rt_model_destroy(a);
        rt_model_destroy(b);
    }
}

/* bias=false: the layer's only parameter is its weight (no "bias" tensor, no gradient,
 * no optimiser state), the summary counts it so, and the weight's init is the biased
 * layer's (same stream), so adding or dropping a bias changes nothing else. */
T_TEST(bias_free_layers)
{
    rt_error err = {0};
    rt_backend b;
    rt_model *m = NULL, *ref = NULL;
    rt_model_input in = {3, 8, 8, 4};
    ASSERT_EQ(rt_backend_open(&b, "cpu", 1, &err), RT_OK);
    ASSERT_EQ(rt_model_create(&m,
                              "conv2d 4 3 pad=1 bias=false\nbatchnorm\nrelu\nflatten\n"
                              "dense 4 bias=false",
                              &in, &err),
              RT_OK);
    ASSERT_EQ(
        rt_model_create(&ref, "conv2d 4 3 pad=1\nbatchnorm\nrelu\nflatten\ndense 4", &in, &err),
        RT_OK);
    int n;
    long total, ref_total;
    const rt_summary_row *r = rt_model_summary(m, &n, &total);
    rt_model_summary(ref, &n, &ref_total);
    ASSERT_EQ(r[0].params, 4 * 3 * 3 * 3);
    ASSERT_EQ(r[4].params, 4 * 4 * 8 * 8);
    ASSERT_EQ(total, ref_total - 4 - 4);
    ASSERT_STR_EQ(r[0].spec, "conv2d 4 3 stride=1 pad=1 bias=false");
    ASSERT_STR_EQ(r[4].spec, "dense 4 bias=false");
    ASSERT_EQ(rt_model_attach(m, &b, 2, 7, &err), RT_OK);
    ASSERT_EQ(rt_model_attach(ref, &b, 2, 7, &err), RT_OK);
    ASSERT_EQ(rt_model_num_tensors(m), 6);
    static const char *names[] = {"0.conv2d.weight",         "1.batchnorm.weight",
                                  "1.batchnorm.bias",        "1.batchnorm.running_mean",
                                  "1.batchnorm.running_var", "4.dense.weight"};
    for (int i = 0; i < 6; i++) {
        rt_named_tensor t;
        ASSERT_EQ(rt_model_tensor(m, i, &t, &err), RT_OK);
        ASSERT_STR_EQ(t.name, names[i]);
    }
    rt_named_tensor w, wr;
    ASSERT_EQ(rt_model_tensor(m, 0, &w, &err), RT_OK);
    ASSERT_EQ(rt_model_tensor(ref, 0, &wr, &err), RT_OK);
    ASSERT_EQ(memcmp(w.host, wr.host, w.numel * sizeof *w.host), 0);
    rt_named_tensor d;
    ASSERT_EQ(rt_model_tensor(m, 5, &d, &err), RT_OK);
    ASSERT_EQ(d.ndim, 2);
    ASSERT_EQ(d.shape[0], 4);
    ASSERT_EQ(d.shape[1], 256);
    rt_model_destroy(ref);
    rt_model_destroy(m);
    rt_backend_close(&b);
}

T_TEST(syntax_errors_name_the_line)
{
    static const struct {
        const char *spec, *expect[3];
    } cases[] = {
        {"conv2d 32 3\nrelu\nconvv 3 3\n", {"line 3", "unknown layer 'convv'", "conv2d"}},
        {"conv2d\n", {"line 1", "conv2d", "conv2d K R"}},
        {"\n\nconv2d 32\n", {"line 3", "kernel size", "conv2d K R"}},
        {"conv2d x 3\n", {"line 1", "'x' is not a positive integer", "conv2d K R"}},
        {"conv2d 0 3\n", {"line 1", "'0'", "conv2d K R"}},
        {"conv2d 4 3 stride=0\n", {"line 1", "stride=0", "positive integer"}},
        {"conv2d 4 3 stride=1 pad=-1\n", {"line 1", "pad=-1", ""}},
        {"conv2d 4 3 foo=1\n", {"line 1", "unexpected argument 'foo=1'", ""}},
        {"conv2d 4 3 5 6\n", {"line 1", "unexpected argument '5'", ""}},
        {"conv2d 4 3\nrelu 2\n", {"line 2", "relu", "no arguments"}},
        {"conv2d 4 3\nleakyrelu abc\n", {"line 2", "'abc'", "leakyrelu [slope=0.01]"}},
        {"conv2d 4 3\nmaxpool\n", {"line 2", "window", "maxpool R"}},
        {"conv2d 4 3\nmaxpool 2 stride=x\n", {"line 2", "stride=x", ""}},
        {"conv2d 4 3\navgpool -2\n", {"line 2", "'-2'", "avgpool R"}},
        {"conv2d 4 3\nbatchnorm 3\n", {"line 2", "unexpected argument", "batchnorm"}},
        {"conv2d 4 3\nbatchnorm momentum=2\n", {"line 2", "momentum=2", "[0, 1]"}},
        {"conv2d 4 3\ndropout\n", {"line 2", "probability", "dropout P"}},
        {"conv2d 4 3\ndropout 1.5\n", {"line 2", "'1.5'", "[0, 1)"}},
        {"conv2d 4 3\ndropout 0.5 0.2\n", {"line 2", "unexpected", ""}},
        {"conv2d 4 3\nflatten all\n", {"line 2", "flatten", "no arguments"}},
        {"flatten\ndense\n", {"line 2", "outputs", "dense O"}},
        {"flatten\ndense 10.5\n", {"line 2", "'10.5'", "dense O"}},
        {"# only a comment\n\n", {"no layers", "", ""}},
        {"", {"no layers", "", ""}},
        {"conv2d 4 3 pad=2000000000\n", {"line 1", "'pad=2000000000' is too large", "1048576"}},
        /* a positive integer above RT_LAYER_MAX_INT is "too large", with the limit (it
         * said "'40000000' is not a positive integer") */
        {"flatten\ndense 40000000\n", {"line 2", "'40000000' is too large", "at most 1048576"}},
        {"flatten\ndense -5\n", {"line 2", "'-5' is not a positive integer", ""}},
        {"conv2d 4 3 bias=no\n", {"line 1", "'bias=no' needs true or false", "bias=true|false"}},
        {"conv2d 4 3 bias=\n", {"line 1", "'bias=' needs true or false", ""}},
        {"flatten\ndense 10 bias=0\n", {"line 2", "'bias=0' needs true or false", "dense O"}},
        {"flatten\ndense bias=false\n", {"line 2", "missing the number of outputs", "dense O"}},
        {"flatten\ndense 10 12\n", {"line 2", "unexpected argument '12'", "dense O"}},
        {"conv2d 40000000 3\n", {"line 1", "'40000000' is too large", "at most 1048576"}},
        {"conv2d 4 99999999999999999999\n", {"line 1", "is too large", "1048576"}},
        {"conv2d 4 3 stride=2000000\n", {"line 1", "'stride=2000000' is too large", "1048576"}},
        {"conv2d 4 3\nmaxpool 2000000\n", {"line 2", "'2000000' is too large", "1048576"}},
        {"conv2d 4 3\nmaxpool 2 stride=2000000\n",
         {"line 2", "stride=2000000' is too large", "1048576"}},
        {"conv2d 1048576 3 pad=1000\n", {"line 1", "too large", ""}},
        {"flatten\ndense 1000000\ndense 1000000\n", {"line 3", "too large", ""}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *msg = error_of(cases[i].spec, &mnist_in);
        for (int k = 0; k < 3; k++) {
            if (!strstr(msg, cases[i].expect[k])) {
                fprintf(stderr, "  case %zu: \"%s\" lacks \"%s\"\n", i, msg, cases[i].expect[k]);
                ASSERT(0);
            }
        }
    }
}

T_TEST(shape_errors_name_the_line)
{
    static const struct {
        const char *spec, *expect[3];
    } cases[] = {
        {"conv2d 8 3\nconv2d 8 30\nflatten\ndense 10\n", {"line 2", "kernel 30x30", "8x26x26"}},
        {"flatten\nconv2d 8 3\ndense 10\n", {"line 2", "784 flat features", "conv2d"}},
        {"conv2d 8 3\ndense 10\n", {"line 2", "8x26x26", "flatten"}},
        {"conv2d 8 3\nmaxpool 30\nflatten\ndense 10\n", {"line 2", "window 30x30", "8x26x26"}},
        {"flatten\nmaxpool 2\ndense 10\n", {"line 2", "flat features", "maxpool"}},
        {"conv2d 4 3\nflatten\ndense 12\n", {"line 3", "12 outputs", "10 classes"}},
        {"conv2d 4 3\nrelu\n", {"line 2", "4x26x26 output", "dense 10"}},
        {"conv2d 10 28\n# trailing comment\n", {"line 1", "", ""}},
        {"conv2d 4 3 stride=30\nflatten\ndense 10\n", {"", "", ""}}, /* valid: 1x1 output */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *msg = error_of(cases[i].spec, &mnist_in);
        if (i == 7) { /* conv to 10x1x1 without flatten: allowed (1x1 spatial) */
            ASSERT_STR_EQ(msg, "(no error)");
            continue;
        }
        if (i == 8) {
            ASSERT_STR_EQ(msg, "(no error)");
            continue;
        }
        for (int k = 0; k < 3; k++) {
            if (!strstr(msg, cases[i].expect[k])) {
                fprintf(stderr, "  case %zu: \"%s\" lacks \"%s\"\n", i, msg, cases[i].expect[k]);
                ASSERT(0);
            }
        }
    }
}

T_TEST(tensor_enumeration)
{
    rt_error err = {0};
    rt_backend b;
    rt_model *m = NULL;
    rt_model_input in = {3, 8, 8, 4};
    ASSERT_EQ(rt_backend_open(&b, "cpu", 1, &err), RT_OK);
    ASSERT_EQ(rt_model_create(&m, "conv2d 4 3 pad=1\nbatchnorm\nrelu\nflatten\ndense 4", &in, &err),
              RT_OK);
    ASSERT_EQ(rt_model_attach(m, &b, 2, 7, &err), RT_OK);
    ASSERT_EQ(rt_model_num_tensors(m), 8);
    static const char *names[] = {"0.conv2d.weight",          "0.conv2d.bias",
                                  "1.batchnorm.weight",       "1.batchnorm.bias",
                                  "1.batchnorm.running_mean", "1.batchnorm.running_var",
                                  "4.dense.weight",           "4.dense.bias"};
    static const int ndims[] = {4, 1, 1, 1, 1, 1, 2, 1};
    static const int trainable[] = {1, 1, 1, 1, 0, 0, 1, 1};
    size_t nparams = 0;
    for (int i = 0; i < 8; i++) {
        rt_named_tensor t;
        ASSERT_EQ(rt_model_tensor(m, i, &t, &err), RT_OK);
        ASSERT_STR_EQ(t.name, names[i]);
        ASSERT_EQ(t.ndim, ndims[i]);
        ASSERT_EQ(t.trainable, trainable[i]);
        ASSERT(t.host != NULL);
        if (t.trainable) nparams += t.numel;
    }
    rt_named_tensor w;
    ASSERT_EQ(rt_model_tensor(m, 0, &w, &err), RT_OK);
    ASSERT_EQ(w.shape[0], 4);
    ASSERT_EQ(w.shape[1], 3);
    ASSERT_EQ(w.shape[2], 3);
    ASSERT_EQ(w.shape[3], 3);
    /* init: |w| <= 1/sqrt(fan_in) = 1/sqrt(27), and not all equal */
    float bound = 1.0f / sqrtf(27.0f), lo = 1, hi = -1;
    for (size_t k = 0; k < w.numel; k++) {
        ASSERT(fabsf(w.host[k]) <= bound);
        lo = fminf(lo, w.host[k]), hi = fmaxf(hi, w.host[k]);
    }
    ASSERT(hi - lo > bound); /* spread over the range, not a constant */
    rt_named_tensor rv;
    ASSERT_EQ(rt_model_tensor(m, 5, &rv, &err), RT_OK);
    ASSERT_EQ(rv.host[0], 1.0f); /* running_var starts at 1 */
    ASSERT_EQ((long)nparams, rt_model_num_params(m));
    /* write then read back through the backend-neutral calls */
    float buf[4] = {1, 2, 3, 4}, back[4];
    ASSERT_EQ(rt_model_tensor_write(m, 7, buf, &err), RT_OK);
    ASSERT_EQ(rt_model_tensor_read(m, 7, back, &err), RT_OK);
    ASSERT_EQ(memcmp(buf, back, sizeof buf), 0);
    ASSERT_NE(rt_model_tensor(m, 8, &w, &err), RT_OK);
    ASSERT_STR_CONTAINS(err.msg, "does not exist");
    rt_model_destroy(m);
    rt_backend_close(&b);
}

T_TEST(create_destroy_100_times)
{
    /* No leak: run under `meson test --setup valgrind` (tests free everything). */
    rt_error err = {0};
    rt_backend b;
    ASSERT_EQ(rt_backend_open(&b, "cpu", 1, &err), RT_OK);
    for (int i = 0; i < 100; i++) {
        rt_model *m = NULL;
        ASSERT_EQ(rt_model_create(&m, mnist_net, &mnist_in, &err), RT_OK);
        ASSERT_EQ(rt_model_attach(m, &b, 4, (uint64_t)i, &err), RT_OK);
        if (i % 10 == 0) ASSERT_EQ(rt_model_attach(m, &b, 2, (uint64_t)i, &err), RT_OK);
        rt_model_destroy(m);
        ASSERT(error_of("conv2d 4 3\nbogus\n", &mnist_in)[0] == 'l'); /* error path frees too */
    }
    rt_backend_close(&b);
}

T_TEST(bad_device_and_batch)
{
    rt_error err = {0};
    rt_backend b;
    ASSERT_EQ(rt_backend_open(&b, "tpu", 1, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "unknown device 'tpu'");
    ASSERT_EQ(rt_backend_open(&b, "cuda:x", 1, &err), RT_EINVAL);
    ASSERT_EQ(rt_backend_open(&b, "cpu", 1, &err), RT_OK);
    rt_model *m = NULL;
    ASSERT_EQ(rt_model_create(&m, mnist_net, &mnist_in, &err), RT_OK);
    ASSERT_EQ(rt_model_forward(m, 1, 0, 0, &err), RT_EINVAL); /* not attached */
    ASSERT_STR_CONTAINS(err.msg, "not attached");
    ASSERT_EQ(rt_model_attach(m, &b, 0, 1, &err), RT_EINVAL);
    ASSERT_EQ(rt_model_attach(m, &b, 2, 1, &err), RT_OK);
    ASSERT_EQ(rt_model_forward(m, 3, 0, 0, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "outside [1, 2]");
    rt_model_destroy(m);
    rt_backend_close(&b);
}

/* ResNet-20 as shipped: parameter count, the blocks in the summary, a canonical spec
 * that builds the same network, and the blocks' errors naming their lines. */
T_TEST(resnet20_and_residual_blocks)
{
    char spec[8192];
    rt_error err = {0};
    const rt_model_input in = {3, 32, 32, 10};
    ASSERT_EQ(rt_model_zoo_spec("resnet20", &in, spec, sizeof spec, &err), RT_OK);
    ASSERT_EQ(rt_model_zoo_spec("resnet1000", &in, spec, sizeof spec, &err), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(err.msg, "resnet20");
    ASSERT_EQ(rt_model_zoo_spec("resnet110", &in, spec, 100, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "does not fit 100 bytes");
    ASSERT_EQ(rt_model_zoo_spec("ResNet20", &in, spec, sizeof spec, &err), RT_OK);
    rt_model *m = NULL, *b = NULL;
    ASSERT_EQ(rt_model_create(&m, spec, &in, &err), RT_OK);
    int n;
    long total;
    const rt_summary_row *r = rt_model_summary(m, &n, &total);
    /* He et al.'s ResNet-20 with 1x1 projections: no conv has a bias (each is followed by
     * batch norm), so the 272,474 parameters are a PyTorch ResNet-20's, tensor for tensor */
    ASSERT_EQ(total, 272474);
    int blocks = 0, adds = 0, shortcuts = 0;
    for (int i = 0; i < n; i++) {
        blocks += !strcmp(r[i].spec, "residual:");
        shortcuts += !strcmp(r[i].spec, "  shortcut:");
        adds += !strncmp(r[i].spec, "    add (", 9);
    }
    ASSERT_EQ(blocks, 9);
    ASSERT_EQ(shortcuts, 2);
    ASSERT_EQ(adds, 9);
    ASSERT_STR_EQ(r[4].spec, "    conv2d 16 3 stride=1 pad=1 bias=false name=layer1.0.conv1");
    ASSERT_EQ(r[n - 3].out_c, 64); /* globalavgpool: 64x1x1 */
    ASSERT_EQ(r[n - 3].out_h, 1);
    ASSERT_EQ(rt_model_create(&b, rt_model_spec_canonical(m), &in, &err), RT_OK);
    ASSERT_STR_EQ(rt_model_spec_canonical(b), rt_model_spec_canonical(m));
    ASSERT_EQ(rt_model_num_params(b), total);
    rt_model_destroy(b);
    rt_model_destroy(m);
    /* tensor names: the layer's name= prefix (PyTorch's state_dict names), before attach */
    ASSERT_EQ(rt_model_create(&m, spec, &in, &err), RT_OK);
    rt_named_tensor t;
    ASSERT_EQ(rt_model_tensor(m, 0, &t, &err), RT_OK);
    ASSERT_STR_EQ(t.name, "conv1.weight");
    ASSERT_EQ(t.shape[0], 16);
    ASSERT_EQ(rt_model_tensor(m, rt_model_num_tensors(m) - 1, &t, &err), RT_OK);
    ASSERT_STR_EQ(t.name, "fc.bias");
    rt_model_destroy(m);
    /* a layer without name= keeps "<index>.<type>.<param>"; bad and repeated names */
    const rt_model_input tiny = {1, 4, 4, 2};
    ASSERT_EQ(rt_model_create(&m, "conv2d 2 3 name=stem.0\nflatten\ndense 2\n", &tiny, &err),
              RT_OK);
    ASSERT_EQ(rt_model_tensor(m, 1, &t, &err), RT_OK);
    ASSERT_STR_EQ(t.name, "stem.0.bias");
    ASSERT_EQ(rt_model_tensor(m, 2, &t, &err), RT_OK);
    ASSERT_STR_EQ(t.name, "2.dense.weight");
    ASSERT_STR_CONTAINS(rt_model_spec_canonical(m), "conv2d 2 3 stride=1 pad=0 name=stem.0\n");
    rt_model_destroy(m);
    m = NULL;
    static const char *const bad[] = {"name=",   "name=a..b", "name=.a",
                                      "name=a.", "name=a/c",  "name=x-y"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char s2[128];
        snprintf(s2, sizeof s2, "flatten\ndense 2 %s\n", bad[i]);
        ASSERT_EQ(rt_model_create(&m, s2, &tiny, &err), RT_EINVAL);
        ASSERT_STR_CONTAINS(err.msg, "line 2: dense: name=");
    }
    ASSERT_EQ(rt_model_create(&m, "flatten\ndense 4 name=fc\ndense 2 name=fc\n", &tiny, &err),
              RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "line 2: name=fc: the tensor 'fc.weight' is also line 3's");
    ASSERT_EQ(rt_model_create(&m, "flatten\ndense 4 name=2.dense\ndense 2\n", &tiny, &err),
              RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "'2.dense.weight' is also line 3's");
    /* padded and adaptive pooling: shapes, canonical text, bad values */
    const rt_model_input img = {3, 9, 9, 2};
    ASSERT_EQ(rt_model_create(&m,
                              "maxpool 3 stride=2 pad=1\navgpool 3 stride=1 padding=1\n"
                              "adaptiveavgpool 7 3\nadaptiveavgpool\nflatten\ndense 2\n",
                              &img, &err),
              RT_OK);
    const rt_summary_row *pr = rt_model_summary(m, &n, &total);
    ASSERT_EQ(pr[0].out_h, 5);
    ASSERT_EQ(pr[1].out_h, 5);
    ASSERT_EQ(pr[2].out_h, 7);
    ASSERT_EQ(pr[2].out_w, 3);
    ASSERT_STR_EQ(pr[3].type, "globalavgpool");
    ASSERT_STR_CONTAINS(rt_model_spec_canonical(m),
                        "maxpool 3 stride=2 pad=1\navgpool 3 stride=1 pad=1\n"
                        "adaptiveavgpool 7 3\n");
    rt_model_destroy(m);
    m = NULL;
    ASSERT_EQ(rt_model_create(&m, "maxpool 2 pad=2\nflatten\ndense 2\n", &img, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "line 1: maxpool 2 stride=2 pad=2: pad=2 is more than half");
    ASSERT_EQ(rt_model_create(&m, "avgpool 2 pad=x\nflatten\ndense 2\n", &img, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "'pad=x' needs a non-negative integer value");
    ASSERT_EQ(rt_model_create(&m, "adaptiveavgpool 0\nflatten\ndense 2\n", &img, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "'0' is not an output size in 1..4096");
    const rt_model_input small = {3, 8, 8, 4};
    ASSERT_STR_CONTAINS(error_of("residual:\n    conv2d 4 3 stride=2 pad=same\nflatten\n"
                                 "dense 4\n",
                                 &small),
                        "identity cannot be added ---> HINT: end the block with an indented "
                        "'shortcut:'");
    ASSERT_STR_CONTAINS(error_of("residual:\nflatten\ndense 4\n", &small),
                        "line 1: the residual block has no layers");
    ASSERT_STR_CONTAINS(error_of("residual:\n    relu\n    residual:\n", &small),
                        "line 3: a residual block inside another");
    ASSERT_STR_CONTAINS(error_of("relu\nshortcut:\nflatten\ndense 4\n", &small),
                        "line 2: 'shortcut:' belongs inside a residual block");
    ASSERT_STR_CONTAINS(error_of("residual:\n    relu\n  shortcut:\nflatten\ndense 4\n", &small),
                        "'shortcut:' has no layers");
    ASSERT_STR_CONTAINS(error_of("residual: now\n    relu\n", &small), "takes nothing");
    ASSERT_STR_CONTAINS(error_of("residual:\n    conv2d 4 3 pad=1\n  shortcut:\n    "
                                 "conv2d 5 1\nflatten\ndense 4\n",
                                 &small),
                        "the shortcut gives 5x8x8 but the block's layers give 4x8x8");
    ASSERT_STR_CONTAINS(error_of("conv2d 4 2 pad=same\nflatten\ndense 4\n", &small),
                        "pad=same needs an odd kernel size");
    /* indentation outside a block changes nothing */
    ASSERT_STR_EQ(error_of("  conv2d 2 3\n  flatten\n  dense 4\n", &small), "(no error)");
}

int main(void)
{
    T_RUN(resnet20_and_residual_blocks);
    T_RUN(mnist_summary);
    T_RUN(canonical_round_trip);
    T_RUN(bias_free_layers);
    T_RUN(syntax_errors_name_the_line);
    T_RUN(shape_errors_name_the_line);
    T_RUN(tensor_enumeration);
    T_RUN(create_destroy_100_times);
    T_RUN(bad_device_and_batch);
    return T_EXIT();
}
