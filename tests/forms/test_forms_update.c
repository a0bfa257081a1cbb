/* test_forms_update.c - messages from the widget manager: an accepted "update"
 * changes the variable at once and is echoed (echo_update); a refused one (wrong
 * type, out of range, not an option, bad date) leaves the variable alone and sends
 * the kept value back; unknown model ids and malformed content are refused cleanly;
 * request_state and the control comm's request_states answer with full state. */
#include "../t.h"
#include "fm_fake.h"

typedef struct {
    fake fk;
    mg_host host;
    mg_out out;
    fm_registry *r;
    size_t mark; /* log entries before this one are old (ids point into them: never clear) */
} env;

static const char *CODE = "#@title Update test\n"
                          "epochs = 10  #@param {type:\"slider\", min:1, max:50}\n"
                          "lr = 0.5  #@param {type:\"slider\", min:0, max:1, step:0.1}\n"
                          "optimizer = \"adam\"  #@param [\"adam\", \"sgd\", \"adamw\"]\n"
                          "batch = 64  #@param [32, 64, 128] {type:\"raw\"}\n"
                          "arch = \"resnet\"  #@param [\"resnet\", \"vgg\"] {allow-input: true}\n"
                          "augment = False  #@param {type:\"boolean\"}\n"
                          "start = \"2024-09-19\"  #@param {type:\"date\"}\n"
                          "steps = 100  #@param {type:\"integer\"}\n"
                          "wd = 0.01  #@param {type:\"number\"}\n"
                          "run_name = \"mnist\"  #@param {type:\"string\"}\n"
                          "milestones = [30, 60]  #@param {type:\"raw\"}\n"
                          "extra = None  #@param\n";

static int setup(env *e)
{
    fake_init(&e->fk, &e->host, &e->out, 1);
    e->r = fm_registry_create();
    fm_form *f = NULL;
    mg_error err = {{0}, {0}};
    if (!e->r || fm_form_parse(CODE, &f, &err)) return -1;
    /* what running the cell assigns */
    json_t *v = json_pack("{s:i,s:f,s:s,s:i,s:s,s:b,s:s,s:i,s:f,s:s,s:[i,i],s:n,s:i}", "epochs", 10,
                          "lr", 0.5, "optimizer", "adam", "batch", 64, "arch", "resnet", "augment",
                          0, "start", "2024-09-19", "steps", 100, "wd", 0.01, "run_name", "mnist",
                          "milestones", 30, 60, "extra", "other", 42);
    json_object_update(e->fk.vars, v);
    json_decref(v);
    json_t *meta = json_pack("{s:s}", "cellId", "c1");
    int rc = fm_registry_show(e->r, f, meta, &e->host, &e->out, &err);
    json_decref(meta);
    return rc;
}

static void teardown(env *e)
{
    fm_registry_destroy(e->r);
    fake_deinit(&e->fk);
}

/* The control model (n-th of its kind) id. */
static const char *control(env *e, const char *model, int n)
{
    const char *id = NULL;
    fake_model(&e->fk, model, n, &id);
    return id;
}

static void mark(env *e) { e->mark = json_array_size(e->fk.cap.log); }
static size_t new_msgs(env *e) { return json_array_size(e->fk.cap.log) - e->mark; }

/* Sends {"method":"update","state":{key: value}} (value stolen); returns rc. */
static int update(env *e, const char *id, const char *key, json_t *value)
{
    mark(e);
    json_t *content = json_pack("{s:s,s:{s:s,s:{s:o},s:[]}}", "comm_id", id, "data", "method",
                                "update", "state", key, value, "buffer_paths");
    int rc = fm_registry_comm_msg(e->r, "comm_msg", content, &e->host, &e->out);
    json_decref(content);
    return rc;
}

static json_t *var(env *e, const char *name) { return json_object_get(e->fk.vars, name); }

/* The only logged message must be method `method` on id carrying key. */
static json_t *reply(env *e, const char *method)
{
    if (new_msgs(e) != 1) return NULL;
    json_t *m = json_array_get(e->fk.cap.log, e->mark);
    json_t *data = json_object_get(m, "data");
    if (strcmp(json_string_value(json_object_get(m, "type")), "comm_msg") ||
        strcmp(json_string_value(json_object_get(data, "method")), method) ||
        strcmp(json_string_value(json_object_get(json_object_get(m, "metadata"), "version")),
               "2.1.0"))
        return NULL;
    return json_object_get(data, "state");
}

T_TEST(accepted_updates_set_variables)
{
    env e;
    ASSERT_EQ(setup(&e), 0);
    ASSERT_EQ(update(&e, control(&e, "IntSliderModel", 0), "value", json_integer(20)), 0);
    ASSERT_EQ(json_integer_value(var(&e, "epochs")), 20);
    ASSERT(json_is_integer(var(&e, "epochs")));
    json_t *echo = reply(&e, "echo_update");
    ASSERT(echo != NULL);
    ASSERT_EQ(json_integer_value(json_object_get(echo, "value")), 20);

    ASSERT_EQ(update(&e, control(&e, "FloatSliderModel", 0), "value", json_real(0.7)), 0);
    ASSERT_NEAR(json_real_value(var(&e, "lr")), 0.7, 1e-12);
    ASSERT_EQ(update(&e, control(&e, "DropdownModel", 0), "index", json_integer(1)), 0);
    ASSERT_STR_EQ(json_string_value(var(&e, "optimizer")), "sgd");
    ASSERT_EQ(json_integer_value(json_object_get(reply(&e, "echo_update"), "index")), 1);
    ASSERT_EQ(update(&e, control(&e, "DropdownModel", 1), "index", json_integer(2)), 0);
    ASSERT(json_is_integer(var(&e, "batch")));
    ASSERT_EQ(json_integer_value(var(&e, "batch")), 128);
    ASSERT_EQ(update(&e, control(&e, "ComboboxModel", 0), "value", json_string("my-net")), 0);
    ASSERT_STR_EQ(json_string_value(var(&e, "arch")), "my-net");
    ASSERT_EQ(update(&e, control(&e, "CheckboxModel", 0), "value", json_true()), 0);
    ASSERT(json_is_true(var(&e, "augment")));
    ASSERT_EQ(update(&e, control(&e, "DatePickerModel", 0), "value",
                     json_pack("{s:i,s:i,s:i}", "year", 2025, "month", 0, "date", 31)),
              0);
    ASSERT_STR_EQ(json_string_value(var(&e, "start")), "2025-01-31");
    ASSERT_EQ(update(&e, control(&e, "IntTextModel", 0), "value", json_real(3.0)), 0);
    ASSERT(json_is_integer(var(&e, "steps")));
    ASSERT_EQ(json_integer_value(var(&e, "steps")), 3);
    ASSERT_EQ(update(&e, control(&e, "FloatTextModel", 0), "value", json_real(0.25)), 0);
    ASSERT_NEAR(json_real_value(var(&e, "wd")), 0.25, 0);
    ASSERT_EQ(update(&e, control(&e, "TextModel", 0), "value", json_string("fashion")), 0);
    ASSERT_STR_EQ(json_string_value(var(&e, "run_name")), "fashion");
    /* raw: a literal is parsed, other code runs as `name = code` */
    ASSERT_EQ(update(&e, control(&e, "TextModel", 1), "value", json_string("[10, 20, 30]")), 0);
    ASSERT_EQ(json_array_size(var(&e, "milestones")), 3);
    ASSERT_EQ(update(&e, control(&e, "TextModel", 2), "value", json_string("other")), 0);
    ASSERT_EQ(json_integer_value(var(&e, "extra")), 42);
    ASSERT_EQ(e.fk.run_calls, 1);

    /* the stored state follows, so request_state and saved state show the new values */
    json_t *ws = fm_registry_widget_state(e.r);
    json_t *st = json_object_get(
        json_object_get(json_object_get(ws, "state"), control(&e, "IntSliderModel", 0)), "state");
    ASSERT_EQ(json_integer_value(json_object_get(st, "value")), 20);
    json_decref(ws);
    teardown(&e);
}

T_TEST(refused_updates_change_nothing)
{
    env e;
    ASSERT_EQ(setup(&e), 0);
    static const struct {
        const char *model;
        int n;
        const char *key;
        const char *value_json, *var;
    } bad[] = {
        {"IntSliderModel", 0, "value", "99", "epochs"}, /* out of range */
        {"IntSliderModel", 0, "value", "0", "epochs"},
        {"IntSliderModel", 0, "value", "\"20\"", "epochs"}, /* wrong type */
        {"IntSliderModel", 0, "value", "2.5", "epochs"},    /* not an integer */
        {"FloatSliderModel", 0, "value", "1.5", "lr"},
        {"DropdownModel", 0, "index", "7", "optimizer"}, /* no such option */
        {"DropdownModel", 0, "index", "-1", "optimizer"},
        {"DropdownModel", 0, "index", "\"1\"", "optimizer"},
        {"DropdownModel", 0, "index", "null", "optimizer"},
        {"CheckboxModel", 0, "value", "1", "augment"},
        {"DatePickerModel", 0, "value", "{\"year\":2025,\"month\":1,\"date\":30}",
         "start"}, /* Feb 30 */
        {"DatePickerModel", 0, "value", "null", "start"},
        {"IntTextModel", 0, "value", "3.5", "steps"},
        {"IntTextModel", 0, "value", "true", "steps"},
        {"FloatTextModel", 0, "value", "\"x\"", "wd"},
        {"TextModel", 0, "value", "5", "run_name"},
        {"TextModel", 1, "value", "\"no such name\"", "milestones"}, /* code that fails */
        {"TextModel", 1, "value", "\"a\\nb\"", "milestones"},
        {"ComboboxModel", 0, "value", "3", "arch"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *id = control(&e, bad[i].model, bad[i].n);
        json_t *before = json_deep_copy(var(&e, bad[i].var));
        int sets = e.fk.set_calls;
        json_t *v = json_loads(bad[i].value_json, JSON_DECODE_ANY, NULL);
        ASSERT(v != NULL);
        ASSERT_EQ(update(&e, id, bad[i].key, v), 0);
        if (!json_equal(before, var(&e, bad[i].var))) fprintf(stderr, "  case %zu changed\n", i);
        ASSERT(json_equal(before, var(&e, bad[i].var)));
        ASSERT_EQ(e.fk.set_calls, sets);
        /* the frontend gets the kept value back, and no echo of the bad one */
        json_t *back = reply(&e, "update");
        if (!back) fprintf(stderr, "  case %zu: no revert update\n", i);
        ASSERT(back != NULL);
        ASSERT(json_object_get(back, bad[i].key) != NULL);
        json_decref(before);
    }
    ASSERT_EQ(e.fk.run_calls, 1); /* only the one-line code ran; "a\nb" never did */
    teardown(&e);
}

T_TEST(unknown_and_malformed_messages)
{
    env e;
    ASSERT_EQ(setup(&e), 0);
    json_t *before = json_deep_copy(e.fk.vars);
    ASSERT_EQ(update(&e, "no-such-model", "value", json_integer(3)), -1);
    ASSERT_EQ(fm_registry_comm_msg(e.r, "comm_msg", NULL, &e.host, &e.out), -1);
    json_t *c = json_pack("{s:i}", "comm_id", 3);
    ASSERT_EQ(fm_registry_comm_msg(e.r, "comm_msg", c, &e.host, &e.out), -1);
    json_decref(c);
    const char *id = control(&e, "IntSliderModel", 0);
    mark(&e);
    static const char *contents[] = {
        "{\"comm_id\":\"%s\"}",
        "{\"comm_id\":\"%s\",\"data\":7}",
        "{\"comm_id\":\"%s\",\"data\":{}}",
        "{\"comm_id\":\"%s\",\"data\":{\"method\":\"update\"}}",
        "{\"comm_id\":\"%s\",\"data\":{\"method\":\"update\",\"state\":[1]}}",
        ("{\"comm_id\":\"%s\",\"data\":{\"method\":\"update\",\"state\":{\"_model_name\":\"X\","
         "\"nokey\":1}}}"), /* one string, split (parentheses: clang -Wstring-concatenation) */
        "{\"comm_id\":\"%s\",\"data\":{\"method\":\"custom\",\"content\":{\"event\":\"click\"}}}",
    };
    for (size_t i = 0; i < sizeof contents / sizeof contents[0]; i++) {
        char buf[300];
        snprintf(buf, sizeof buf, contents[i], id);
        json_t *m = json_loads(buf, 0, NULL);
        ASSERT_EQ(fm_registry_comm_msg(e.r, "comm_msg", m, &e.host, &e.out), 0);
        json_decref(m);
    }
    ASSERT_EQ(new_msgs(&e), 0);
    ASSERT(json_equal(before, e.fk.vars));
    json_t *ws = fm_registry_widget_state(e.r);
    json_t *st = json_object_get(json_object_get(json_object_get(ws, "state"), id), "state");
    ASSERT_STR_EQ(json_string_value(json_object_get(st, "_model_name")), "IntSliderModel");
    ASSERT(json_object_get(st, "nokey") == NULL);
    json_decref(ws);
    /* unknown message type / comm target */
    json_t *open =
        json_pack("{s:s,s:s,s:{}}", "comm_id", "x1", "target_name", "something.else", "data");
    ASSERT_EQ(fm_registry_comm_msg(e.r, "comm_open", open, &e.host, &e.out), -1);
    ASSERT_EQ(fm_registry_comm_msg(e.r, "execute_request", open, &e.host, &e.out), -1);
    json_decref(open);
    json_decref(before);
    teardown(&e);
}

T_TEST(request_state_and_control_comm)
{
    env e;
    ASSERT_EQ(setup(&e), 0);
    const char *id = control(&e, "DropdownModel", 0);
    mark(&e);
    json_t *m = json_pack("{s:s,s:{s:s}}", "comm_id", id, "data", "method", "request_state");
    ASSERT_EQ(fm_registry_comm_msg(e.r, "comm_msg", m, &e.host, &e.out), 0);
    json_decref(m);
    json_t *st = reply(&e, "update");
    ASSERT(st != NULL);
    ASSERT_STR_EQ(json_string_value(json_object_get(st, "_model_name")), "DropdownModel");
    ASSERT_EQ(json_integer_value(json_object_get(st, "index")), 0);
    ASSERT_EQ(json_array_size(json_object_get(st, "_options_labels")), 3);

    json_t *open = json_pack("{s:s,s:s,s:{}}", "comm_id", "ctl", "target_name",
                             "jupyter.widget.control", "data");
    ASSERT_EQ(fm_registry_comm_msg(e.r, "comm_open", open, &e.host, &e.out), 0);
    json_decref(open);
    mark(&e);
    m = json_pack("{s:s,s:{s:s}}", "comm_id", "ctl", "data", "method", "request_states");
    ASSERT_EQ(fm_registry_comm_msg(e.r, "comm_msg", m, &e.host, &e.out), 0);
    json_decref(m);
    ASSERT_EQ(new_msgs(&e), 1);
    json_t *data = json_object_get(json_array_get(e.fk.cap.log, e.mark), "data");
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(e.fk.cap.log, e.mark), "id")),
                  "ctl");
    ASSERT_STR_EQ(json_string_value(json_object_get(data, "method")), "update_states");
    json_t *one = json_object_get(json_object_get(data, "states"), id);
    ASSERT_STR_EQ(json_string_value(json_object_get(one, "model_name")), "DropdownModel");
    ASSERT_STR_EQ(json_string_value(json_object_get(one, "model_module")),
                  "@jupyter-widgets/controls");
    ASSERT(json_object_get(json_object_get(one, "state"), "_options_labels") != NULL);

    /* the frontend closing a model forgets it */
    json_t *close = json_pack("{s:s,s:{}}", "comm_id", id, "data");
    ASSERT_EQ(fm_registry_comm_msg(e.r, "comm_close", close, &e.host, &e.out), 0);
    ASSERT_EQ(fm_registry_comm_msg(e.r, "comm_close", close, &e.host, &e.out), -1);
    json_decref(close);
    ASSERT_EQ(update(&e, id, "index", json_integer(1)), -1);
    ASSERT_STR_EQ(json_string_value(var(&e, "optimizer")), "adam");
    teardown(&e);
}

int main(void)
{
    T_RUN(accepted_updates_set_variables);
    T_RUN(refused_updates_change_nothing);
    T_RUN(unknown_and_malformed_messages);
    T_RUN(request_state_and_control_comm);
    return T_EXIT();
}
