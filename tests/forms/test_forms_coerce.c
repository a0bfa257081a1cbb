/* test_forms_coerce.c - `kiln run -p NAME VALUE` overrides checked against the
 * parameter's annotation (fm_form_coerce): each type's accepted spellings and the
 * clear refusals (range, options, dates, types), and names that are not parameters. */
#include <stdlib.h>

#include "../t.h"
#include "fm.h"

static const char *CODE = "epochs = 10  #@param {type:\"slider\", min:1, max:50}\n"
                          "lr = 0.5  #@param {type:\"slider\", min:0, max:1, step:0.1}\n"
                          "optimizer = \"adam\"  #@param [\"adam\", \"sgd\"]\n"
                          "batch = 64  #@param [32, 64] {type:\"raw\"}\n"
                          "sizes = 8  #@param [8, 16] {type:\"raw\", allow-input: true}\n"
                          "arch = \"resnet\"  #@param [\"resnet\"] {allow-input: true}\n"
                          "augment = False  #@param {type:\"boolean\"}\n"
                          "start = \"2024-09-19\"  #@param {type:\"date\"}\n"
                          "steps = 100  #@param {type:\"integer\"}\n"
                          "wd = 0.01  #@param {type:\"number\"}\n"
                          "run_name = \"mnist\"  #@param {type:\"string\"}\n"
                          "milestones = [30, 60]  #@param {type:\"raw\"}\n"
                          "extra = None  #@param\n";

/* Coerces and returns the value as compact JSON text (malloc'd), or NULL with err. */
static char *co(const fm_form *f, const char *name, const char *text, int *rc, mg_error *err)
{
    json_t *v = NULL;
    *rc = fm_form_coerce(f, name, text, &v, err);
    if (*rc != 1) return NULL;
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    return s;
}

T_TEST(accepted)
{
    fm_form *f = NULL;
    mg_error err = {{0}, {0}};
    ASSERT_EQ(fm_form_parse(CODE, &f, &err), 0);
    static const struct {
        const char *name, *text, *json;
    } ok[] = {
        {"epochs", "20", "20"},
        {"epochs", "50", "50"},
        {"epochs", "1", "1"},
        {"epochs", "7.0", "7"},
        {"lr", "0.3", "0.29999999999999999"},
        {"lr", "1", "1.0"},
        {"optimizer", "sgd", "\"sgd\""},
        {"batch", "32", "32"},
        {"sizes", "16", "16"},
        {"sizes", "24", "24"},
        {"arch", "vgg", "\"vgg\""},
        {"augment", "True", "true"},
        {"augment", "false", "false"},
        {"augment", "1", "true"},
        {"start", "2024-02-29", "\"2024-02-29\""},
        {"steps", "-3", "-3"},
        {"steps", "1_000", "1000"},
        {"wd", "1e-4", "0.0001"},
        {"wd", "2", "2"},
        {"run_name", "a b \"c\"", "\"a b \\\"c\\\"\""},
        {"milestones", "[1, 2]", "[1,2]"},
        {"milestones", "None", "null"},
        {"extra", "{'a': 1}", "{\"a\":1}"},
        {"extra", "hello world", "\"hello world\""},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int rc;
        char *s = co(f, ok[i].name, ok[i].text, &rc, &err);
        if (rc != 1) fprintf(stderr, "  %s %s: %s\n", ok[i].name, ok[i].text, err.evalue);
        ASSERT_EQ(rc, 1);
        if (strcmp(s, ok[i].json)) fprintf(stderr, "  %s %s -> %s\n", ok[i].name, ok[i].text, s);
        ASSERT_STR_EQ(s, ok[i].json);
        free(s);
    }
    fm_form_destroy(f);
}

T_TEST(refused)
{
    fm_form *f = NULL;
    mg_error err = {{0}, {0}};
    ASSERT_EQ(fm_form_parse(CODE, &f, &err), 0);
    static const struct {
        const char *name, *text, *words;
    } bad[] = {
        {"epochs", "51", "outside the range"},
        {"epochs", "0", "outside the range"},
        {"epochs", "2.5", "not an integer"},
        {"epochs", "ten", "not a number"},
        {"lr", "-0.1", "outside the range"},
        {"optimizer", "rmsprop", "not one of"},
        {"optimizer", "", "not one of"},
        {"batch", "48", "not one of"},
        {"sizes", "x y", "not a valid"},
        {"augment", "yes", "not a valid"},
        {"augment", "2", "boolean"},
        {"start", "2023-02-29", "date"},
        {"start", "2024-13-01", "date"},
        {"start", "19/09/2024", "date"},
        {"start", "2024-9-19", "date"},
        {"steps", "1.5", "whole number"},
        {"steps", "abc", "not a number"},
        {"steps", "True", "not a number"},
        {"wd", "'0.1'", "not a number"},
        {"wd", "nan", "not a number"},
        {"milestones", "[1, 2", "Python literal"},
        {"run_name", "\xff", "UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc;
        err.evalue[0] = '\0';
        char *s = co(f, bad[i].name, bad[i].text, &rc, &err);
        if (rc != -1) fprintf(stderr, "  accepted %s %s -> %s\n", bad[i].name, bad[i].text, s);
        free(s);
        ASSERT_EQ(rc, -1);
        ASSERT_STR_EQ(err.ename, "ValueError");
        if (!strstr(err.evalue, bad[i].words))
            fprintf(stderr, "  %s: %s\n", bad[i].name, err.evalue);
        ASSERT_STR_CONTAINS(err.evalue, bad[i].words);
        ASSERT_STR_CONTAINS(err.evalue, bad[i].name);
    }
    /* not a parameter of this form: 0, nothing set */
    json_t *v = (json_t *)1;
    ASSERT_EQ(fm_form_coerce(f, "unknown", "3", &v, &err), 0);
    ASSERT(v == NULL);
    ASSERT_EQ(fm_form_coerce(NULL, "epochs", "3", &v, &err), 0);
    fm_form_destroy(f);
}

int main(void)
{
    T_RUN(accepted);
    T_RUN(refused);
    return T_EXIT();
}
