/* mg_registry.c - the one static table of every magic Kiln ships. %lsmagic,
 * `kiln help`, completion and inspect are all generated from it. To add a magic:
 * define `const mg_command mg_cmd_NAME` in its own file, then add one extern line
 * and one table line below (keep the table sorted by name). */
#include <string.h>

#include "mg.h"
#include "rt_device.h"

extern const mg_command mg_cmd_cd;
extern const mg_command mg_cmd_checkpoint;
extern const mg_command mg_cmd_clear;
extern const mg_command mg_cmd_dataset;
extern const mg_command mg_cmd_device;
extern const mg_command mg_cmd_env;
extern const mg_command mg_cmd_evaluate;
extern const mg_command mg_cmd_export;
extern const mg_command mg_cmd_fine_tune;
extern const mg_command mg_cmd_html;
extern const mg_command mg_cmd_lr_find;
extern const mg_command mg_cmd_lsmagic;
extern const mg_command mg_cmd_model;
extern const mg_command mg_cmd_predict;
extern const mg_command mg_cmd_pwd;
extern const mg_command mg_cmd_results;
extern const mg_command mg_cmd_resume;
extern const mg_command mg_cmd_sweep;
extern const mg_command mg_cmd_time;
extern const mg_command mg_cmd_train;
extern const mg_command mg_cmd_who;

static const mg_command *const table[] = {
    &mg_cmd_cd,      &mg_cmd_checkpoint, &mg_cmd_clear,  &mg_cmd_dataset,   &mg_cmd_device,
    &mg_cmd_env,     &mg_cmd_evaluate,   &mg_cmd_export, &mg_cmd_fine_tune, &mg_cmd_html,
    &mg_cmd_lr_find, &mg_cmd_lsmagic,    &mg_cmd_model,  &mg_cmd_predict,   &mg_cmd_pwd,
    &mg_cmd_results, &mg_cmd_resume,     &mg_cmd_sweep,  &mg_cmd_time,      &mg_cmd_train,
    &mg_cmd_who,
};

const mg_command *mg_registry_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i]->name, name)) return table[i];
    return NULL;
}

const char *mg_registry_suggest(const char *name)
{
    const char *best = NULL;
    size_t bd = 99, len = name ? strlen(name) : 0;
    for (size_t i = 0; len && i < sizeof table / sizeof table[0]; i++) {
        size_t d = mg_edit_distance(name, table[i]->name);
        if (d < bd) bd = d, best = table[i]->name;
    }
    /* one edit, or two in a word of 4 letters or more: "trian", "resmue", "trai" */
    return best && (bd <= 1 || (bd == 2 && len >= 4)) ? best : NULL;
}

const mg_command *const *mg_registry_all(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}

/* Beside the magics this build has, its CUDA toolkit (mg.h). */
const char *mg_device_build_info(void) { return rt_cuda_build_info(); }
