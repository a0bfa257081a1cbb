/* test_train_magics.c - the training magics end to end on a tiny IDX data set, through
 * their command table entries as the engine runs them: what the user sees (summary,
 * one progress display updated in place, epoch lines, plot, evaluation, prediction
 * grid as valid PNG), what the results store records, and the errors for bad input.
 */
#include <png.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "mg_png.h"
#include "mg_run.h"
#include "rt_ckpt_dir.h"
#include "rt_results.h"
#include "rt_results_query.h"
#include "t.h"
#include "tm_util.h"

static char g_dir[128], g_store[256];
static mg_session *g_s;
static mg_error g_err;

static const char *small_net = "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nflatten\ndense 3\n";

/* 1 when b64 decodes to a PNG libpng reads, with its size in *w, *h. */
static int valid_png_b64(const char *b64, int *w, int *h)
{
    size_t n = strlen(b64), k = 0;
    unsigned char *bin = malloc(n);
    unsigned v = 0;
    int bits = 0;
    for (size_t i = 0; i < n && b64[i] != '='; i++) {
        const char *tab = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *p = strchr(tab, b64[i]);
        if (!p) return free(bin), 0;
        v = v << 6 | (unsigned)(p - tab);
        bits += 6;
        if (bits >= 8) bin[k++] = (unsigned char)(v >> (bits -= 8));
    }
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    int ok = png_image_begin_read_from_memory(&img, bin, k) != 0;
    if (ok) {
        img.format = PNG_FORMAT_RGB;
        unsigned char *px = malloc(PNG_IMAGE_SIZE(img));
        ok = px && png_image_finish_read(&img, NULL, px, 0, NULL);
        *w = (int)img.width, *h = (int)img.height;
        free(px);
    }
    png_image_free(&img);
    free(bin);
    return ok;
}

static int fresh_session(void) { return tm_fresh_session(&g_s); }
static int setup_model(void) { return tm_setup_model(g_s, g_dir, 6, small_net, &g_err); }

T_TEST(test_png_and_base64)
{
    char *b = mg_base64((const unsigned char *)"foobar", 6);
    ASSERT_STR_EQ(b, "Zm9vYmFy");
    free(b);
    b = mg_base64((const unsigned char *)"fooba", 5);
    ASSERT_STR_EQ(b, "Zm9vYmE=");
    free(b);
    b = mg_base64((const unsigned char *)"f", 1);
    ASSERT_STR_EQ(b, "Zg==");
    free(b);
    uint8_t px[3 * 5 * 4];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 7);
    char *png = mg_png_base64(px, 5, 4, 3, &g_err);
    int w = 0, h = 0;
    ASSERT(png && valid_png_b64(png, &w, &h));
    ASSERT_EQ(w, 5);
    ASSERT_EQ(h, 4);
    free(png);
    ASSERT(mg_png_base64(px, 0, 4, 3, &g_err) == NULL);
    ASSERT(mg_png_base64(px, 5, 4, 2, &g_err) == NULL);
}

T_TEST(test_options)
{
    double s;
    ASSERT_EQ(mg_run_parse_duration("8h30m", &s, &g_err), 0);
    ASSERT_NEAR(s, 30600, 0);
    ASSERT_EQ(mg_run_parse_duration("90s", &s, &g_err), 0);
    ASSERT_NEAR(s, 90, 0);
    ASSERT_EQ(mg_run_parse_duration("1.5h", &s, &g_err), 0);
    ASSERT_NEAR(s, 5400, 0);
    ASSERT_EQ(mg_run_parse_duration("8x", &s, &g_err), -1);
    ASSERT_EQ(mg_run_parse_duration("", &s, &g_err), -1);
    ASSERT_EQ(mg_run_parse_duration("h", &s, &g_err), -1);
    mg_every e;
    ASSERT_EQ(mg_run_parse_every("500steps", &e, &g_err), 0);
    ASSERT(e.unit == MG_EVERY_STEPS && e.n == 500);
    ASSERT_EQ(mg_run_parse_every("10m", &e, &g_err), 0);
    ASSERT(e.unit == MG_EVERY_SECONDS && e.n == 600);
    ASSERT_EQ(mg_run_parse_every("1epoch", &e, &g_err), 0);
    ASSERT(e.unit == MG_EVERY_EPOCHS && e.n == 1);
    ASSERT_EQ(mg_run_parse_every("2.5steps", &e, &g_err), -1);
    ASSERT_EQ(mg_run_parse_every("soon", &e, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--checkpoint-every");
    /* every option through the shared parser, then back through JSON */
    const mg_command *cmd = mg_registry_find("train");
    mg_args a;
    ASSERT_EQ(mg_args_parse(cmd,
                            "net --epochs 3 --batch 32 --lr 0.01 --optimizer sgd "
                            "--momentum 0.8 --weight-decay 0.0005 --nesterov --schedule "
                            "cosine --seed 7 --device cpu --precision fp32 --run-dir r "
                            "--checkpoint-every 1epoch --keep 2 --time-limit 1h --results "
                            "x.sqlite --augment --val 100 --name n1",
                            NULL, &a, &g_err),
              0);
    mg_run_opts o, back;
    mg_run_opts_default(&o);
    ASSERT_EQ(mg_run_opts_from_args(&o, &a, &g_err), 0);
    mg_args_deinit(&a);
    ASSERT_STR_EQ(o.model, "net");
    ASSERT(o.epochs == 3 && o.batch == 32 && o.lr == 0.01 && o.momentum == 0.8);
    ASSERT(o.nesterov && !o.augment_spec[0] && o.seed == 7 && o.keep == 2 && o.val == 100);
    ASSERT(o.time_limit_s == 3600 && o.checkpoint_every.unit == MG_EVERY_EPOCHS);
    json_t *j = mg_run_opts_to_json(&o);
    mg_run_opts_default(&back);
    ASSERT_EQ(mg_run_opts_from_json(&back, j, &g_err), 0);
    json_decref(j);
    ASSERT(back.epochs == 3 && back.lr == 0.01 && back.momentum == 0.8 && back.nesterov);
    ASSERT_STR_EQ(back.schedule, "cosine");
    ASSERT_STR_EQ(back.run_dir, "r");
    ASSERT(back.checkpoint_every.unit == MG_EVERY_EPOCHS && back.time_limit_s == 3600);
    /* bad values name the option */
    ASSERT_EQ(mg_args_parse(cmd, "--lr fast", NULL, &a, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--lr");
    ASSERT_EQ(mg_args_parse(cmd, "--optimizer rmsprop", NULL, &a, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--optimizer");
    ASSERT_EQ(mg_args_parse(cmd, "--epoch 3", NULL, &a, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--epochs");
    ASSERT_EQ(mg_args_parse(cmd, "--epochs 0", NULL, &a, &g_err), 0);
    mg_run_opts_default(&o);
    ASSERT_EQ(mg_run_opts_from_args(&o, &a, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--epochs");
    mg_args_deinit(&a);
    ASSERT_EQ(mg_args_parse(cmd, "--time-limit forever", NULL, &a, &g_err), 0);
    ASSERT_EQ(mg_run_opts_from_args(&o, &a, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--time-limit");
    mg_args_deinit(&a);
}

/* The step-level controls: parsed, stored and read back; --augment with and without a
 * SPEC (a following model name is not taken for one); bad values name the option. */
T_TEST(test_control_options)
{
    const mg_command *cmd = mg_registry_find("train");
    mg_args a;
    mg_run_opts o, back;
    ASSERT_EQ(mg_args_parse(cmd,
                            "--augment crop:2,flip,cutout:4 net --accumulate 3 --clip-grad 1.5 "
                            "--clip-value 0.25 --label-smoothing 0.1 --normalize "
                            "\"(0.1307,), (0.3081,)\"",
                            NULL, &a, &g_err),
              0);
    mg_run_opts_default(&o);
    ASSERT_STR_EQ(o.augment_spec, "none");
    ASSERT_EQ(o.accumulate, 1);
    ASSERT_EQ(mg_run_opts_from_args(&o, &a, &g_err), 0);
    mg_args_deinit(&a);
    ASSERT_STR_EQ(o.model, "net");
    ASSERT_STR_EQ(o.augment_spec, "crop:2,flip,cutout:4");
    ASSERT(o.accumulate == 3 && o.clip_grad == 1.5 && o.clip_value == 0.25);
    ASSERT(o.label_smoothing == 0.1);
    ASSERT_STR_EQ(o.normalize, "(0.1307,), (0.3081,)");
    json_t *j = mg_run_opts_to_json(&o);
    mg_run_opts_default(&back);
    ASSERT_EQ(mg_run_opts_from_json(&back, j, &g_err), 0);
    json_decref(j);
    ASSERT_STR_EQ(back.augment_spec, "crop:2,flip,cutout:4");
    ASSERT(back.accumulate == 3 && back.clip_grad == 1.5 && back.clip_value == 0.25);
    ASSERT(back.label_smoothing == 0.1);
    ASSERT_STR_EQ(back.normalize, o.normalize);
    char diff[256] = "";
    back.accumulate = 2;
    ASSERT_EQ(mg_run_opts_differences(&o, &back, diff, sizeof diff), 1); /* run-defining */
    ASSERT_STR_CONTAINS(diff, "--accumulate 3 (checkpoint 2)");
    /* --augment alone, before the model name: the data set's default */
    ASSERT_EQ(mg_args_parse(cmd, "--augment net", NULL, &a, &g_err), 0);
    mg_run_opts_default(&o);
    ASSERT_EQ(mg_run_opts_from_args(&o, &a, &g_err), 0);
    mg_args_deinit(&a);
    ASSERT_STR_EQ(o.model, "net");
    ASSERT_STR_EQ(o.augment_spec, "");
    /* an older checkpoint's "augment": true is the one spec it meant then (the data
     * sets' defaults have changed since), so the run resumes bit for bit */
    j = json_pack("{s:b}", "augment", 1);
    mg_run_opts_default(&back);
    ASSERT_EQ(mg_run_opts_from_json(&back, j, &g_err), 0);
    json_decref(j);
    ASSERT_STR_EQ(back.augment_spec, "crop:4,flip");
    const char *bad[][2] = {
        {"--accumulate 0", "%train: --accumulate must be in 1..4096, got 0"},
        {"--label-smoothing 1.5", "%train: --label-smoothing must be in [0, 1), got 1.5"},
        {"--label-smoothing -0.1", "--label-smoothing must be in [0, 1)"},
        {"--clip-grad -1", "%train: --clip-grad must be > 0, got -1"},
        {"--clip-value -0.5", "%train: --clip-value must be > 0, got -0.5"},
        {"--augment crop:-1,spin",
         "%train: --augment crop:-1: the padding must be an integer in [0, 64]"},
        {"--augment=spin", "%train: --augment: unknown item 'spin'"},
        {"--augment flip,spin", "%train: --augment: unknown item 'spin'"},
        {"--normalize 0.5", "%train: --normalize '0.5': 1 numbers"},
        {"--normalize 0.5,-1", "%train: --normalize '0.5,-1': standard deviation -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_EQ(mg_args_parse(cmd, bad[i][0], NULL, &a, &g_err), 0);
        mg_run_opts_default(&o);
        int rc = mg_run_opts_from_args(&o, &a, &g_err);
        mg_args_deinit(&a);
        if (rc != -1) T_FAIL_("'%s' was accepted", bad[i][0]);
        ASSERT_STR_CONTAINS(g_err.evalue, bad[i][1]);
    }
}

T_TEST(test_errors_before_training)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "train", NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "no model");
    ASSERT_EQ(tm_magic(g_s, "model tiny", small_net, &g_err), -1); /* no data set */
    ASSERT_STR_CONTAINS(g_err.evalue, "%dataset");
    ASSERT_EQ(tm_magic(g_s, "dataset /nonexistent/kiln-data", NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "/nonexistent/kiln-data");
    ASSERT_EQ(tm_magic(g_s, "evaluate", NULL, &g_err), -1);
    ASSERT_EQ(tm_magic(g_s, "model tiny --input 1x8x8 --classes 3", small_net, &g_err), 0);
    ASSERT_EQ(tm_magic(g_s, "train tiny", NULL, &g_err), -1); /* model, but no data */
    ASSERT_STR_CONTAINS(g_err.evalue, "data set");
    ASSERT_EQ(tm_magic(g_s, "evaluate tiny", NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "not been trained");
    ASSERT_EQ(tm_magic(g_s, "model bad --input 1x8x8 --classes 3",
                       "conv2d 4 3\nrelu\nflatten\ndense x\n", &g_err),
              -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "cell line 5");
    ASSERT_EQ(tm_magic(g_s, "model frobnicate", NULL, &g_err), -1);
    ASSERT_EQ(tm_magic(g_s, "train nosuch", NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "nosuch");
}

/* The text/plain of the first display holding needle, or NULL. */
static const char *display_text(const char *needle)
{
    size_t i;
    json_t *d;
    json_array_foreach(tm_c.log, i, d)
    {
        const char *tp =
            json_string_value(json_object_get(json_object_get(d, "data"), "text/plain"));
        if (tp && strstr(tp, needle)) return tp;
    }
    return NULL;
}

T_TEST(test_dataset_and_model)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    ASSERT_EQ(setup_model(), 0);
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(
                            json_object_get(json_array_get(tm_c.log, 0), "data"), "text/plain")),
                        "train 300, val 0, test 90");
    const char *png = json_string_value(
        json_object_get(json_object_get(json_array_get(tm_c.log, 1), "data"), "image/png"));
    int w = 0, h = 0;
    ASSERT(png && valid_png_b64(png, &w, &h));
    ASSERT(w > 6 * 16 && h > 16);
    /* summary: conv 4*1*3*3+4 = 40, dense 4*4*4*3+3 = 195 -> 235 */
    ASSERT_EQ(capture_count(&tm_c, "text/html", "Model: \"tiny\"", NULL, NULL), 1);
    const char *text = json_string_value(
        json_object_get(json_object_get(json_array_get(tm_c.log, 2), "data"), "text/plain"));
    ASSERT_STR_CONTAINS(text, "Total params: 235");
    ASSERT_STR_CONTAINS(text, "(4, 8, 8)");
    ASSERT_STR_CONTAINS(text, "(64)");
    /* the last layer must fit the 3 classes */
    ASSERT_EQ(tm_magic(g_s, "model wide", "flatten\ndense 10\n", &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "wide");
    /* --subset cuts the training split; asking for the whole split loads it again */
    char line[256];
    tm_reset();
    snprintf(line, sizeof line, "dataset %s --samples 0 --subset 100", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_STR_CONTAINS(
        tm_c.log ? json_string_value(json_object_get(
                       json_object_get(json_array_get(tm_c.log, 0), "data"), "text/plain"))
                 : NULL,
        "train 100, val 0");
    tm_reset();
    snprintf(line, sizeof line, "dataset %s --samples 0", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(
                            json_object_get(json_array_get(tm_c.log, 0), "data"), "text/plain")),
                        "train 300, val 0");
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "model list", NULL, &g_err), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "tiny");
    ASSERT_STR_CONTAINS(tm_c.out, "Shipped networks");
    ASSERT_STR_CONTAINS(tm_c.out, "resnet110");
    ASSERT_STR_CONTAINS(tm_c.out, "lenet5");
    /* a shipped network for an explicit input: LeNet-5 on 28x28, 61,706 as in PyTorch */
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "model le lenet5 --input 1x28x28 --classes 10", NULL, &g_err), 0);
    ASSERT_STR_CONTAINS(display_text("Model: \"le\""), "Total params: 61,706");
    ASSERT_STR_CONTAINS(display_text("Model: \"le\""), "name=fc3");
    ASSERT_EQ(tm_magic(g_s, "model le resnet99 --input 3x32x32 --classes 10", NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "%model le: no shipped model 'resnet99'");
    ASSERT_STR_CONTAINS(g_err.evalue, "resnet56");
    ASSERT_EQ(tm_magic(g_s, "model show tiny", NULL, &g_err), 0);
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Model: \"tiny\"", NULL, NULL), 1);
}

T_TEST(test_train_evaluate_predict)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    ASSERT_EQ(setup_model(), 0);
    tm_reset();
    char line[512];
    snprintf(line, sizeof line, "train tiny --epochs 3 --batch 16 --lr 0.01 --results %s", g_store);
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    /* one progress display, shown once and then only updated */
    const char *id = NULL;
    int updates = 0, n = capture_count(&tm_c, "text/html", "epoch ", &id, &updates);
    ASSERT(id != NULL);
    ASSERT(n >= 3);
    ASSERT_EQ(updates, n - 1);
    size_t i;
    json_t *d;
    json_array_foreach(tm_c.log, i, d)
    {
        const char *did = json_string_value(json_object_get(d, "id"));
        const char *tp =
            json_string_value(json_object_get(json_object_get(d, "data"), "text/plain"));
        if (tp && !strncmp(tp, "epoch ", 6)) ASSERT_STR_EQ(did, id);
    }
    /* the final progress says all 57 steps (3 epochs of ceil(300/16) = 19) */
    json_t *last = NULL;
    json_array_foreach(tm_c.log, i, d) if (json_is_string(json_object_get(d, "id")) &&
                                           !strcmp(json_string_value(json_object_get(d, "id")), id))
        last = d;
    ASSERT_STR_CONTAINS(
        json_string_value(json_object_get(json_object_get(last, "data"), "text/plain")),
        "step 57/57");
    /* epoch lines, plot updated per epoch, summary */
    ASSERT_STR_CONTAINS(tm_c.out, "epoch 1/3  loss");
    ASSERT_STR_CONTAINS(tm_c.out, "epoch 3/3  loss");
    ASSERT_STR_CONTAINS(tm_c.out, "test_acc");
    int plots_updated = 0;
    ASSERT_EQ(capture_count(&tm_c, "image/svg+xml", NULL, NULL, &plots_updated), 3);
    ASSERT_EQ(plots_updated, 3); /* the plot display is made (as a placeholder) before epoch 1 */
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: finished", NULL, NULL), 1);
    /* recorded: params, step and epoch metrics, finished */
    rt_results *rs = NULL;
    rt_error re;
    ASSERT_EQ(rt_results_open(g_store, &rs, &re), RT_OK);
    int64_t run;
    ASSERT_EQ(rt_results_find(rs, "last", &run, &re), RT_OK);
    rt_results_run r;
    ASSERT_EQ(rt_results_get_run(rs, run, &r, &re), RT_OK);
    ASSERT_EQ(r.status, RT_RESULTS_FINISHED);
    char buf[64];
    double num = 0;
    int isnum = 0;
    ASSERT(rt_results_run_value(&r, "lr", buf, sizeof buf, &num, &isnum) && num == 0.01);
    ASSERT(rt_results_run_value(&r, "params_total", buf, sizeof buf, &num, &isnum) && num == 235);
    ASSERT(rt_results_run_value(&r, "val_accuracy", buf, sizeof buf, &num, &isnum));
    double acc = num;
    rt_results_run_free(&r);
    double *x, *y;
    size_t ns;
    ASSERT_EQ(rt_results_series(rs, run, "loss", RT_RESULTS_STEP, &x, &y, &ns, &re), RT_OK);
    ASSERT_EQ(ns, 57);
    free(x);
    free(y);
    rt_results_close(rs);
    ASSERT(acc > 0.8); /* the squares are easy: a tiny net learns them in 3 epochs */
    /* %results, without --results, reads the store this session's %train used */
    setenv("KILN_RESULTS", "/nonexistent/kiln-results.sqlite", 1);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "results list", NULL, &g_err), 0);
    ASSERT_EQ(capture_count(&tm_c, "text/plain", NULL, NULL, NULL) >= 1, 1);
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(
                            json_object_get(json_array_get(tm_c.log, 0), "data"), "text/plain")),
                        "tiny");
    unsetenv("KILN_RESULTS");
    /* evaluate: same accuracy as the last validation (val = test here), SVG matrix
     * (test_evaluate_confusion_svg checks the picture) */
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "evaluate tiny", NULL, &g_err), 0);
    json_t *data = json_object_get(json_array_get(tm_c.log, 0), "data");
    int w, h;
    ASSERT(json_string_value(json_object_get(data, "image/svg+xml")) != NULL);
    ASSERT(valid_png_b64(json_string_value(json_object_get(data, "image/png")), &w, &h));
    ASSERT_EQ(w, 3 * 28); /* the text-less fallback picture */
    char want[64];
    snprintf(want, sizeof want, "accuracy %.4f", acc);
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(data, "text/plain")), want);
    /* predict: a valid PNG grid and one caption per image */
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "predict tiny --samples 5 --seed 3", NULL, &g_err), 0);
    data = json_object_get(json_array_get(tm_c.log, 0), "data");
    ASSERT(valid_png_b64(json_string_value(json_object_get(data, "image/png")), &w, &h));
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(data, "text/html")), "data:image/png");
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(data, "text/plain")), "tiny on 5");
    ASSERT_EQ(tm_magic(g_s, "predict tiny --samples 0", NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--samples");
}

/* The step losses a run recorded in the store (newest run), *n of them. */
static double *recorded(const char *key, size_t *n)
{
    rt_results *rs = NULL;
    rt_error re;
    int64_t run;
    double *x = NULL, *y = NULL;
    if (rt_results_open(g_store, &rs, &re) != RT_OK) return NULL;
    if (rt_results_find(rs, "last", &run, &re) != RT_OK ||
        rt_results_series(rs, run, key, RT_RESULTS_STEP, &x, &y, n, &re) != RT_OK)
        y = NULL;
    free(x);
    rt_results_close(rs);
    return y;
}

T_TEST(test_device_path_run)
{
    /* %train through the trainer's device path (settings.device_path; what a GPU runs)
     * shows and records what the host path does: every step's loss in the store (read
     * from the device in batches, delivered in order), bitwise the same losses, one progress
     * display ending at 57/57, three epoch lines; and an interrupt still stops after
     * the step it says. */
    char line[512];
    snprintf(line, sizeof line,
             "train tiny --epochs 3 --batch 16 --lr 0.01 --seed 5 "
             "--results %s",
             g_store);
    size_t na = 0, nb = 0;
    ASSERT_EQ(fresh_session(), 0);
    ASSERT_EQ(setup_model(), 0);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    double *a = recorded("loss", &na);
    ASSERT_EQ(fresh_session(), 0);
    ASSERT_EQ(setup_model(), 0);
    tm_reset();
    tm_settings.device_path = 1;
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    double *b = recorded("loss", &nb);
    ASSERT(a && b);
    ASSERT_EQ(na, 57);
    ASSERT_EQ(nb, 57);
    ASSERT_EQ(memcmp(a, b, na * sizeof *a), 0); /* the same doubles */
    free(a);
    free(b);
    const char *id = NULL;
    int updates = 0, n = capture_count(&tm_c, "text/html", "epoch ", &id, &updates);
    ASSERT(n >= 1 && updates == n - 1);
    ASSERT_STR_CONTAINS(tm_c.out, "epoch 3/3  loss");
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: finished", NULL, NULL), 1);
    tm_reset();
    tm_interrupt_after = 5;
    snprintf(line, sizeof line, "train tiny --epochs 2 --batch 16 --results %s", g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_EQ(g_err.ename, "KeyboardInterrupt");
    ASSERT_STR_CONTAINS(g_err.evalue, "after step 5 of 38");
    tm_settings.device_path = 0;
}

/* %train with every step-level control: an update is --batch x --accumulate images (38
 * updates in 2 epochs, as --batch 16), the host path and the device path record the
 * same losses bit for bit, the loss falls, and a --normalize of the wrong channel count
 * is refused before a step. */
T_TEST(test_controls_run)
{
    char line[512];
    snprintf(line, sizeof line,
             "train tiny --epochs 2 --batch 8 --accumulate 2 --clip-grad 1 --clip-value 0.5 "
             "--label-smoothing 0.1 --augment crop:1,flip,cutout:2 --normalize 0.5,0.25 "
             "--lr 0.01 --seed 5 --results %s",
             g_store);
    size_t na = 0, nb = 0;
    double *a = NULL, *b = NULL;
    for (int dev = 0; dev < 2; dev++) {
        ASSERT_EQ(fresh_session(), 0);
        tm_reset();
        ASSERT_EQ(setup_model(), 0);
        tm_reset();
        tm_settings.device_path = dev;
        int rc = tm_magic(g_s, line, NULL, &g_err);
        tm_settings.device_path = 0;
        if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
        ASSERT_EQ(rc, 0);
        ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: finished", NULL, NULL), 1);
        if (dev) b = recorded("loss", &nb);
        else a = recorded("loss", &na);
    }
    ASSERT(a && b);
    ASSERT_EQ(na, 38);
    ASSERT_EQ(nb, 38);
    ASSERT_EQ(memcmp(a, b, na * sizeof *a), 0);
    ASSERT(a[na - 1] < a[0]);
    free(a);
    free(b);
    snprintf(line, sizeof line, "train tiny --normalize 0.5,0.5,0.5,0.2,0.2,0.2 --results %s",
             g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--normalize '0.5,0.5,0.5,0.2,0.2,0.2' gives 3 channels");
}

T_TEST(test_interrupt_and_time_limit)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    ASSERT_EQ(setup_model(), 0);
    tm_reset();
    tm_interrupt_after = 5; /* the 6th poll (before step 6) sees the interrupt */
    char line[512];
    snprintf(line, sizeof line, "train tiny --epochs 2 --batch 16 --results %s", g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_EQ(g_err.ename, "KeyboardInterrupt");
    ASSERT_STR_CONTAINS(g_err.evalue, "after step 5 of 38");
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: stopped by an interrupt after step 5",
                            NULL, NULL),
              1);
    rt_results_run r;
    ASSERT_EQ(tm_last_run(g_store, &r), 0);
    ASSERT_EQ(r.status, RT_RESULTS_INTERRUPTED);
    rt_results_run_free(&r);
    /* the model stays usable */
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "evaluate tiny", NULL, &g_err), 0);
    /* the time limit stops the same way, but is not an error */
    tm_reset();
    snprintf(line, sizeof line,
             "train tiny --epochs 100000 --batch 16 --time-limit 1s "
             "--results %s",
             g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: stopped by the time limit", NULL, NULL),
              1);
}

T_TEST(test_broken_store_refuses_the_run)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    ASSERT_EQ(setup_model(), 0);
    char path[256], line[512];
    snprintf(path, sizeof path, "%s/not-a-store.sqlite", g_dir);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    fputs("this is not an SQLite database, just text that is long enough to be read\n", f);
    fclose(f);
    tm_reset();
    snprintf(line, sizeof line, "train tiny --batch 32 --results %s", path);
    /* a store that cannot record the run's start refuses the run before step 1
     * (docs/results.md); failures after the start stay warnings */
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "not an SQLite database");
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: finished", NULL, NULL), 0);
}

/* A run that cannot write its final checkpoint fails: an error, recorded as failed. */
T_TEST(test_failed_run_is_recorded)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    ASSERT_EQ(setup_model(), 0);
    /* a directory where the checkpoint of the last step (10 = ceil(300/32)) goes */
    char dir[256], name[64], block[400], line[700];
    snprintf(dir, sizeof dir, "%s/failrun", g_dir);
    rt_ckpt_dir_name(10, name, sizeof name);
    snprintf(block, sizeof block, "%s/%s", dir, name);
    ASSERT_EQ(mkdir(dir, 0777), 0);
    ASSERT_EQ(mkdir(block, 0777), 0);
    char inner[460]; /* non-empty: no rename can replace it */
    snprintf(inner, sizeof inner, "%s/keep", block);
    FILE *f = fopen(inner, "w");
    ASSERT(f != NULL);
    fclose(f);
    tm_reset();
    snprintf(line, sizeof line, "train tiny --batch 32 --run-dir %s --results %s", dir, g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, name);
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: failed", NULL, NULL), 1);
    rt_results_run r;
    ASSERT_EQ(tm_last_run(g_store, &r), 0);
    ASSERT_EQ(r.status, RT_RESULTS_FAILED);
    rt_results_run_free(&r);
}

T_TEST(test_shapes_and_device_errors)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "model big --input 1x28x28 --classes 10",
                       "conv2d 4 3\nrelu\nflatten\ndense 10\n", &g_err),
              0);
    char line[256];
    snprintf(line, sizeof line, "dataset %s --samples 0", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_EQ(tm_magic(g_s, "train big", NULL, &g_err), -1);
    ASSERT_STR_EQ(g_err.ename, "ValueError");
    ASSERT_STR_CONTAINS(g_err.evalue, "does not fit");
    ASSERT_EQ(tm_magic(g_s, "model tiny", small_net, &g_err), 0);
    ASSERT_EQ(tm_magic(g_s, "train tiny --device tpu", NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--device");
    /* bf16 on the CPU needs the AVX-512 loops and AVX512_BF16: here refused through
     * KILN_CPU_CONV=avx2, naming what is missing (tests/runtime/test_cpu_bf16.c and
     * tests/resume train with it where the CPU has it) */
    setenv("KILN_CPU_CONV", "avx2", 1);
    int rc = tm_magic(g_s, "train tiny --device cpu --precision bf16", NULL, &g_err);
    unsetenv("KILN_CPU_CONV");
    ASSERT_EQ(rc, -1);
    ASSERT_STR_EQ(g_err.ename, "RuntimeError");
    ASSERT_STR_CONTAINS(g_err.evalue, "%train: --precision bf16: bf16 on the CPU needs the AVX-512 "
                                      "convolution loops, which KILN_CPU_CONV turned off");
    ASSERT_EQ(tm_magic(g_s, "train tiny --device cpu --precision fp16", NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "needs a CUDA device");
    ASSERT_EQ(tm_magic(g_s, "train tiny --schedule wobbly", NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--schedule");
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "device", NULL, &g_err), 0);
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "cpu ", NULL, NULL), 1);
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(
                            json_object_get(json_array_get(tm_c.log, 0), "data"), "text/plain")),
                        "--device auto picks");
}

/* %evaluate's confusion matrix is one labelled SVG: every class name on the axes, the
 * count in every cell (title "true A, predicted B: N" = the text matrix), row i = true
 * class i (the diagonal cell of class i sits in the i-th row and column), and the
 * diagonal equals the correct count of each class (recall * support). Runs after
 * test_train_evaluate_predict, on its trained model. */
T_TEST(test_evaluate_confusion_svg)
{
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "evaluate tiny", NULL, &g_err), 0);
    json_t *data = json_object_get(json_array_get(tm_c.log, 0), "data");
    const char *svg = json_string_value(json_object_get(data, "image/svg+xml"));
    const char *text = json_string_value(json_object_get(data, "text/plain"));
    const char *html = json_string_value(json_object_get(data, "text/html"));
    ASSERT(svg && text && html);
    ASSERT(!strncmp(svg, "<svg ", 5));
    ASSERT_STR_CONTAINS(svg, ">true</text>");
    ASSERT_STR_CONTAINS(svg, ">predicted</text>");
    ASSERT_STR_CONTAINS(html, svg); /* the HTML shows the same picture */
    /* the per-class table and the text matrix */
    char names[3][32];
    long long sup[3], m[3][3];
    double rec[3];
    const char *p = strstr(text, "support\n");
    ASSERT(p != NULL);
    p += 8;
    for (int c = 0; c < 3; c++) {
        int idx = -1, used = 0;
        double prec, f1;
        ASSERT_EQ(sscanf(p, "%d %31s %lf %lf %lf %lld%n", &idx, names[c], &prec, &rec[c], &f1,
                         &sup[c], &used),
                  6);
        ASSERT_EQ(idx, c);
        /* F1: the harmonic mean of the two columns before it (4 printed decimals) */
        ASSERT_NEAR(f1, prec + rec[c] > 0 ? 2 * prec * rec[c] / (prec + rec[c]) : 0, 2e-4);
        p = strchr(p + used, '\n') + 1;
    }
    p = strstr(text, "predicted):\n");
    ASSERT(p != NULL);
    p += 12;
    for (int t = 0; t < 3; t++) {
        int idx = -1, used = 0;
        char nm[32];
        ASSERT_EQ(
            sscanf(p, "%d %31s %lld %lld %lld%n", &idx, nm, &m[t][0], &m[t][1], &m[t][2], &used),
            5);
        ASSERT_EQ(idx, t);
        ASSERT_STR_EQ(nm, names[t]);
        p = strchr(p + used, '\n') + 1;
    }
    int last_x = -1, last_y = -1;
    for (int t = 0; t < 3; t++) {
        char want[256];
        snprintf(want, sizeof want, ">%s</text>", names[t]); /* axis label */
        ASSERT_STR_CONTAINS(svg, want);
        ASSERT_EQ(m[t][t], (long long)(rec[t] * (double)sup[t] + 0.5)); /* correct count */
        for (int q = 0; q < 3; q++) {
            snprintf(want, sizeof want, "<title>true %s, predicted %s: %lld</title>", names[t],
                     names[q], m[t][q]);
            ASSERT_STR_CONTAINS(svg, want);
            snprintf(want, sizeof want, ">%lld</text></g>", m[t][q]); /* count drawn */
            ASSERT_STR_CONTAINS(svg, want);
        }
        snprintf(want, sizeof want, "<title>true %s, predicted %s: ", names[t], names[t]);
        const char *cell = strstr(svg, want);
        int x = -1, y = -1;
        ASSERT(cell && (cell = strstr(cell, "<rect ")) != NULL);
        ASSERT_EQ(sscanf(cell, "<rect x=\"%d\" y=\"%d\"", &x, &y), 2);
        ASSERT(x > last_x && y > last_y); /* row t and column t are the t-th ones */
        last_x = x, last_y = y;
    }
    /* --top K: top-1 is the accuracy, top-3 of 3 classes is 1, top-2 lies between */
    double acc = -1, t1 = -1, t2 = -1, t3 = -1;
    ASSERT_EQ(sscanf(text, "%*s on %*s accuracy %lf", &acc), 1);
    const char *tops[] = {"evaluate tiny --top 1", "evaluate tiny --top 2",
                          "evaluate tiny --top 3"};
    double *got[] = {&t1, &t2, &t3};
    for (int i = 0; i < 3; i++) {
        tm_reset();
        ASSERT_EQ(tm_magic(g_s, tops[i], NULL, &g_err), 0);
        const char *tx = json_string_value(
            json_object_get(json_object_get(json_array_get(tm_c.log, 0), "data"), "text/plain"));
        char key[32];
        snprintf(key, sizeof key, "top-%d accuracy ", i + 1);
        const char *q = tx ? strstr(tx, key) : NULL;
        ASSERT(q != NULL);
        ASSERT_EQ(sscanf(q + strlen(key), "%lf", got[i]), 1);
    }
    ASSERT_NEAR(t1, acc, 1e-9);
    ASSERT(t2 >= t1 && t2 <= 1.0);
    ASSERT_NEAR(t3, 1.0, 1e-9);
    ASSERT_EQ(tm_magic(g_s, "evaluate tiny --top 0", NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--top must be in 1..");
    ASSERT_EQ(tm_magic(g_s, "evaluate tiny --top 4", NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--top 4:");
}

/* The sample grid's HTML wraps in a narrow pane (CSS grid auto-fill with a minimum cell
 * width, capped by max-width) instead of a fixed column count that cut the last columns
 * off in a narrow JupyterLab pane. */
T_TEST(test_sample_grid_wraps)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    char line[256];
    snprintf(line, sizeof line, "dataset %s --samples 12", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    const char *html = json_string_value(
        json_object_get(json_object_get(json_array_get(tm_c.log, 1), "data"), "text/html"));
    ASSERT(html != NULL);
    ASSERT_STR_CONTAINS(html, "grid-template-columns:repeat(auto-fill,minmax(");
    ASSERT_STR_CONTAINS(html, "max-width:");
    ASSERT(strstr(html, "grid-template-columns:repeat(1") == NULL); /* no fixed count */
    int n = 0;
    for (const char *p = html; (p = strstr(p, "<img ")) != NULL; p++) n++;
    ASSERT_EQ(n, 12);
}

int main(void)
{
    if (tm_start(g_dir, sizeof g_dir, g_store, sizeof g_store)) return 99;
    T_RUN(test_png_and_base64);
    T_RUN(test_options);
    T_RUN(test_control_options);
    T_RUN(test_errors_before_training);
    T_RUN(test_dataset_and_model);
    T_RUN(test_train_evaluate_predict);
    T_RUN(test_evaluate_confusion_svg);
    T_RUN(test_interrupt_and_time_limit);
    T_RUN(test_device_path_run);
    T_RUN(test_controls_run);
    T_RUN(test_broken_store_refuses_the_run);
    T_RUN(test_failed_run_is_recorded);
    T_RUN(test_shapes_and_device_errors);
    T_RUN(test_sample_grid_wraps);
    tm_teardown(g_s, g_dir);
    return T_EXIT();
}
