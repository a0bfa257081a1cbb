/* mg_ckpt_table.h - %checkpoint list / show output: text/plain + text/html tables. */
#ifndef MG_CKPT_TABLE_H
#define MG_CKPT_TABLE_H

#include "mg.h"

/* The checkpoints of run directory dir (damaged ones with their reason). */
int mg_ckpt_table_list(const mg_out *out, const char *dir, mg_error *err);
/* One checkpoint's metadata and tensors; a damaged file is an error naming it. */
int mg_ckpt_table_show(const mg_out *out, const char *path, mg_error *err);

#endif
