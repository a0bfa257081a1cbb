/* jk_nbout.c - the notebook writer behind `kiln run`, recording outputs exactly as
 * nbclient does (so both give the same notebook): each stream message is its own
 * output (nbclient does not merge them; frontends do), displays and results become
 * display_data / execute_result, update_display_data rewrites every earlier output
 * with that display_id in place (in any cell), clear_output empties the cell (now, or
 * at the next output with wait). No comms: forms fall back to their text/HTML table.
 * Live displays (those with a display_id) also go to jk_run_progress when one is set. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "jk_nbout.h"

static jk_nbout *self(void *u) { return u; }

static void apply_clear(jk_nbout *nb)
{
    if (nb->clear_pending && nb->outputs) json_array_clear(nb->outputs);
    nb->clear_pending = 0;
}

static void on_stream(void *u, const char *name, const char *text, size_t len)
{
    jk_nbout *nb = self(u);
    if (nb->log_output) {
        fwrite(text, 1, len, stderr);
        fflush(stderr);
    }
    if (!nb->outputs) return;
    apply_clear(nb);
    json_t *s = json_stringn(text, len);
    if (!s) return;
    json_array_append_new(nb->outputs, json_pack("{s:s, s:s, s:o}", "output_type", "stream", "name",
                                                 name, "text", s));
}

static json_t *meta_or_empty(json_t *metadata)
{
    return metadata ? json_deep_copy(metadata) : json_object();
}

static void on_display(void *u, json_t *data, json_t *metadata, const char *display_id, int update)
{
    jk_nbout *nb = self(u);
    if (display_id && nb->progress) jk_run_progress_show(nb->progress, data);
    if (update) {
        json_t *list = display_id ? json_object_get(nb->displays, display_id) : NULL;
        size_t i;
        json_t *o;
        json_array_foreach(list, i, o)
        {
            json_object_set_new(o, "data", json_deep_copy(data));
            json_object_set_new(o, "metadata", meta_or_empty(metadata));
        }
        return;
    }
    if (!nb->outputs) return;
    apply_clear(nb);
    json_t *o = json_pack("{s:s, s:o, s:o}", "output_type", "display_data", "data",
                          json_deep_copy(data), "metadata", meta_or_empty(metadata));
    if (!o) return;
    json_array_append(nb->outputs, o);
    if (display_id) {
        json_t *list = json_object_get(nb->displays, display_id);
        if (!list) {
            list = json_array();
            json_object_set_new(nb->displays, display_id, list);
        }
        json_array_append(list, o);
    }
    json_decref(o);
}

static void on_result(void *u, json_t *data, json_t *metadata)
{
    jk_nbout *nb = self(u);
    if (!nb->outputs) return;
    apply_clear(nb);
    json_array_append_new(nb->outputs,
                          json_pack("{s:s, s:i, s:o, s:o}", "output_type", "execute_result",
                                    "execution_count", nb->execution_count, "data",
                                    json_deep_copy(data), "metadata", meta_or_empty(metadata)));
}

static void on_clear(void *u, int wait)
{
    jk_nbout *nb = self(u);
    nb->clear_pending = 1;
    if (!wait) apply_clear(nb);
}

int jk_nbout_init(jk_nbout *nb)
{
    memset(nb, 0, sizeof *nb);
    nb->displays = json_object();
    if (!nb->displays) return -1;
    nb->out = (mg_out){.user = nb,
                       .stream = on_stream,
                       .display = on_display,
                       .result = on_result,
                       .clear = on_clear};
    return 0;
}

void jk_nbout_deinit(jk_nbout *nb)
{
    if (!nb) return;
    json_decref(nb->displays);
    nb->displays = NULL;
}

void jk_nbout_begin_cell(jk_nbout *nb, json_t *outputs, int execution_count)
{
    nb->outputs = outputs;
    nb->execution_count = execution_count;
    nb->clear_pending = 0;
}

void jk_nbout_error(jk_nbout *nb, const char *ename, const char *evalue, json_t *traceback)
{
    if (!nb->outputs) return;
    apply_clear(nb);
    json_array_append_new(nb->outputs,
                          json_pack("{s:s, s:s, s:s, s:o}", "output_type", "error", "ename", ename,
                                    "evalue", evalue, "traceback",
                                    traceback ? json_incref(traceback) : json_array()));
}
