/* fm_registry.h - the registry's insides, shared by fm_registry.c (showing forms,
 * saved state) and fm_update.c (messages from the frontend). Internal. */
#ifndef FM_REGISTRY_H
#define FM_REGISTRY_H

#include "fm_internal.h"

/* A form on screen: its parse, the cell it belongs to and the models it opened. */
typedef struct fm_shown {
    unsigned long serial;
    char *cell_key; /* JupyterLab's cellId, or NULL */
    fm_form *form;
    json_t *ids;         /* array of model ids, in the order they were opened */
    char display_id[64]; /* of the form's display_data: replaced by its table when the
                              kernel exits (fm_registry_fallback_all) */
    char root[40];       /* the model its display shows */
    char *shown_text;    /* the text/plain table the display holds (fm_registry_refresh) */
    int moved;           /* a control changed a value since the display was sent */
} fm_shown;

struct fm_registry {
    fm_shown **forms;
    size_t n, cap;
    unsigned long next_serial;
    unsigned long long next_id;
    char prefix[17]; /* random per registry, so ids never repeat across kernels */
    /* model id -> {"state": {...}, "form": serial, "item": index or -1} */
    json_t *models;
    char *control_comm; /* the frontend's jupyter.widget.control comm, or NULL */
    json_t *carried;    /* forms of the kernel before a restart (fm_carry.c), or NULL */
};

/* {id: {model_name, model_module, model_module_version, state, buffers}} of every
 * live model (new ref), as saved notebooks and the control comm want them. */
json_t *fm_registry_states(fm_registry *r);
fm_shown *fm_registry_find_serial(fm_registry *r, unsigned long serial);

/* fm_carry.c: adds the carried forms' model states to states (-1 on no memory); the
 * carried form of cell_key with this code, its values written in (new string, NULL
 * when none or nothing differs); forgets cell_key's carried form, closing its models. */
int fm_registry_carried_states(const fm_registry *r, json_t *states);
char *fm_registry_carried_write_back(fm_registry *r, const char *cell_key, const char *code);
void fm_registry_carried_drop(fm_registry *r, const char *cell_key, const mg_out *out);

#endif
