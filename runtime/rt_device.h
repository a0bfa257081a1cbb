/* rt_device.h - the compute devices as magics see them, beyond rt_backend_ops: the CUDA
 * device list for %device, the build's CUDA line, and the compute precision
 * (--precision) of an opened CUDA backend. Part of the runtime's public header (rt.h);
 * implemented in runtime/cuda/ (cuda_device.c, or rt_cuda_stub.c without CUDA, and
 * rt_precision.c), whose own headers stay private to the runtime.
 *
 * This header is the same in every build (a public header does not change with
 * build flags). Without CUDA compiled in (rt_cuda_stub.c) the list is empty with a
 * reason "built without CUDA" and rt_cuda_set_precision returns RT_ENODEV.
 *
 * Precision (mixed precision, --precision): a CUDA backend computes convolutions and
 * dense layers in fp32 (default), bf16 or fp16 on tensor cores: inputs and weights are
 * rounded to 16 bits in the backend's workspace, products accumulate in fp32, results
 * are stored in fp32. Every tensor the runtime sees stays fp32 (activations, gradients,
 * master weights, optimiser state), so checkpoints move between CPU and GPU unchanged.
 * Set it after open and BEFORE attaching a model (the workspace the model reserves
 * includes the 16-bit copies). fp16 needs dynamic loss scaling: the trainer does it on the device (rt_amp_state and the
 * amp_* ops of rt_backend.h, rules in runtime/rt_amp_rule.h).
 */
#ifndef RT_DEVICE_H
#define RT_DEVICE_H

#include <stddef.h>

#include "rt_backend.h"

typedef enum { RT_PREC_FP32 = 0, RT_PREC_BF16 = 1, RT_PREC_FP16 = 2 } rt_precision;

/* "fp32" | "bf16" | "fp16" -> *out; RT_EINVAL naming the choices otherwise. */
RT_MUST_USE rt_status rt_precision_parse(const char *name, rt_precision *out, rt_error *err);
const char *rt_precision_name(rt_precision p);

/* One CUDA device as %device shows it. */
typedef struct rt_cuda_device_info {
    int index;
    char name[256];
    size_t mem_total, mem_free; /* bytes (free: at the time of the call) */
    int mem_free_known;         /* 0: not measured (see rt_cuda_list_devices) */
    int cc_major, cc_minor;     /* compute capability */
    int multiprocessors;
    int bf16;          /* 1 when bf16 tensor-core math is available (cc >= 8.0) */
    char problem[400]; /* "" when Kiln can use it, else why not and the fix (an
                                    architecture this build's kernels do not cover) */
} rt_cuda_device_info;

#define RT_CUDA_MAX_DEVICES 16

typedef struct rt_cuda_device_list {
    int count; /* 0 when there is no usable device: not an error */
    rt_cuda_device_info dev[RT_CUDA_MAX_DEVICES];
    int driver_version, runtime_version; /* e.g. 13000 = 13.0; 0 if unknown */
    int built;                           /* 1 when the CUDA backend is compiled in */
    char why[400];                       /* when count == 0: why (e.g. "cudaGetDeviceCount: no
                                    CUDA-capable device is detected") */
} rt_cuda_device_list;

/* Fills *out. Zero devices is RT_OK with count 0 and a reason in why. Free memory needs
 * a CUDA context on the device (a few hundred MiB, kept for the process's life), so it
 * is measured only on a single-device machine (where training will create that context
 * anyway); with several devices mem_free_known is 0 and mem_free 0. */
RT_MUST_USE rt_status rt_cuda_list_devices(rt_cuda_device_list *out, rt_error *err);

/* One line saying what CUDA this build has, for `kiln --version`, e.g. "CUDA: toolkit
 * 13.0, kernels for sm_75 sm_80 sm_86 sm_89 sm_90 (+ compute_90 PTX); cuBLAS and cuDNN 9
 * loaded at first use", or "CUDA: not built (CPU only)". Static storage. */
const char *rt_cuda_build_info(void);

/* Sets the compute precision of an opened CUDA backend (see above). RT_EINVAL for a
 * backend that is not CUDA, or bf16 on a device below compute capability 8.0. */
RT_MUST_USE rt_status rt_cuda_set_precision(rt_backend *b, rt_precision p, rt_error *err);
rt_precision rt_cuda_get_precision(const rt_backend *b);

/* The CPU backend's precision (runtime/cpu/cpu_bf16.c): fp32 (default) or bf16, with the
 * meaning above (16-bit copies in the workspace: set it before attaching). bf16 needs the
 * AVX512_BF16 instructions: RT_ENODEV naming what this CPU lacks; fp16 is RT_EINVAL.
 * RT_EINVAL for a backend that is not the CPU's. */
RT_MUST_USE rt_status rt_cpu_set_precision(rt_backend *b, rt_precision p, rt_error *err);
rt_precision rt_cpu_get_precision(const rt_backend *b);

/* Either backend's: rt_cpu_set_precision or rt_cuda_set_precision by b's ops. */
RT_MUST_USE rt_status rt_backend_set_precision(rt_backend *b, rt_precision p, rt_error *err);
rt_precision rt_backend_get_precision(const rt_backend *b);

/* Free and total memory of the backend's device, bytes (sync first for a stable value). */
RT_MUST_USE rt_status rt_cuda_mem_info(rt_backend *b, size_t *free_bytes, size_t *total_bytes,
                                       rt_error *err);

#endif
