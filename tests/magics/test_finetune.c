/* test_finetune.c - %train --init / --init-strict / --freeze / --lr-mult and %fine_tune
 * through the engine, on the tiny IDX data set of tm_util.h (3 classes) and a second one
 * with 2 classes written here: a model trained on the first and fine-tuned on the second
 * reloads every body tensor and gets a new head, frozen tensors are byte-identical after
 * training (host path and device path, which agree bit for bit), the accuracy of a run
 * carries over through --init, a plain safetensors state_dict loads, a fine-tuning run
 * resumes exactly, the options are recorded, and every bad value is an error naming its
 * option before anything trains. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg.h"
#include "rt_ckpt.h"
#include "rt_ckpt_dir.h"
#include "rt_safetensors.h"
#include "t.h"
#include "tm_util.h"

#define NET "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nflatten\ndense %d\n"

static char g_dir[128], g_two[160], g_store[256];
static mg_session *g_s;
static mg_error g_err;

static int magic(const char *line)
{
    tm_reset();
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "(%s: %s)\n", g_err.ename, g_err.evalue);
    return rc;
}

/* The 2-class set: the square at the left or the right, as tm_util's 3-class one. */
static int write_two(const char *dir, const char *img_name, const char *lab_name, int n,
                     unsigned seed)
{
    uint8_t *img = malloc((size_t)n * 64), *lab = malloc((size_t)n), h[16];
    if (!img || !lab) return -1;
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        int c = (int)((seed >> 16) % 2);
        lab[i] = (uint8_t)c;
        for (int p = 0; p < 64; p++) {
            seed = seed * 1103515245u + 12345u;
            int y = p / 8, x = p % 8, on = y >= 2 && y < 6 && x >= c * 6 && x < c * 6 + 2;
            img[(size_t)i * 64 + (size_t)p] = (uint8_t)((on ? 180 : 20) + (seed >> 16) % 60);
        }
    }
    h[0] = h[1] = 0, h[2] = 8, h[3] = 3;
    tm_be32(h + 4, (uint32_t)n), tm_be32(h + 8, 8), tm_be32(h + 12, 8);
    int rc = tm_write_gz(dir, img_name, h, 16, img, (size_t)n * 64);
    h[3] = 1;
    if (!rc) rc = tm_write_gz(dir, lab_name, h, 8, lab, (size_t)n);
    free(img);
    free(lab);
    return rc;
}

/* The model's tensor `name` of the newest checkpoint in dir into dst (n floats). */
static int ckpt_tensor(const char *dir, const char *name, float *dst, size_t n)
{
    char *path = NULL, *skipped = NULL;
    rt_error re;
    rt_ckpt_reader *rd = NULL;
    char full[128];
    snprintf(full, sizeof full, "model.%s", name);
    int rc = -1;
    if (rt_ckpt_dir_latest(dir, &path, &skipped, &re) == RT_OK &&
        rt_ckpt_reader_open(path, 0, &rd, &re) == RT_OK) {
        const rt_st_tensor_info *ti = rt_ckpt_reader_find(rd, full);
        if (ti && rt_ckpt_reader_get(rd, full, RT_ST_F32, ti->ndim, ti->shape, dst,
                                     n * sizeof(float), &re) == RT_OK)
            rc = 0;
    }
    rt_ckpt_reader_destroy(rd);
    free(path);
    free(skipped);
    return rc;
}

static const char *hyper(const char *dir)
{
    static char buf[4096];
    char *path = NULL, *skipped = NULL;
    rt_error re;
    rt_ckpt_reader *rd = NULL;
    buf[0] = 0;
    if (rt_ckpt_dir_latest(dir, &path, &skipped, &re) == RT_OK &&
        rt_ckpt_reader_open(path, 0, &rd, &re) == RT_OK) {
        const char *h = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_HYPERPARAMS);
        snprintf(buf, sizeof buf, "%s", h ? h : "");
    }
    rt_ckpt_reader_destroy(rd);
    free(path);
    free(skipped);
    return buf;
}

/* The accuracy of the last epoch line ("test_acc 0.9333"). */
static double last_acc(void)
{
    const char *p = NULL;
    for (const char *q = tm_c.out; (q = strstr(q, "_acc ")); q++) p = q;
    return p ? atof(p + 5) : -1;
}

static int setup(void)
{
    if (tm_fresh_session(&g_s) < 0) return -1;
    tm_reset();
    char net[128], line[300];
    snprintf(net, sizeof net, NET, 3);
    if (tm_setup_model(g_s, g_dir, 0, net, &g_err)) return -1;
    snprintf(line, sizeof line, "dataset %s --samples 0", g_two);
    snprintf(net, sizeof net, NET, 2);
    return tm_magic(g_s, line, NULL, &g_err) || tm_magic(g_s, "model two", net, &g_err) ? -1 : 0;
}

/* runs/a: the 3-class model trained to a good accuracy. */
static double g_acc_a;
T_TEST(test_source_run)
{
    ASSERT_EQ(setup(), 0);
    char line[2048];
    snprintf(line, sizeof line,
             "train tiny --data %s --epochs 4 --lr 0.01 --batch 30 --run-dir %s/a --results %s",
             g_dir, g_dir, g_store);
    ASSERT_EQ(magic(line), 0);
    g_acc_a = last_acc();
    ASSERT(g_acc_a > 0.8);
}

/* --init from the run: at a learning rate that cannot move it, the first epoch is as
 * accurate as the source run's last (a fresh model at that rate is near chance). */
T_TEST(test_accuracy_carries_over)
{
    char line[2048];
    snprintf(line, sizeof line,
             "train tiny --data %s --epochs 1 --lr 1e-7 --batch 30 --init %s/a --results %s", g_dir,
             g_dir, g_store);
    ASSERT_EQ(magic(line), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "loaded 4 tensors, 0 new, 0 skipped");
    ASSERT(fabs(last_acc() - g_acc_a) < 0.05);
    snprintf(line, sizeof line, "train tiny --data %s --epochs 1 --lr 1e-7 --batch 30 --results %s",
             g_dir, g_store);
    ASSERT_EQ(magic(line), 0);
    ASSERT(last_acc() < 0.6);
}

/* Fewer classes: every body tensor loads, the head is new; frozen body byte-identical. */
static void fine_tune_two(int *t_failed_, const char *dir, int device_path, float *conv_out,
                          float *head_out)
{
    char line[2048];
    tm_settings.device_path = device_path;
    snprintf(line, sizeof line,
             "train two --data %s --epochs 2 --lr 0.01 --batch 30 --init %s/a --freeze body "
             "--run-dir %s --results %s",
             g_two, g_dir, dir, g_store);
    ASSERT_EQ(magic(line), 0);
    tm_settings.device_path = 0;
    ASSERT_STR_CONTAINS(tm_c.out, "loaded 2 tensors, 2 new (4.dense.weight (2x64, source 3x64), "
                                  "4.dense.bias (2, source 3)), 0 skipped");
    ASSERT_STR_CONTAINS(tm_c.out, "--freeze body: 2 of 4 parameter tensors frozen");
    float src[4 * 9], got[4 * 9], srcb[4], gotb[4];
    ASSERT_EQ(ckpt_tensor(dir, "0.conv2d.weight", got, 36), 0);
    char a[200];
    snprintf(a, sizeof a, "%s/a", g_dir);
    ASSERT_EQ(ckpt_tensor(a, "0.conv2d.weight", src, 36), 0);
    ASSERT_EQ(memcmp(src, got, sizeof src), 0);
    ASSERT_EQ(ckpt_tensor(dir, "0.conv2d.bias", gotb, 4), 0);
    ASSERT_EQ(ckpt_tensor(a, "0.conv2d.bias", srcb, 4), 0);
    ASSERT_EQ(memcmp(srcb, gotb, sizeof srcb), 0);
    memcpy(conv_out, got, sizeof got);
    ASSERT_EQ(ckpt_tensor(dir, "4.dense.weight", head_out, 128), 0);
    const char *h = hyper(dir);
    ASSERT_STR_CONTAINS(h, "\"freeze\":\"body\"");
    ASSERT_STR_CONTAINS(h, "\"init\":\"");
}

T_TEST(test_fewer_classes_frozen_body_host_and_device)
{
    float c1[36], c2[36], h1[128], h2[128];
    char d1[200], d2[200];
    snprintf(d1, sizeof d1, "%s/two-host", g_dir);
    snprintf(d2, sizeof d2, "%s/two-dev", g_dir);
    fine_tune_two(t_failed_, d1, 0, c1, h1);
    if (*t_failed_) return;
    fine_tune_two(t_failed_, d2, 1, c2, h2);
    if (*t_failed_) return;
    ASSERT_EQ(memcmp(c1, c2, sizeof c1), 0);
    ASSERT_EQ(memcmp(h1, h2, sizeof h1), 0); /* the device path trains the same head */
    /* and the head did train: not the seed's initialisation */
    char line[2048];
    snprintf(line, sizeof line, "%s/two-seed", g_dir);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "train two --data %s --epochs 1 --lr 1e-12 --batch 300 --run-dir %s --results %s",
             g_two, line, g_store);
    ASSERT_EQ(magic(cmd), 0);
    float h0[128];
    ASSERT_EQ(ckpt_tensor(line, "4.dense.weight", h0, 128), 0);
    ASSERT(memcmp(h0, h1, sizeof h0) != 0);
}

/* --lr-mult: the rows' parameters at their rate; without the option another result. */
T_TEST(test_lr_mult_and_until)
{
    char line[2048];
    snprintf(line, sizeof line,
             "train tiny --data %s --epochs 1 --batch 30 --init %s/a --lr-mult 0.conv2d=0.5 "
             "--freeze until:4.dense --results %s",
             g_dir, g_dir, g_store);
    ASSERT_EQ(magic(line), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "--freeze until:4.dense: 2 of 4 parameter tensors frozen");
}

/* A plain safetensors state_dict (no Kiln metadata, no "model." prefix) loads too. */
T_TEST(test_plain_safetensors)
{
    char a[200], path[300], line[2048];
    snprintf(a, sizeof a, "%s/a", g_dir);
    snprintf(path, sizeof path, "%s/plain.safetensors", g_dir);
    static float w[36], b[4], dw[192], db[3];
    ASSERT_EQ(ckpt_tensor(a, "0.conv2d.weight", w, 36), 0);
    ASSERT_EQ(ckpt_tensor(a, "0.conv2d.bias", b, 4), 0);
    ASSERT_EQ(ckpt_tensor(a, "4.dense.weight", dw, 192), 0);
    ASSERT_EQ(ckpt_tensor(a, "4.dense.bias", db, 3), 0);
    rt_st_writer *wr;
    rt_error re;
    ASSERT_EQ(rt_st_writer_create(&wr, &re), RT_OK);
    int64_t sw[4] = {4, 1, 3, 3}, sb[1] = {4}, sdw[2] = {3, 64}, sdb[1] = {3}, sc[1] = {1};
    static const int64_t counter = 7;
    ASSERT_EQ(rt_st_writer_add(wr, "0.conv2d.weight", RT_ST_F32, 4, sw, w, &re), RT_OK);
    ASSERT_EQ(rt_st_writer_add(wr, "0.conv2d.bias", RT_ST_F32, 1, sb, b, &re), RT_OK);
    ASSERT_EQ(rt_st_writer_add(wr, "4.dense.weight", RT_ST_F32, 2, sdw, dw, &re), RT_OK);
    ASSERT_EQ(rt_st_writer_add(wr, "4.dense.bias", RT_ST_F32, 1, sdb, db, &re), RT_OK);
    ASSERT_EQ(rt_st_writer_add(wr, "extra.weight", RT_ST_F32, 1, sc, db, &re), RT_OK);
    ASSERT_EQ(rt_st_writer_add(wr, "bn.num_batches_tracked", RT_ST_I64, 0, sc, &counter, &re),
              RT_OK);
    size_t hn;
    char *hdr = rt_st_writer_header(wr, &hn);
    FILE *f = fopen(path, "wb");
    ASSERT(f && hdr);
    fwrite(hdr, 1, hn, f);
    for (size_t i = 0; i < rt_st_writer_count(wr); i++) {
        const rt_st_tensor_info *ti = rt_st_writer_tensor(wr, i);
        fwrite(rt_st_writer_data(wr, i), 1, ti->end - ti->begin, f);
    }
    fclose(f);
    free(hdr);
    rt_st_writer_destroy(wr);
    snprintf(line, sizeof line,
             "train tiny --data %s --epochs 1 --lr 1e-7 --batch 30 --init %s --results %s", g_dir,
             path, g_store);
    ASSERT_EQ(magic(line), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "loaded 4 tensors, 0 new, 1 skipped (extra.weight)");
    ASSERT(fabs(last_acc() - g_acc_a) < 0.05);
    /* --init-strict: the unused tensor is an error (the counter is not) */
    snprintf(line, sizeof line,
             "train tiny --data %s --epochs 1 --init %s --init-strict --results %s", g_dir, path,
             g_store);
    ASSERT_EQ(magic(line), -1);
    ASSERT_STR_EQ(g_err.ename, "ValueError");
    ASSERT_STR_CONTAINS(g_err.evalue, "--init (--init-strict)");
    ASSERT_STR_CONTAINS(g_err.evalue, "extra.weight");
    ASSERT(!strstr(tm_c.out, "epoch 1"));
}

/* A fine-tuning run stopped after one epoch and continued equals the run trained at once. */
T_TEST(test_resume_exact)
{
    char line[2048], r1[200], r2[200];
    snprintf(r1, sizeof r1, "%s/res-1", g_dir);
    snprintf(r2, sizeof r2, "%s/res-2", g_dir);
    const char *opts = "--lr 0.01 --batch 30 --freeze body --lr-mult 4.dense=3";
    snprintf(line, sizeof line,
             "train two --data %s --epochs 1 --init %s/a %s --run-dir %s --results %s", g_two,
             g_dir, opts, r1, g_store);
    ASSERT_EQ(magic(line), 0);
    snprintf(line, sizeof line,
             "train two --data %s --epochs 2 --init %s/a %s --run-dir %s --results %s", g_two,
             g_dir, opts, r1, g_store);
    ASSERT_EQ(magic(line), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "Resuming");
    ASSERT(!strstr(tm_c.out, "--init ")); /* the checkpoint holds the weights */
    snprintf(line, sizeof line,
             "train two --data %s --epochs 2 --init %s/a %s --run-dir %s --results %s", g_two,
             g_dir, opts, r2, g_store);
    ASSERT_EQ(magic(line), 0);
    float a[128], b[128];
    ASSERT_EQ(ckpt_tensor(r1, "4.dense.weight", a, 128), 0);
    ASSERT_EQ(ckpt_tensor(r2, "4.dense.weight", b, 128), 0);
    ASSERT_EQ(memcmp(a, b, sizeof a), 0);
    ASSERT_STR_CONTAINS(hyper(r1), "\"lr_mult\":\"4.dense=3\"");
    /* another --freeze is another run: it goes to a -v2 directory */
    snprintf(line, sizeof line,
             "train two --data %s --epochs 2 --init %s/a --lr 0.01 --batch 30 --run-dir %s "
             "--results %s",
             g_two, g_dir, r1, g_store);
    ASSERT_EQ(magic(line), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "--freeze");
}

T_TEST(test_bad_values_name_the_option)
{
    char bad[300], line[2048];
    snprintf(bad, sizeof bad, "%s/garbage.safetensors", g_dir);
    FILE *f = fopen(bad, "wb");
    ASSERT(f != NULL);
    fputs("this is not a safetensors file at all", f);
    fclose(f);
    struct {
        const char *opts, *ename, *want;
    } cases[] = {
        {"--init /nonexistent/x.safetensors", "FileNotFoundError", "--init /nonexistent"},
        {"--init BAD", "ValueError", "--init"},
        {"--init A --freeze layer9", "ValueError", "--freeze layer9: matches no parameter"},
        {"--init A --freeze until:nothing", "ValueError", "--freeze until:nothing: no such layer"},
        {"--freeze 0.conv2d,4.dense", "ValueError", "nothing would train"},
        {"--lr-mult 0.conv2d", "ValueError", "--lr-mult '0.conv2d': expected PREFIX=FACTOR"},
        {"--lr-mult 0.conv2d=abc", "ValueError", "--lr-mult"},
        {"--lr-mult 0.conv2d=0", "ValueError", "--lr-mult 0.conv2d=0: the factor"},
        {"--lr-mult fc=2", "ValueError", "--lr-mult fc=2: 'fc' matches no parameter"},
        {"--init-strict", "ValueError", "--init-strict needs --init"},
        {"--init A --init-strict", "ValueError", "--init (--init-strict)"},
        {"--freeze ,", "ValueError", "--freeze ','"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char opts[600];
        const char *o = cases[i].opts;
        const char *p = strstr(o, "BAD") ? "BAD" : strstr(o, "--init A") ? "A" : NULL;
        if (p && !strcmp(p, "BAD")) snprintf(opts, sizeof opts, "--init %s", bad);
        else if (p) snprintf(opts, sizeof opts, "--init %s/a%s", g_dir, o + strlen("--init A"));
        else snprintf(opts, sizeof opts, "%s", o);
        snprintf(line, sizeof line, "train two --data %s --epochs 1 --results %s %s", g_two,
                 g_store, opts);
        tm_reset();
        ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
        if (strcmp(g_err.ename, cases[i].ename) || !strstr(g_err.evalue, cases[i].want))
            fprintf(stderr, "%s -> %s: %s\n", opts, g_err.ename, g_err.evalue);
        ASSERT_STR_EQ(g_err.ename, cases[i].ename);
        ASSERT_STR_CONTAINS(g_err.evalue, cases[i].want);
        ASSERT(!strstr(tm_c.out, "epoch 1")); /* nothing trained */
    }
    /* %fine_tune needs --init */
    snprintf(line, sizeof line, "fine_tune two --data %s --results %s", g_two, g_store);
    ASSERT_EQ(magic(line), -1);
    ASSERT_STR_EQ(g_err.ename, "UsageError");
    ASSERT_STR_CONTAINS(g_err.evalue, "--init SOURCE is required");
    snprintf(line, sizeof line, "fine_tune two --init x --freeze-epochs 0");
    ASSERT_EQ(magic(line), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--freeze-epochs");
}

/* %fine_tune: the head (body frozen) in DIR/frozen, then the whole model in DIR/unfrozen
 * from it; running the cell again trains nothing more. */
T_TEST(test_fine_tune)
{
    char line[2048], dir[200], frozen[220], unfrozen[220], a[200];
    snprintf(dir, sizeof dir, "%s/ft", g_dir);
    snprintf(frozen, sizeof frozen, "%s/frozen", dir);
    snprintf(unfrozen, sizeof unfrozen, "%s/unfrozen", dir);
    snprintf(a, sizeof a, "%s/a", g_dir);
    snprintf(line, sizeof line,
             "fine_tune two --data %s --init %s --epochs 1 --batch 30 --run-dir %s --results %s",
             g_two, a, dir, g_store);
    ASSERT_EQ(magic(line), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "--freeze body: 2 of 4 parameter tensors frozen");
    ASSERT_STR_CONTAINS(tm_c.out, "loaded 4 tensors, 0 new, 0 skipped"); /* stage 2 */
    float src[36], head1[36], all[36];
    ASSERT_EQ(ckpt_tensor(a, "0.conv2d.weight", src, 36), 0);
    ASSERT_EQ(ckpt_tensor(frozen, "0.conv2d.weight", head1, 36), 0);
    ASSERT_EQ(ckpt_tensor(unfrozen, "0.conv2d.weight", all, 36), 0);
    ASSERT_EQ(memcmp(src, head1, sizeof src), 0); /* stage 1: body fixed */
    ASSERT(memcmp(src, all, sizeof src) != 0);    /* stage 2: the whole model trained */
    ASSERT_STR_CONTAINS(hyper(unfrozen), "\"lr\":0.001,");
    ASSERT_EQ(magic(line), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "frozen holds this run (same options): continuing it");
    ASSERT_STR_CONTAINS(tm_c.out, "unfrozen holds this run (same options): continuing it");
    ASSERT(!strstr(tm_c.out, "\nepoch 1")); /* both were complete: nothing trained */
    /* without a run directory: the second run starts from the first's model */
    snprintf(line, sizeof line, "fine_tune two --data %s --init %s --batch 30 --results %s", g_two,
             a, g_store);
    ASSERT_EQ(magic(line), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "--init two: loaded 4 tensors, 0 new, 0 skipped");
}

int main(void)
{
    if (tm_start(g_dir, sizeof g_dir, g_store, sizeof g_store) < 0) return 1;
    snprintf(g_two, sizeof g_two, "%s/two", g_dir);
    if (mkdir(g_two, 0700) ||
        write_two(g_two, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 300, 3) ||
        write_two(g_two, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 60, 4))
        return 1;
    T_RUN(test_source_run);
    T_RUN(test_accuracy_carries_over);
    T_RUN(test_fewer_classes_frozen_body_host_and_device);
    T_RUN(test_lr_mult_and_until);
    T_RUN(test_plain_safetensors);
    T_RUN(test_resume_exact);
    T_RUN(test_bad_values_name_the_option);
    T_RUN(test_fine_tune);
    tm_teardown(g_s, g_dir);
    return T_EXIT();
}
