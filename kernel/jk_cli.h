/* jk_cli.h - the subcommands of the `kiln` binary. Each returns the process exit
 * status; only jk_main.c calls exit(). */
#ifndef JK_CLI_H
#define JK_CLI_H

#include "mg.h"

/* kiln kernel -f CONNECTION_FILE [--device-path]: serve the Jupyter protocol
 * (kernel/jk_kernel.c); settings are what its magics see (mg.h). */
int jk_kernel_main(const char *connection_file, const mg_settings *settings);
/* kiln run NOTEBOOK.ipynb [-o OUT] [-p NAME VALUE]... (kernel/jk_run.c); argv[0] = "run". */
int jk_run_main(int argc, char **argv);
/* kiln sweep NOTEBOOK.ipynb -o DIR -p NAME V1,V2... (kernel/jk_sweep.c); argv[0] = "sweep". */
int jk_sweep_main(int argc, char **argv);
/* kiln export RUN_DIR --onnx FILE (kernel/jk_export.c); argv[0] = "export". */
int jk_export_main(int argc, char **argv);
/* kiln install [--user|--sys-prefix|--prefix DIR] [--name NAME] (kernel/jk_install.c). */
int jk_install_main(int argc, char **argv);

#endif
