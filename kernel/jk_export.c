/* jk_export.c - `kiln export RUN_DIR --onnx FILE`: a run directory's newest valid
 * checkpoint (or a checkpoint file, or an s3:// run directory's newest verified
 * checkpoint, fetched to its staging directory) as an ONNX model, without a kernel or the data set
 * (runtime/rt_onnx.h says what the file holds). Exit 0; 1 when the export fails (the
 * error names the file); 2 for a command line that cannot be read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jk_cli.h"
#include "rt_onnx.h"
#include "rt_store_stage.h"

static const char usage[] =
    "usage: kiln export RUN_DIR|s3://BUCKET/PREFIX|CHECKPOINT --onnx FILE\n"
    "Writes the newest valid checkpoint of RUN_DIR (of the run in an object store, or\n"
    "the CHECKPOINT file) as an ONNX model (opset 17): input 'input' float32\n"
    "[batch, C, H, W] holding pixel / 255,\n"
    "outputs 'logits' and 'probabilities'; normalisation and class names inside.\n";

/* Where the checkpoints are: src itself, or for an s3:// run directory the newest
 * complete checkpoint that verifies, fetched into its staging directory (*fetched, to
 * free). -1 when that fails (said on stderr). */
static int local_source(const char *src, char **fetched)
{
    *fetched = NULL;
    if (!rt_store_is_url(src)) return 0;
    char *skipped = NULL;
    rt_error err = {0};
    rt_status st = rt_store_fetch_run(src, fetched, &skipped, &err);
    for (char *line = skipped ? strtok(skipped, "\n") : NULL; line; line = strtok(NULL, "\n"))
        fprintf(stderr, "kiln export: warning: skipped checkpoint %s/%s\n", src, line);
    free(skipped);
    if (st == RT_OK) return 0;
    fprintf(stderr, "kiln export: %s\n", err.msg);
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
            fprintf(stderr, "kiln export: one run directory, got '%s' and '%s'\n%s", src, argv[i],
                    usage);
            return 2;
        }
    }
    if (!src || !out || !out[0]) {
        fprintf(stderr, "kiln export: %s\n%s",
                src ? "--onnx FILE is required" : "which run directory?", usage);
        return 2;
    }
    char *fetched = NULL;
    if (local_source(src, &fetched) < 0) return 1;
    rt_error err = {0};
    char *used = NULL;
    rt_status st = rt_onnx_write_run(fetched ? fetched : src, out, &used, &err);
    if (st != RT_OK) fprintf(stderr, "kiln export: %s\n", err.msg);
    else if (fetched)
        fprintf(stderr, "kiln export: wrote %s from %s (fetched from %s; ONNX opset %d)\n", out,
                used, src, RT_ONNX_OPSET);
    else
        fprintf(stderr, "kiln export: wrote %s from %s (ONNX opset %d)\n", out, used,
                RT_ONNX_OPSET);
    free(used);
    free(fetched);
    return st == RT_OK ? 0 : 1;
}
