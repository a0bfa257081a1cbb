/* mg_run_curves.c - the loss/accuracy curves of a run as JSON, stored in its
 * checkpoints (metadata key "curves") and read back when a run is continued, so the
 * plot of a resumed run starts at step 1, not at the resume step. The per-step loss is
 * thinned to at most MAX_STEP_POINTS points (every k-th) to keep headers small. */
#include <stdlib.h>

#include "mg_run_internal.h"

#define MAX_STEP_POINTS 2000

static json_t *series_json(const mgp_series *s, size_t max)
{
    size_t k = max && s->n > max ? (s->n + max - 1) / max : 1;
    json_t *x = json_array(), *y = json_array();
    for (size_t i = 0; i < s->n; i += k) {
        json_array_append_new(x, json_real(s->x[i]));
        json_array_append_new(y, json_real(s->y[i]));
    }
    return json_pack("{s:o, s:o}", "x", x, "y", y);
}

char *mgp_curves_json(const void *run)
{
    const mg_run *r = run;
    json_t *j = json_pack(
        "{s:o, s:o, s:o, s:o, s:o}", "step_loss", series_json(&r->step_loss, MAX_STEP_POINTS),
        "train_loss", series_json(&r->ep_loss, 0), "train_accuracy", series_json(&r->ep_acc, 0),
        "val_loss", series_json(&r->ep_vloss, 0), "val_accuracy", series_json(&r->ep_vacc, 0));
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return text;
}

/* Adds the points of j's series key with x < before (a checkpoint of a later step than
 * the one resumed from cannot exist, but curves are only a picture: be strict). */
static void series_load(mg_run *r, mgp_series *s, const json_t *j, const char *key, double before)
{
    const json_t *o = json_object_get(j, key);
    const json_t *x = json_object_get(o, "x"), *y = json_object_get(o, "y");
    size_t n = json_array_size(x);
    if (n != json_array_size(y)) return;
    for (size_t i = 0; i < n; i++) {
        const json_t *xi = json_array_get(x, i), *yi = json_array_get(y, i);
        if (!json_is_number(xi) || !json_is_number(yi) || json_number_value(xi) > before) continue;
        mgp_curve_add(r, s, json_number_value(xi), json_number_value(yi));
    }
}

void mgp_curves_restore(mg_run *r, const char *text, int64_t step)
{
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    if (!json_is_object(j)) {
        json_decref(j);
        return;
    }
    double before = (double)step;
    series_load(r, &r->step_loss, j, "step_loss", before);
    series_load(r, &r->ep_loss, j, "train_loss", before);
    series_load(r, &r->ep_acc, j, "train_accuracy", before);
    series_load(r, &r->ep_vloss, j, "val_loss", before);
    series_load(r, &r->ep_vacc, j, "val_accuracy", before);
    json_decref(j);
}
