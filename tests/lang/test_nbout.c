/* test_nbout.c - the notebook writer behind `kiln run`: outputs recorded as nbclient
 * records them (one output per stream message, display_data, execute_result with the
 * count, error), update_display_data rewriting earlier outputs in place across cells,
 * clear_output now and with wait. */
#include "jk_nbout.h"
#include "t.h"

static json_t *bundle(const char *text) { return json_pack("{s:s}", "text/plain", text); }

T_TEST(records_outputs)
{
    jk_nbout nb;
    ASSERT_EQ(jk_nbout_init(&nb), 0);
    json_t *outs = json_array();
    jk_nbout_begin_cell(&nb, outs, 4);
    const mg_out *o = &nb.out;
    o->stream(o->user, "stdout", "a\n", 2);
    o->stream(o->user, "stdout", "b\n", 2);
    o->stream(o->user, "stderr", "e\n", 2);
    json_t *d = bundle("shown");
    o->display(o->user, d, NULL, NULL, 0);
    o->result(o->user, d, NULL);
    json_decref(d);
    jk_nbout_error(&nb, "ValueError", "bad", NULL);
    ASSERT_EQ(json_array_size(outs), 6);
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(outs, 1), "text")), "b\n");
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(outs, 2), "name")), "stderr");
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(outs, 3), "output_type")),
                  "display_data");
    json_t *res = json_array_get(outs, 4);
    ASSERT_EQ(json_integer_value(json_object_get(res, "execution_count")), 4);
    ASSERT(json_is_object(json_object_get(res, "metadata")));
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(outs, 5), "ename")),
                  "ValueError");
    ASSERT(json_is_array(json_object_get(json_array_get(outs, 5), "traceback")));
    json_decref(outs);
    jk_nbout_deinit(&nb);
}

T_TEST(update_display_across_cells)
{
    jk_nbout nb;
    ASSERT_EQ(jk_nbout_init(&nb), 0);
    json_t *cell1 = json_array(), *cell2 = json_array();
    const mg_out *o = &nb.out;
    json_t *v1 = bundle("step 1"), *v2 = bundle("step 2");
    jk_nbout_begin_cell(&nb, cell1, 1);
    o->display(o->user, v1, NULL, "progress", 0);
    jk_nbout_begin_cell(&nb, cell2, 2);
    o->display(o->user, v2, NULL, "progress", 1); /* update: no new output */
    ASSERT_EQ(json_array_size(cell2), 0);
    json_t *data = json_object_get(json_array_get(cell1, 0), "data");
    ASSERT_STR_EQ(json_string_value(json_object_get(data, "text/plain")), "step 2");
    o->display(o->user, v1, NULL, "unknown-id", 1); /* unknown id: ignored */
    ASSERT_EQ(json_array_size(cell2), 0);
    json_decref(v1);
    json_decref(v2);
    json_decref(cell1);
    json_decref(cell2);
    jk_nbout_deinit(&nb);
}

T_TEST(clear_output)
{
    jk_nbout nb;
    ASSERT_EQ(jk_nbout_init(&nb), 0);
    json_t *outs = json_array();
    jk_nbout_begin_cell(&nb, outs, 1);
    const mg_out *o = &nb.out;
    o->stream(o->user, "stdout", "old", 3);
    o->clear(o->user, 0);
    ASSERT_EQ(json_array_size(outs), 0);
    o->stream(o->user, "stdout", "x", 1);
    o->clear(o->user, 1); /* wait: cleared only at the next output */
    ASSERT_EQ(json_array_size(outs), 1);
    o->stream(o->user, "stdout", "new", 3);
    ASSERT_EQ(json_array_size(outs), 1);
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(outs, 0), "text")), "new");
    json_decref(outs);
    jk_nbout_deinit(&nb);
}

int main(void)
{
    T_RUN(records_outputs);
    T_RUN(update_display_across_cells);
    T_RUN(clear_output);
    return T_EXIT();
}
