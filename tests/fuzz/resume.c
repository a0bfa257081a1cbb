/* resume.c - fuzz target: what %resume and %train read from a checkpoint's metadata
 * to continue a run - the run's description (mgp_ckpt_read_desc: model, data set,
 * input shape, schedule, the options in "hyperparameters") and the training state
 * (rt_ckpt_train_snap_read: data order, RNG seed, step, optimiser and its "optim.*"
 * tensors) - for a checkpoint file that is otherwise valid (the harness writes it with
 * Kiln's writer, so the checksums are right and the fuzzer reaches these readers).
 * Input: lines. "KEY=VALUE" sets a metadata entry (a "\\n" in VALUE is a newline);
 * "@NAME D0 D1 ..." adds an F32 tensor of zeros (at most 4 dimensions, 4096 values). The model the state is read for is
 * fixed: flatten, dense 3 over a 1x2x2 input ("1.dense.weight", "1.dense.bias").
 * Invariants: a failure says why (naming the file); a description read has a model
 * spec, a data set name, a schedule that fits its buffer; a state read has at least
 * one step per epoch and its arrays are the optimiser tensors' sizes. */
#include <string.h>

#include "fz.h"
#include "mg_ckpt_internal.h"
#include "rt_ckpt_train.h"

#define MAX_TENSORS 8
#define MAX_VALUES 4096

static rt_model *model;
static rt_backend backend;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    rt_error err = {0};
    FZ_CHECK(rt_model_create(&model, "flatten\ndense 3", &(rt_model_input){1, 2, 2, 3}, &err) ==
             RT_OK);
    FZ_CHECK(rt_backend_open(&backend, "cpu", 1, &err) == RT_OK);
    FZ_CHECK(rt_model_attach(model, &backend, 1, 7, &err) == RT_OK);
    return 0;
}

static float zeros[MAX_TENSORS][MAX_VALUES];

/* "@NAME D0 D1 ..." -> a tensor of w; 0 when the line is not one */
static int add_tensor(rt_ckpt_writer *w, char *line, int *nt)
{
    char *save = NULL, *name = strtok_r(line + 1, " ", &save);
    int64_t shape[4];
    int nd = 0;
    long total = 1;
    for (char *d; name && nd < 4 && (d = strtok_r(NULL, " ", &save));) {
        long v = strtol(d, NULL, 10);
        if (v < 0 || v > MAX_VALUES || (total *= v ? v : 1) > MAX_VALUES) return 0;
        shape[nd++] = v;
    }
    if (!name || *nt >= MAX_TENSORS) return 0;
    rt_error err = {0};
    return rt_ckpt_writer_add_tensor(w, name, RT_ST_F32, nd, shape, zeros[(*nt)++], &err) == RT_OK;
}

/* "\\n" -> newline, in place */
static char *unescape(char *v)
{
    char *o = v;
    for (const char *p = v; *p; p++) {
        if (p[0] == '\\' && p[1] == 'n') *o++ = '\n', p++;
        else *o++ = *p;
    }
    *o = 0;
    return v;
}

static void read_it(const char *path)
{
    rt_ckpt_reader *r = NULL;
    rt_error err = {0};
    if (rt_ckpt_reader_open(path, 0, &r, &err) != RT_OK) return;
    mgp_ck_desc d;
    memset(&d, 0, sizeof d);
    mg_error merr = {{0}, {0}};
    if (mgp_ckpt_read_desc(r, path, &d, &merr) == 0) {
        FZ_CHECK(d.spec && d.name && d.name[0]);
        FZ_CHECK(memchr(d.ds.data, 0, sizeof d.ds.data) && memchr(d.ds.fnv, 0, sizeof d.ds.fnv));
        FZ_CHECK(!d.ds.has_images || (d.ds.images.image_h <= 4096 && d.ds.images.image_w <= 4096));
        FZ_CHECK(memchr(d.schedule, 0, sizeof d.schedule));
    } else {
        FZ_CHECK(!strcmp(merr.ename, "ValueError") && strstr(merr.evalue, path));
    }
    rt_ckpt_train_snap s;
    if (rt_ckpt_train_snap_read(&s, r, model, &err) == RT_OK) {
        FZ_CHECK(s.steps_per_epoch >= 1 && s.state.step >= 0);
        for (size_t i = 0; i < s.nstate; i++) {
            FZ_CHECK(s.lens[i] <= MAX_VALUES && memchr(s.names[i], 0, RT_OPTIM_NAME_MAX));
            for (size_t j = 0; j < s.lens[i]; j++) FZ_CHECK(s.arrays[i][j] == 0.0f);
        }
        rt_ckpt_train_snap_deinit(&s);
    } else {
        FZ_CHECK(err.msg[0] && strstr(err.msg, path));
    }
    rt_ckpt_reader_destroy(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_strdup(data, size);
    const char *dir = fz_dir();
    FZ_CHECK(dir != NULL);
    rt_ckpt_writer *w = NULL;
    rt_error err = {0};
    if (!text || rt_ckpt_writer_create(&w, &err) != RT_OK) {
        free(text);
        return 0;
    }
    int nt = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (line[0] == '@') {
            add_tensor(w, line, &nt);
        } else if (eq) {
            *eq = 0;
            /* A refused key is part of the input: resuming must then refuse or cope. */
            RT_IGNORE(rt_ckpt_writer_set_meta(w, line, unescape(eq + 1), &err));
        }
    }
    char path[600];
    snprintf(path, sizeof path, "%s/resume.safetensors", dir);
    fz_dir_clear();
    if (rt_ckpt_writer_save(w, path, &err) == RT_OK) read_it(path);
    rt_ckpt_writer_destroy(w);
    free(text);
    return 0;
}
