/* rt_onnx.h - a trained model as an ONNX file, for inference without Kiln.
 *
 * The file is a standard ONNX model (IR version 8, opset 17) of the inference graph:
 *   input          float32 [batch, C, H, W], NCHW, pixel values / 255 (0..1, RGB or grey)
 *   Sub, Div       (mean, std) per channel, when the normalisation is known, so the user
 *                  feeds plain pixels; without it the input is the normalised image
 *   one node per layer: Conv (strides, pads incl. same), MaxPool, AveragePool,
 *                  GlobalAveragePool, Relu, LeakyRelu, Clip (relu6), Sigmoid, Tanh,
 *                  Erf/Div/Add/Mul (gelu), Sigmoid/Mul (silu), BatchNormalization (running
 *                  statistics, epsilon 1e-5), Flatten, Gemm (transB), Add for residual
 *                  blocks; dropout is left out (identity at inference)
 *   logits         float32 [batch, classes]
 *   probabilities  Softmax of the logits
 * Weights are initializers under their checkpoint names ("0.conv2d.weight"). The
 * metadata (metadata_props) says how to feed it: input name, layout and shape, the
 * pixel range, whether the normalisation is inside, mean, std and the class names.
 * docs/export.md is the user's description. The writer is rt_onnx_pb.h.
 */
#ifndef RT_ONNX_H
#define RT_ONNX_H

#include "rt_ckpt.h"
#include "rt_error.h"
#include "rt_model.h"

#define RT_ONNX_OPSET 17
#define RT_ONNX_IR_VERSION 8

typedef struct rt_onnx_info {
    const char *model_name;         /* the graph's name; NULL = "kiln" */
    const char *dataset;            /* the data set it was trained on (metadata); may be NULL */
    const float *mean, *std;        /* one per input channel; NULL = no normalisation nodes */
    const char *const *class_names; /* num_classes names; NULL = none in the metadata */
    const char *source;             /* where the weights came from (metadata); may be NULL */
} rt_onnx_info;

/* Writes m (attached to any backend; weights are read through it) to path atomically
 * (rt_file.h): on failure path is untouched. */
RT_MUST_USE rt_status rt_onnx_write(rt_model *m, const rt_onnx_info *info, const char *path,
                                    rt_error *err);

/* The newest valid checkpoint of run_dir (or run_dir itself when it is a checkpoint
 * file) exported to path: the model is rebuilt from the checkpoint's spec and input
 * shape on the CPU, its weights loaded, and the normalisation and class names taken
 * from its data-set record. *used (may be NULL) gets the checkpoint's path (caller
 * frees). Errors name the directory or file: no checkpoint (RT_ENOTFOUND), a
 * checkpoint without a model spec (RT_EFORMAT), an unwritable path (RT_EIO). */
RT_MUST_USE rt_status rt_onnx_write_run(const char *run_dir, const char *path, char **used,
                                        rt_error *err);

/* The model an export of checkpoint r describes: rebuilt from its spec, input shape and
 * class count, attached to b for batches up to max_batch, weights loaded. *out is
 * freed by the caller (rt_model_destroy). For a check that the ONNX file computes what
 * Kiln computes. */
RT_MUST_USE rt_status rt_onnx_model_load(const rt_ckpt_reader *r, rt_backend *b, int max_batch,
                                         rt_model **out, rt_error *err);

#endif
