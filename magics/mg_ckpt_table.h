/* mg_ckpt_table.h - %checkpoint list / show output: text/plain + text/html tables. */
#ifndef MG_CKPT_TABLE_H
#define MG_CKPT_TABLE_H

#include "mg.h"

/* The checkpoints of run directory dir (damaged ones with their reason). */
RT_MUST_USE int mg_ckpt_table_list(const mg_out *out, const char *dir, mg_error *err);
/* The complete checkpoints of the s3:// run at url (newest first), then the
 * incomplete or unreadable ones with their reason. */
RT_MUST_USE int mg_ckpt_table_list_store(const mg_out *out, const char *url, mg_error *err);
/* One checkpoint's metadata and tensors, titled name (the file, or the object it was
 * fetched from); a damaged file is an error naming it. */
RT_MUST_USE int mg_ckpt_table_show(const mg_out *out, const char *path, const char *name,
                                   mg_error *err);

/* A metadata value as shown: reals in their shortest round-trip form (0.774, not
 * 0.77400000000000002), other text as is; out is truncated to n. */
void mgp_ckpt_display_value(const char *in, char *out, size_t n);

#endif
