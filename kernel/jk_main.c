/* jk_main.c - the `kiln` command line: kernel, run, export, install, help, --version.
 * The only file in Kiln allowed to decide the process's exit status. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "jk_cli.h"
#include "kiln_config.h"
#include "mg.h"
#include "rt_omp_wait.h"

/* The commands that train start with Kiln's OpenMP spin default (rt_omp_wait.h); the
 * others do not pay for its restart. */
static void omp_wait(int argc, char **argv, char **envp)
{
    if (argc > 1 && (!strcmp(argv[1], "kernel") || !strcmp(argv[1], "run")))
        rt_omp_wait_default(argv, envp);
}
RT_OMP_WAIT_PREINIT(omp_wait);

static const char usage[] =
    "usage: kiln <command> [options]\n"
    "\n"
    "Kiln: a native Jupyter kernel for training convolutional networks.\n"
    "\n"
    "commands:\n"
    "  kernel -f CONNECTION_FILE [--device-path]\n"
    "                                 serve the Jupyter protocol (started by Jupyter;\n"
    "                                 --device-path: the GPU's trainer path on a CPU)\n"
    "  run NOTEBOOK.ipynb [-o OUT.ipynb] [-p NAME VALUE]...\n"
    "                                 execute a notebook headless, write the outputs\n"
    "  sweep NOTEBOOK.ipynb -o DIR -p NAME V1,V2,... [-p ...] [--parallel N]\n"
    "                                 run the notebook once per variant (kiln sweep -h)\n"
    "  export RUN_DIR --onnx FILE     the run's newest checkpoint as an ONNX model\n"
    "  install [--user | --sys-prefix | --prefix DIR] [--name NAME]\n"
    "                                 install the kernelspec for Jupyter\n"
    "  help [MAGIC]                   list the magics, or show one magic's help\n"
    "  --version                      print the version\n"
    "  --help                         this text\n";

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        size_t n = 0;
        const mg_command *const *all = mg_registry_all(&n);
        printf("magics:\n");
        for (size_t i = 0; i < n; i++)
            printf("  %s%-14s %s\n",
                   (all[i]->flags & MG_CELL) && !(all[i]->flags & MG_LINE) ? "%%" : "%",
                   all[i]->name, all[i]->summary);
        printf("\n`kiln help MAGIC` shows one magic's options.\n");
        return 0;
    }
    const char *name = argv[1];
    while (*name == '%') name++;
    const mg_command *cmd = mg_registry_find(name);
    if (!cmd) {
        fprintf(stderr, "kiln: no magic named '%s' (try `kiln help`)\n", argv[1]);
        return 2;
    }
    char *text = mg_command_help(cmd);
    if (!text) return 1;
    fputs(text, stdout);
    free(text);
    return 0;
}

int main(int argc, char **argv)
{
    /* A file-size limit (ulimit -f) must be a clean "disk full" error from the
     * checkpoint writer, not a signal that kills the kernel mid-training. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("kiln %s\n%s\n", KILN_VERSION, mg_device_build_info());
        return 0;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "kernel")) {
        const char *conn = NULL;
        mg_settings settings = {0};
        for (int i = 2; i < argc; i++) {
            if ((!strcmp(argv[i], "-f") || !strcmp(argv[i], "--connection-file")) && i + 1 < argc)
                conn = argv[++i];
            else if (!strncmp(argv[i], "--connection-file=", 18)) conn = argv[i] + 18;
            else if (!strcmp(argv[i], "--device-path")) /* check the GPU's path on a CPU */
                settings.device_path = 1;
        }
        if (!conn) {
            fprintf(stderr, "kiln kernel: missing -f CONNECTION_FILE\n");
            return 2;
        }
        return jk_kernel_main(conn, &settings);
    }
    if (!strcmp(cmd, "run")) return jk_run_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "sweep")) return jk_sweep_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "export")) return jk_export_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "install")) return jk_install_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "help")) return cmd_help(argc - 1, argv + 1);
    fprintf(stderr, "kiln: unknown command '%s'\n\n%s", cmd, usage);
    return 2;
}
