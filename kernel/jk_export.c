/* jk_export.c - `kiln export RUN_DIR --onnx FILE`: a run directory's newest valid
 * checkpoint (or a checkpoint file) as an ONNX model, without a kernel or the data set
 * (runtime/rt_onnx.h says what the file holds). Exit 0; 1 when the export fails (the
 * error names the file); 2 for a command line that cannot be read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jk_cli.h"
#include "rt_onnx.h"

static const char usage[] =
    "usage: kiln export RUN_DIR|CHECKPOINT --onnx FILE\n"
    "Writes the newest valid checkpoint of RUN_DIR (or the CHECKPOINT file) as an ONNX\n"
    "model (opset 17): input 'input' float32 [batch, C, H, W] holding pixel / 255,\n"
    "outputs 'logits' and 'probabilities'; normalisation and class names inside.\n";

/* Where the checkpoints are. The one place a remote run directory (s3://) would be
 * fetched to a local one before the export; until then it is refused by name. */
static int local_source(const char *src)
{
    if (strncmp(src, "s3://", 5)) return 0;
    fprintf(stderr, "kiln export: %s: exporting straight from object storage is not "
            "supported yet ---> HINT: copy the run directory here first (aws s3 sync), "
            "then kiln export DIR\n", src);
    return -1;
}

int jk_export_main(int argc, char **argv)
{
    const char *src = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--onnx") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strncmp(argv[i], "--onnx=", 7)) {
            out = argv[i] + 7;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "kiln export: unknown option '%s'%s\n%s", argv[i],
                    strcmp(argv[i], "--onnx") ? "" : " without a FILE", usage);
            return 2;
        } else if (!src) {
            src = argv[i];
        } else {
            fprintf(stderr, "kiln export: one run directory, got '%s' and '%s'\n%s", src,
                    argv[i], usage);
            return 2;
        }
    }
    if (!src || !out || !out[0]) {
        fprintf(stderr, "kiln export: %s\n%s", src ? "--onnx FILE is required"
                : "which run directory?", usage);
        return 2;
    }
    if (local_source(src) < 0) return 1;
    rt_error err = {0};
    char *used = NULL;
    if (rt_onnx_write_run(src, out, &used, &err) != RT_OK) {
        fprintf(stderr, "kiln export: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "kiln export: wrote %s from %s (ONNX opset %d)\n", out, used,
            RT_ONNX_OPSET);
    free(used);
    return 0;
}
