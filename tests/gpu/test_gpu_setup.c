/* test_gpu_setup.c - what a user's GPU setup can get wrong, on the mock device: no GPU,
 * a driver older than Kiln's CUDA runtime, a GPU whose architecture the build lacks
 * (each: `--device cuda` says what and how to fix it, %device's list says it too, and
 * `--device auto` trains on the CPU), cuDNN that is missing, of another major or built
 * for another CUDA, or fails to start (conv2d falls back to im2col + cuBLAS and the GPU
 * still trains), a cuDNN algorithm that the heuristics offer but that does not run (the
 * next one runs, and is remembered; cuDNN 9's finer codes of the same categories too),
 * fp32 with only TF32 algorithms on offer (refused), fp32 passing over the inexact
 * backward algorithms, a forward choice that is deterministic, an algorithm choice that
 * ignores the workspace earlier models grew, and a failed workspace reservation (the
 * old workspace stays usable).
 * The mock reads KILN_MOCK_DEVICE / KILN_MOCK_CUDNN at every call (mock_cuda.c,
 * mock_cudnn.c); built twice, without and with the cuDNN stand-in.
 */
#include <stdlib.h>

#include "../quadrants.h"
#include "../t.h"
#include "../../runtime/cuda/cudnn_dl.h"
#include "rt.h"
#include "rt_device.h"

long mock_stat_gemm16(void);
long mock_stat_gemm_fast(void);
long mock_stat_gemm_calls(void);
long mock_stat_gemm_batched(void);
void mock_stat_reset(void);
long mock_cudnn_stat_runs(void) __attribute__((weak));
long mock_cudnn_stat_rejected(void) __attribute__((weak));
long mock_cudnn_stat_inexact(void) __attribute__((weak));
void mock_cudnn_stat_reset(void) __attribute__((weak));

static const char *SPEC = "conv2d 4 3 pad=1\nbatchnorm\nrelu\nmaxpool 2\nflatten\ndense 4\n";
#define STEPS 24

typedef struct losses {
    double first, last;
    int64_t steps;
} losses;

static void on_progress(const rt_progress *p, void *user)
{
    losses *l = user;
    if (p->step == 1) l->first = p->loss;
    l->last = p->loss;
    l->steps = p->step;
}

/* Trains STEPS steps of SPEC on the quadrants set on backend b (precision p): 0 when
 * every step ran and the loss fell, else -1 with the reason in err. */
static int train(rt_backend *b, rt_precision p, double *first, double *last, rt_error *err)
{
    rt_dataset d;
    quadrants_make(&d, 64, 9, 0.5f, "gen/train");
    rt_model_input in = {1, 8, 8, 4};
    rt_model *m = NULL;
    rt_trainer *t = NULL;
    losses l = {NAN, NAN, 0};
    rt_trainer_config cfg = rt_trainer_config_default();
    cfg.epochs = STEPS * 8 / 64;
    cfg.batch_size = 8;
    cfg.lr = 0.01;
    cfg.loss_scaling = p == RT_PREC_FP16;
    cfg.report_every_s = 0;
    cfg.progress = on_progress;
    cfg.user = &l;
    int rc = -1;
    rt_status s = rt_cuda_set_precision(b, p, err);
    if (s == RT_OK) s = rt_model_create(&m, SPEC, &in, err);
    if (s == RT_OK) s = rt_model_attach(m, b, 8, 3, err);
    if (s == RT_OK) s = rt_trainer_create(&t, m, &d, &cfg, err);
    if (s == RT_OK) s = rt_trainer_begin(t, err);
    rt_step_event ev = RT_STEP_CONTINUE;
    while (s == RT_OK && (ev == RT_STEP_CONTINUE || ev == RT_STEP_EPOCH_END))
        s = rt_trainer_step(t, &ev, err);
    if (s == RT_OK) s = rt_trainer_end(t, NULL, err);
    *first = l.first, *last = l.last;
    if (s == RT_OK) {
        rc = l.steps == STEPS && l.last < l.first ? 0 : -1;
        if (rc)
            snprintf(err->msg, sizeof err->msg, "%lld steps, the loss went %g -> %g",
                     (long long)l.steps, l.first, l.last);
    }
    rt_trainer_destroy(t);
    rt_model_destroy(m);
    quadrants_free(&d);
    return rc;
}

/* `--device cuda` fails with RT_ENODEV and a message holding every piece of `want`;
 * `--device auto` opens the CPU, which trains. */
static void refused_then_cpu_trains(const char *const *want, int *t_failed_)
{
    rt_backend b;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_ENODEV);
    printf("  --device cuda: %s\n", err.msg);
    for (int i = 0; want[i]; i++) ASSERT_STR_CONTAINS(err.msg, want[i]);
    ASSERT_EQ(rt_backend_open(&b, "auto", 1, &err), RT_OK);
    ASSERT_STR_EQ(b.ops->name, "cpu");
    double first, last;
    int rc = train(&b, RT_PREC_FP32, &first, &last, &err);
    if (rc) fprintf(stderr, "  CPU training: %s\n", err.msg);
    ASSERT_EQ(rc, 0);
    rt_backend_close(&b);
}

T_TEST(no_gpu)
{
    setenv("KILN_MOCK_DEVICE", "none", 1);
    rt_cuda_device_list l;
    ASSERT_EQ(rt_cuda_list_devices(&l, NULL), RT_OK);
    ASSERT_EQ(l.count, 0);
    ASSERT_STR_CONTAINS(l.why, "cudaErrorNoDevice");
    const char *want[] = {"no CUDA device", "--device cpu", NULL};
    refused_then_cpu_trains(want, t_failed_);
    unsetenv("KILN_MOCK_DEVICE");
}

T_TEST(driver_too_old)
{
    setenv("KILN_MOCK_DEVICE", "old-driver,driver=12040", 1);
    rt_cuda_device_list l;
    ASSERT_EQ(rt_cuda_list_devices(&l, NULL), RT_OK);
    ASSERT_EQ(l.count, 0);
    char runtime[64], driver[64];
    snprintf(runtime, sizeof runtime, "CUDA runtime is %d.%d", CUDART_VERSION / 1000,
             CUDART_VERSION % 1000 / 10);
    snprintf(driver, sizeof driver, "needs driver R%s",
             CUDART_VERSION >= 13000   ? "580"
             : CUDART_VERSION >= 12000 ? "525"
                                       : "450");
    const char *want[] = {"driver is too old",
                          "supports CUDA 12.4",
                          runtime,
                          driver,
                          "update the NVIDIA driver",
                          NULL};
    for (int i = 0; want[i]; i++) ASSERT_STR_CONTAINS(l.why, want[i]);
    refused_then_cpu_trains(want, t_failed_);
    unsetenv("KILN_MOCK_DEVICE");
}

/* No NVIDIA driver at all: CUDA says "driver version is insufficient", which reads like
 * "upgrade your driver"; Kiln says there is none. */
T_TEST(no_driver)
{
    setenv("KILN_MOCK_DEVICE", "no-driver", 1);
    rt_cuda_device_list l;
    ASSERT_EQ(rt_cuda_list_devices(&l, NULL), RT_OK);
    ASSERT_EQ(l.count, 0);
    ASSERT_STR_CONTAINS(l.why, "no NVIDIA driver found");
    ASSERT(strstr(l.why, "insufficient") == NULL && strstr(l.why, "update") == NULL);
    const char *want[] = {"no NVIDIA driver found", "--device cpu", NULL};
    refused_then_cpu_trains(want, t_failed_);
    unsetenv("KILN_MOCK_DEVICE");
}

/* A cuda-compat libcuda.so that does not fit (803) or a GPU without forward
 * compatibility (804): named as such, not as "no CUDA device" (which --device auto
 * passes over in silence); auto still trains on the CPU. */
T_TEST(forward_compat_errors)
{
    const char *knobs[] = {"compat=803", "compat=804"};
    const char *names[] = {"cudaErrorSystemDriverMismatch", "cudaErrorCompatNotSupportedOnDevice"};
    for (int i = 0; i < 2; i++) {
        setenv("KILN_MOCK_DEVICE", knobs[i], 1);
        rt_cuda_device_list l;
        ASSERT_EQ(rt_cuda_list_devices(&l, NULL), RT_OK);
        ASSERT_EQ(l.count, 0);
        ASSERT_STR_CONTAINS(l.why, names[i]);
        ASSERT(strstr(l.why, "no CUDA device") == NULL);
        const char *want[] = {names[i], "cuda-compat", "LD_LIBRARY_PATH", "--device cpu", NULL};
        refused_then_cpu_trains(want, t_failed_);
    }
    unsetenv("KILN_MOCK_DEVICE");
}

T_TEST(architecture_not_built)
{
    setenv("KILN_MOCK_DEVICE", "cc=60", 1); /* a Kaggle P100 */
    rt_cuda_device_list l;
    ASSERT_EQ(rt_cuda_list_devices(&l, NULL), RT_OK);
    ASSERT_EQ(l.count, 1);
    const char *want[] = {"compute capability 6.0", "sm_60",        "built for sm 75",
                          "-Dgpu_archs=60",         "--device cpu", NULL};
    for (int i = 0; want[i]; i++) ASSERT_STR_CONTAINS(l.dev[0].problem, want[i]);
    refused_then_cpu_trains(want, t_failed_);
    /* covered: a minor above a built cubin (8.6, 8.9 run sm_80 code), and newer GPUs
     * through the last architecture's PTX */
    const char *ok[] = {"cc=86", "cc=75", "cc=120", NULL};
    for (int i = 0; ok[i]; i++) {
        setenv("KILN_MOCK_DEVICE", ok[i], 1);
        ASSERT_EQ(rt_cuda_list_devices(&l, NULL), RT_OK);
        ASSERT_STR_EQ(l.dev[0].problem, "");
        rt_backend b;
        rt_error err = {0};
        ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_OK);
        rt_backend_close(&b);
    }
    setenv("KILN_MOCK_DEVICE", "cc=70", 1); /* V100: sm_75 code does not run on 7.0 */
    ASSERT_EQ(rt_cuda_list_devices(&l, NULL), RT_OK);
    ASSERT_STR_CONTAINS(l.dev[0].problem, "sm_70");
    unsetenv("KILN_MOCK_DEVICE");
}

T_TEST(version_line)
{
    const char *v = rt_cuda_build_info();
    printf("  %s\n", v);
    char tk[32];
    snprintf(tk, sizeof tk, "toolkit %d.%d", CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
    ASSERT_STR_CONTAINS(v, tk);
    ASSERT_STR_CONTAINS(v, "sm_75");
    ASSERT_STR_CONTAINS(v, "PTX");
    ASSERT(!strchr(v, '\n'));
}

/* cuDNN's version words: cuDNN 8 counts majors in thousands, 9 in ten-thousands. */
T_TEST(cudnn_versions)
{
    int ma, mi;
    rtp_dnn_version_split(8907, &ma, &mi);
    ASSERT_EQ(ma, 8);
    ASSERT_EQ(mi, 9);
    rtp_dnn_version_split(91900, &ma, &mi);
    ASSERT_EQ(ma, 9);
    ASSERT_EQ(mi, 19);
    char why[200] = "";
    ASSERT_EQ(rtp_dnn_compatible(8907, 11080, 8, 11, why, sizeof why), 1); /* cuDNN 8, CUDA 11 */
    ASSERT_EQ(rtp_dnn_compatible(90100, 12020, 9, 12, why, sizeof why), 1);
    ASSERT_EQ(rtp_dnn_compatible(8907, 12020, 9, 12, why, sizeof why), 0);
    ASSERT_STR_CONTAINS(why, "it is cuDNN 8.9, Kiln was built with cuDNN 9");
    /* libcudnn.so.9 of the CUDA 12 build under a CUDA 13 Kiln */
    ASSERT_EQ(rtp_dnn_compatible(91900, 12080, 9, 13, why, sizeof why), 0);
    ASSERT_STR_CONTAINS(why, "cuDNN 9.19 for CUDA 12.8, Kiln was built with CUDA 13");
}

static int have_dnn(void) { return mock_cudnn_stat_runs != NULL; }

/* Trains on cuda with KILN_MOCK_CUDNN=knobs; returns the cuDNN runs it made. */
static long train_gpu(const char *knobs, rt_precision p, int *t_ok)
{
    rt_backend b;
    rt_error err = {0};
    setenv("KILN_MOCK_CUDNN", knobs, 1);
    mock_cudnn_stat_reset();
    *t_ok = 0;
    if (rt_backend_open(&b, "cuda", 0, &err) != RT_OK) {
        fprintf(stderr, "  open: %s\n", err.msg);
        return -1;
    }
    double first, last;
    *t_ok = train(&b, p, &first, &last, &err) == 0;
    if (!*t_ok) fprintf(stderr, "  %s %s: %s\n", knobs, rt_precision_name(p), err.msg);
    rt_backend_close(&b);
    unsetenv("KILN_MOCK_CUDNN");
    return mock_cudnn_stat_runs();
}

/* libcudnn of another major, or built for another CUDA major, or failing to start: the
 * GPU trains with conv2d as im2col + cuBLAS (cuDNN runs nothing). */
T_TEST(cudnn_unusable_falls_back)
{
    if (!have_dnn()) return;
    const char *knobs[] = {"version=8907", "cudart=12080", "create-fails", NULL};
    int ok;
    ASSERT(train_gpu("", RT_PREC_FP32, &ok) > 0);
    ASSERT(ok);
    for (int i = 0; knobs[i]; i++) {
        ASSERT_EQ(train_gpu(knobs[i], RT_PREC_FP32, &ok), 0);
        ASSERT(ok);
    }
}

/* The first candidate of every pass passes the filters and then answers NOT_SUPPORTED:
 * the next runs, once per pass and shape the failing one is tried, never again. */
T_TEST(cudnn_first_candidate_fails)
{
    if (!have_dnn()) return;
    for (int p = RT_PREC_FP32; p <= RT_PREC_FP16; p++) {
        int ok;
        long runs = train_gpu("fail-first", (rt_precision)p, &ok);
        printf("  %s: %ld runs, %ld refused\n", rt_precision_name((rt_precision)p), runs,
               mock_cudnn_stat_rejected());
        ASSERT(ok);
        ASSERT(runs >= 2 * STEPS); /* forward and backward filter of every step */
        /* one refusal per pass the conv runs (forward, backward filter, and backward
         * data if the model asks for the input's gradient), then the next is kept */
        ASSERT(mock_cudnn_stat_rejected() >= 2 && mock_cudnn_stat_rejected() <= 3);
    }
}

/* fp32 never slips into TF32: with only tensor-op algorithms on offer (and the
 * non-deterministic forward, which no pass takes), the conv is refused with a message
 * (bf16 uses them). */
T_TEST(cudnn_fp32_refuses_tf32)
{
    if (!have_dnn()) return;
    rt_backend b;
    rt_error err = {0};
    setenv("KILN_MOCK_CUDNN", "no-fma", 1);
    ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_OK);
    double first, last;
    ASSERT_EQ(train(&b, RT_PREC_FP32, &first, &last, &err), -1);
    ASSERT_STR_CONTAINS(err.msg, "no usable forward algorithm");
    ASSERT_STR_CONTAINS(err.msg, "FMA math and no FFT in fp32");
    rt_backend_close(&b);
    int ok;
    ASSERT(train_gpu("no-fma", RT_PREC_BF16, &ok) > 0);
    ASSERT(ok);
    unsetenv("KILN_MOCK_CUDNN");
}

/* spec for the 8x8 quadrants, attached to b at batch 8 (NULL on error, in err). */
static rt_model *model8(rt_backend *b, const char *spec, rt_error *err)
{
    rt_model_input in = {1, 8, 8, 4};
    rt_model *m = NULL;
    if (rt_model_create(&m, spec, &in, err) != RT_OK || rt_model_attach(m, b, 8, 3, err) != RT_OK) {
        rt_model_destroy(m);
        return NULL;
    }
    return m;
}

/* One training-mode forward, loss and backward of m on the first n <= 8 samples of d. */
static rt_status step_n(rt_model *m, const rt_dataset *d, int n, rt_error *err)
{
    rt_backend *b = rt_model_backend(m);
    int32_t lab[8] = {0, 1, 2, 3, 0, 1, 2, 3};
    RT_TRY(rt_backend_upload(b, rt_model_input_tensor(m), d->images, (size_t)n * 64 * 4, err));
    RT_TRY(rt_backend_upload(b, rt_model_label_tensor(m), lab, (size_t)n * sizeof *lab, err));
    RT_TRY(rt_model_forward(m, n, 1, 0, err));
    RT_TRY(rt_model_loss(m, n, NULL, NULL, NULL, err));
    return rt_model_backward(m, n, err);
}

static rt_status step8(rt_model *m, const rt_dataset *d, rt_error *err)
{
    return step_n(m, d, 8, err);
}

/* cuDNN 9 refuses with finer codes (3001-3014 NOT_SUPPORTED_*, 5001-5004
 * EXECUTION_FAILED_*): of the two categories, the next candidate runs, as for the plain
 * codes; any other status (BAD_PARAM) is an error naming the run. */
T_TEST(cudnn9_finer_codes_move_on)
{
    if (!have_dnn()) return;
#ifdef CUDNN_STATUS_CATEGORY
    const char *moving[] = {"fail-first=3002", "fail-first=3010", "fail-first=5003", NULL};
    for (int i = 0; moving[i]; i++) {
        int ok;
        long runs = train_gpu(moving[i], RT_PREC_FP32, &ok);
        printf("  %s: %ld runs, %ld refused\n", moving[i], runs, mock_cudnn_stat_rejected());
        ASSERT(ok);
        ASSERT(mock_cudnn_stat_rejected() >= 2 && mock_cudnn_stat_rejected() <= 3);
    }
    rt_backend b;
    rt_error err = {0};
    setenv("KILN_MOCK_CUDNN", "fail-first=2000", 1); /* CUDNN_STATUS_BAD_PARAM */
    ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_OK);
    double first, last;
    ASSERT_EQ(train(&b, RT_PREC_FP32, &first, &last, &err), -1);
    ASSERT_STR_CONTAINS(err.msg, "cudnnConvolution (run) failed");
    rt_backend_close(&b);
    unsetenv("KILN_MOCK_CUDNN");
#else
    printf("  cuDNN %d: no finer status codes\n", CUDNN_MAJOR);
#endif
}

/* The forward algorithm is deterministic, as the backward ones: the stand-in offers a
 * NON_DETERMINISTIC forward first (no workspace, the mode's math), which a forward
 * filtered only by workspace and math would take (the stand-in answers BAD_PARAM). */
T_TEST(cudnn_forward_is_deterministic)
{
    if (!have_dnn()) return;
    for (int p = RT_PREC_FP32; p <= RT_PREC_FP16; p++) {
        int ok;
        ASSERT(train_gpu("", (rt_precision)p, &ok) >= 2 * STEPS);
        ASSERT(ok);
    }
}

/* fp32 passes over the backward passes' Winograd-nonfused (and FFT) algorithms, even
 * when the heuristics rank them first; 16-bit precision runs them. */
T_TEST(cudnn_fp32_passes_over_inexact)
{
    if (!have_dnn()) return;
    int ok;
    ASSERT(train_gpu("inexact-first", RT_PREC_FP32, &ok) > 0);
    ASSERT(ok);
    ASSERT_EQ(mock_cudnn_stat_inexact(), 0);
    ASSERT(train_gpu("inexact-first", RT_PREC_BF16, &ok) > 0);
    ASSERT(ok);
    printf("  bf16: %ld runs of the inexact candidate\n", mock_cudnn_stat_inexact());
    ASSERT(mock_cudnn_stat_inexact() >= STEPS);
}

/* The choice depends on the shape and the precision only: after an earlier model left
 * a 512 MiB workspace (it only grows), a new shape (the smaller last batch) chooses
 * under the fixed cap as a fresh process would, not under what happens to be reserved
 * (the stand-in's candidate 0 needs 384 MiB: over the cap, inside that workspace). */
T_TEST(cudnn_choice_ignores_a_grown_workspace)
{
    if (!have_dnn()) return;
    rt_backend b;
    rt_error err = {0};
    rt_dataset d;
    quadrants_make(&d, 8, 9, 0.5f, "gen/train");
    setenv("KILN_MOCK_CUDNN", "over-cap", 1);
    ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_OK);
    ASSERT_EQ(b.ops->reserve_workspace(&b, (size_t)512 << 20, &err), RT_OK);
    rt_model *m = model8(&b, SPEC, &err);
    ASSERT(m != NULL);
    rt_status s = step_n(m, &d, 8, &err);
    if (s == RT_OK) s = step_n(m, &d, 5, &err); /* the last batch: a new shape */
    if (s != RT_OK) fprintf(stderr, "  %s\n", err.msg);
    ASSERT_EQ(s, RT_OK);
    rt_model_destroy(m);
    rt_backend_close(&b);
    quadrants_free(&d);
    unsetenv("KILN_MOCK_CUDNN");
}

/* A reservation that does not fit leaves the old workspace: 16-bit convolutions (which
 * stage through it) still run. */
T_TEST(failed_reservation_keeps_workspace)
{
    rt_backend b;
    rt_error err = {0};
    rt_dataset d;
    quadrants_make(&d, 8, 9, 0.5f, "gen/train");
    ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_OK);
    ASSERT_EQ(rt_cuda_set_precision(&b, RT_PREC_BF16, &err), RT_OK);
    rt_model *m = model8(&b, SPEC, &err);
    ASSERT(m != NULL);
    size_t fr0, tot, fr1;
    ASSERT_EQ(rt_cuda_mem_info(&b, &fr0, &tot, &err), RT_OK);
    ASSERT_EQ(b.ops->reserve_workspace(&b, tot * 2, &err), RT_EDEVICE);
    ASSERT_STR_CONTAINS(err.msg, "out of device memory");
    ASSERT_EQ(rt_cuda_mem_info(&b, &fr1, &tot, &err), RT_OK);
    ASSERT_EQ(fr1, fr0);
    ASSERT_EQ(step8(m, &d, &err), RT_OK);
    rt_model_destroy(m);
    rt_backend_close(&b);
    quadrants_free(&d);
}

/* bf16/fp16 dense layers (and im2col convolutions) multiply explicit 16-bit copies: a
 * FAST_16BF/16F compute type on fp32 matrices would only permit cuBLAS to round. */
T_TEST(dense_inputs_staged_to_16_bits)
{
    for (int p = RT_PREC_BF16; p <= RT_PREC_FP16; p++) {
        rt_backend b;
        rt_error err = {0};
        ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_OK);
        mock_stat_reset();
        double first, last;
        int rc = train(&b, (rt_precision)p, &first, &last, &err);
        if (rc) fprintf(stderr, "  %s: %s\n", rt_precision_name((rt_precision)p), err.msg);
        ASSERT_EQ(rc, 0);
        printf("  %s: %ld GEMMs on 16-bit copies, %ld on a FAST compute type\n",
               rt_precision_name((rt_precision)p), mock_stat_gemm16(), mock_stat_gemm_fast());
        ASSERT(mock_stat_gemm16() >= 3 * STEPS); /* dense fwd, bwd filter, bwd data */
        ASSERT_EQ(mock_stat_gemm_fast(), 0);
        rt_backend_close(&b);
    }
}

/* Without cuDNN a convolution makes one cuBLAS call per pass for the whole batch (a
 * strided batch forward and backward-data, one GEMM for the weight gradient), not one
 * per image; and it trains. */
T_TEST(im2col_one_gemm_call_per_pass)
{
    setenv("KILN_MOCK_CUDNN", "create-fails", 1); /* the stand-in, where built, unusable */
    for (int p = RT_PREC_FP32; p <= RT_PREC_BF16; p++) {
        rt_backend b;
        rt_error err = {0};
        rt_dataset d;
        quadrants_make(&d, 8, 9, 0.5f, "gen/train");
        ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_OK);
        ASSERT_EQ(rt_cuda_set_precision(&b, (rt_precision)p, &err), RT_OK);
        rt_model *m =
            model8(&b, "conv2d 4 3 pad=1\nrelu\nconv2d 4 3 pad=1\nflatten\ndense 4\n", &err);
        ASSERT(m != NULL);
        mock_stat_reset(); /* after attach: only the step's calls */
        ASSERT_EQ(step8(m, &d, &err), RT_OK);
        long calls = mock_stat_gemm_calls(), batched = mock_stat_gemm_batched();
        printf("  %s: %ld cuBLAS calls for a batch of 8, %ld strided batches\n",
               rt_precision_name((rt_precision)p), calls, batched);
        /* conv1 fwd + filter, conv2 fwd + data + filter, dense fwd + data + filter;
         * one call per image would be 8 per conv pass */
        ASSERT_EQ(batched, 3);
        ASSERT_EQ(calls, 8);
        rt_model_destroy(m);
        rt_backend_close(&b);
        quadrants_free(&d);
        double first, last;
        ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_OK);
        ASSERT_EQ(train(&b, (rt_precision)p, &first, &last, &err), 0);
        rt_backend_close(&b);
    }
    unsetenv("KILN_MOCK_CUDNN");
}

int main(void)
{
    T_RUN(no_gpu);
    T_RUN(driver_too_old);
    T_RUN(no_driver);
    T_RUN(forward_compat_errors);
    T_RUN(architecture_not_built);
    T_RUN(version_line);
    T_RUN(cudnn_versions);
    T_RUN(cudnn_unusable_falls_back);
    T_RUN(cudnn_first_candidate_fails);
    T_RUN(cudnn_fp32_refuses_tf32);
    T_RUN(cudnn9_finer_codes_move_on);
    T_RUN(cudnn_forward_is_deterministic);
    T_RUN(cudnn_fp32_passes_over_inexact);
    T_RUN(cudnn_choice_ignores_a_grown_workspace);
    T_RUN(failed_reservation_keeps_workspace);
    T_RUN(dense_inputs_staged_to_16_bits);
    T_RUN(im2col_one_gemm_call_per_pass);
    return T_EXIT();
}
