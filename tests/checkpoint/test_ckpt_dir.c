/* test_ckpt_dir.c - run directories: names, listing with validity, newest-valid
 * selection that skips (and reports) damaged newer files, rotation keeping the newest
 * N plus the best by metric, never deleting damaged or user-named files. */
#include "ck_util.h"

#include <sys/stat.h>

#include "rt_ckpt_dir.h"
#include "t.h"

static char root[256];

/* A fresh run dir under root. */
static void run_dir(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", root, name);
    mkdir(out, 0777);
}

static void save(const char *d, int64_t step, double value, int higher_is_better)
{
    char *p = NULL;
    ck_sample s;
    if (rt_ckpt_dir_path(d, step, &p, NULL) != RT_OK ||
        ck_save_sample_mode(p, step, value, higher_is_better, &s, NULL) != RT_OK)
        fprintf(stderr, "setup: cannot save step %lld in %s\n", (long long)step, d);
    free(p);
}

/* Damages the checkpoint of `step`: truncate it (mode 't') or flip a data byte ('f'). */
static void damage(const char *d, int64_t step, char mode)
{
    char *p = NULL;
    size_t len = 0;
    if (rt_ckpt_dir_path(d, step, &p, NULL) != RT_OK) {
        fprintf(stderr, "setup: no path for step %lld in %s\n", (long long)step, d);
        return;
    }
    unsigned char *b = ck_read(p, &len);
    if (b && len > 5) {
        if (mode == 'f') b[len - 5] ^= 0x10;
        ck_write(p, b, mode == 't' ? len / 2 : len);
    }
    free(b);
    free(p);
}

static int has_step(const char *d, int64_t step)
{
    char *p = NULL;
    if (rt_ckpt_dir_path(d, step, &p, NULL) != RT_OK) return 0;
    int ok = ck_exists(p);
    free(p);
    return ok;
}

T_TEST(names_and_paths)
{
    char name[64], *p = NULL;
    rt_ckpt_dir_name(1234, name, sizeof name);
    ASSERT_STR_EQ(name, "ckpt-step00001234.safetensors");
    rt_ckpt_dir_name(123456789012, name, sizeof name);
    ASSERT_STR_EQ(name, "ckpt-step123456789012.safetensors");
    ASSERT_EQ(rt_ckpt_dir_path("runs/a/", 5, &p, NULL), RT_OK);
    ASSERT_STR_EQ(p, "runs/a/ckpt-step00000005.safetensors");
    free(p);
    char d[400], f[500];
    snprintf(d, sizeof d, "%s/x/y/z", root);
    ASSERT_EQ(rt_ckpt_dir_ensure(d, NULL), RT_OK);
    ASSERT_EQ(rt_ckpt_dir_ensure(d, NULL), RT_OK);
    snprintf(f, sizeof f, "%s/file", d);
    ASSERT_EQ(ck_write(f, "x", 1), 0);
    rt_error err;
    ASSERT(rt_ckpt_dir_ensure(f, &err) != RT_OK);
    ASSERT_STR_CONTAINS(err.msg, f);
}

T_TEST(list_and_newest_valid_skips_damaged)
{
    char d[400], extra[500];
    run_dir(d, sizeof d, "skip");
    for (int s = 100; s <= 500; s += 100) save(d, s, s / 1000.0, 1);
    damage(d, 400, 't');
    damage(d, 500, 'f');
    snprintf(extra, sizeof extra, "%s/notes.txt", d);
    ck_write(extra, "hi", 2);
    snprintf(extra, sizeof extra, "%s/ckpt-step00000600.safetensors.tmp", d);
    ck_write(extra, "partial", 7);

    rt_ckpt_list l;
    rt_error err;
    ASSERT_EQ(rt_ckpt_dir_scan(d, 0, &l, &err), RT_OK);
    ASSERT_EQ(l.count, 5);
    for (size_t i = 0; i < 5; i++) ASSERT_EQ(l.items[i].valid, i < 3);
    ASSERT_EQ(l.items[0].step, 100);
    ASSERT_EQ(l.items[0].epoch, 1);
    ASSERT(l.items[0].has_metric && l.items[0].metric.value == 0.1);
    ASSERT_EQ(strlen(l.items[0].created), 20);
    ASSERT(l.items[0].size > 1000);
    ASSERT_STR_EQ(l.items[3].name, "ckpt-step00000400.safetensors");
    ASSERT_STR_CONTAINS(l.items[3].error, "truncated");
    ASSERT_STR_CONTAINS(l.items[3].error, l.items[3].path);
    ASSERT_STR_CONTAINS(l.items[4].error, "data checksum mismatch");
    ASSERT_EQ(rt_ckpt_list_newest_valid(&l), 2);
    rt_ckpt_list_deinit(&l);

    char *path = NULL, *skipped = NULL;
    ASSERT_EQ(rt_ckpt_dir_latest(d, &path, &skipped, &err), RT_OK);
    ASSERT_STR_CONTAINS(path, "ckpt-step00000300.safetensors");
    ASSERT(ck_holds_step(path, 300));
    ASSERT_STR_CONTAINS(skipped, "ckpt-step00000400.safetensors: ");
    ASSERT_STR_CONTAINS(skipped, "ckpt-step00000500.safetensors: ");
    free(path);
    free(skipped);

    /* nothing newer is damaged: no report */
    char d2[400];
    run_dir(d2, sizeof d2, "clean");
    save(d2, 1, 0.1, 1);
    save(d2, 2, 0.1, 1);
    ASSERT_EQ(rt_ckpt_dir_latest(d2, &path, &skipped, &err), RT_OK);
    ASSERT_STR_CONTAINS(path, "ckpt-step00000002");
    ASSERT(skipped == NULL);
    free(path);
}

T_TEST(no_valid_checkpoint)
{
    char d[400], *path = NULL, *skipped = NULL;
    rt_error err;
    run_dir(d, sizeof d, "allbad");
    ASSERT_EQ(rt_ckpt_dir_latest(d, &path, &skipped, &err), RT_ENOTFOUND); /* empty */
    ASSERT_STR_CONTAINS(err.msg, d);
    save(d, 10, 0, 1);
    damage(d, 10, 'f');
    ASSERT_EQ(rt_ckpt_dir_latest(d, &path, &skipped, &err), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(err.msg, d);
    ASSERT_STR_CONTAINS(err.msg, "ckpt-step00000010.safetensors");
    ASSERT(path == NULL && skipped == NULL);
    char missing[500];
    snprintf(missing, sizeof missing, "%s/does-not-exist", root);
    rt_ckpt_list l;
    ASSERT_EQ(rt_ckpt_dir_scan(missing, 0, &l, &err), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(err.msg, missing);
}

T_TEST(rotate_keeps_newest_n_and_best)
{
    char d[400];
    size_t removed = 0;
    run_dir(d, sizeof d, "rot");
    const double acc[] = {0.5, 0.95, 0.7, 0.8, 0.6, 0.65};
    for (int i = 0; i < 6; i++) save(d, 100 * (i + 1), acc[i], 1);
    ASSERT_EQ(rt_ckpt_dir_rotate(d, 2, 1, &removed, NULL), RT_OK);
    ASSERT_EQ(removed, 3);
    ASSERT(!has_step(d, 100) && has_step(d, 200) && !has_step(d, 300) && !has_step(d, 400));
    ASSERT(has_step(d, 500) && has_step(d, 600));
    /* idempotent */
    ASSERT_EQ(rt_ckpt_dir_rotate(d, 2, 1, &removed, NULL), RT_OK);
    ASSERT_EQ(removed, 0);
    /* without keep_best the old best goes too */
    ASSERT_EQ(rt_ckpt_dir_rotate(d, 2, 0, &removed, NULL), RT_OK);
    ASSERT_EQ(removed, 1);
    ASSERT(!has_step(d, 200) && has_step(d, 500) && has_step(d, 600));
    /* keep_last 0 still keeps the newest */
    ASSERT_EQ(rt_ckpt_dir_rotate(d, 0, 0, &removed, NULL), RT_OK);
    ASSERT(!has_step(d, 500) && has_step(d, 600));
}

T_TEST(rotate_best_ties_and_min_mode)
{
    char d[400], e[400];
    run_dir(d, sizeof d, "tie");
    const double acc[] = {0.9, 0.9, 0.1, 0.2};
    for (int i = 0; i < 4; i++) save(d, i + 1, acc[i], 1);
    ASSERT_EQ(rt_ckpt_dir_rotate(d, 1, 1, NULL, NULL), RT_OK);
    ASSERT(!has_step(d, 1) && has_step(d, 2) && !has_step(d, 3) && has_step(d, 4));

    run_dir(e, sizeof e, "loss");
    const double loss[] = {0.9, 0.3, 0.2, 0.5, 0.6};
    for (int i = 0; i < 5; i++) save(e, i + 1, loss[i], 0);
    ASSERT_EQ(rt_ckpt_dir_rotate(e, 1, 1, NULL, NULL), RT_OK);
    ASSERT(!has_step(e, 1) && !has_step(e, 2) && has_step(e, 3) && !has_step(e, 4));
    ASSERT(has_step(e, 5));
}

T_TEST(rotate_spares_damaged_and_user_files)
{
    char d[400], user[500], *p = NULL;
    run_dir(d, sizeof d, "spare");
    for (int s = 1; s <= 5; s++) save(d, s, 0.1 * s, 1);
    damage(d, 5, 't'); /* newest is damaged: 4 is the newest valid */
    damage(d, 1, 'f'); /* an old damaged one */
    snprintf(user, sizeof user, "%s/my-best.safetensors", d);
    ck_sample s;
    ASSERT_EQ(ck_save_sample_metric(user, 2, 0.99, &s, NULL), RT_OK);
    size_t removed = 0;
    ASSERT_EQ(rt_ckpt_dir_rotate(d, 1, 1, &removed, NULL), RT_OK);
    ASSERT_EQ(removed, 2); /* steps 2 and 3 */
    ASSERT(has_step(d, 1) && !has_step(d, 2) && !has_step(d, 3) && has_step(d, 4));
    ASSERT(has_step(d, 5) && ck_exists(user));
    ASSERT_EQ(rt_ckpt_dir_path(d, 4, &p, NULL), RT_OK);
    ASSERT(ck_holds_step(p, 4));
    free(p);
}

int main(void)
{
    if (ck_tmpdir(root, sizeof root) != 0) return 99;
    T_RUN(names_and_paths);
    T_RUN(list_and_newest_valid_skips_damaged);
    T_RUN(no_valid_checkpoint);
    T_RUN(rotate_keeps_newest_n_and_best);
    T_RUN(rotate_best_ties_and_min_mode);
    T_RUN(rotate_spares_damaged_and_user_files);
    ck_rmrf(root);
    return T_EXIT();
}
