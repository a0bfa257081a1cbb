/* test_forms_parse.c - the Colab annotation parser: every @param kind in both
 * spellings, titles and markdown, malformed annotations (a SyntaxError naming the
 * line), and random bytes (no crash, always a clean 0 or -1). */
#include <stdint.h>
#include <stdlib.h>

#include "../t.h"
#include "fm_internal.h"

static const fm_field *field_at(const fm_form *f, size_t i)
{
    return f && i < f->n ? f->items[i].field : NULL;
}

T_TEST(design_example)
{
    const char *code = "#@title Train on MNIST { display-mode: \"form\" }\n"
                       "#@markdown Choose the run's hyperparameters.\n"
                       "epochs = 10          #@param {type:\"slider\", min:1, max:50, step:1}\n"
                       "lr = 0.001           #@param {type:\"number\"}\n"
                       "batch_size = 128     #@param [32, 64, 128, 256] {type:\"raw\"}\n"
                       "optimizer = \"adam\"   #@param [\"adam\", \"sgd\", \"adamw\"]\n"
                       "precision = \"fp32\"   #@param [\"fp32\", \"bf16\", \"fp16\"]\n"
                       "run_name = \"mnist\"   #@param {type:\"string\"}\n"
                       "augment = False      #@param {type:\"boolean\"}\n"
                       "%train $epochs\n";
    fm_form *f = NULL;
    mg_error err = {{0}, {0}};
    ASSERT_EQ(fm_form_parse(code, &f, &err), 0);
    ASSERT(f != NULL);
    ASSERT_EQ(f->n, 9);
    ASSERT_EQ(f->items[0].kind, FM_ITEM_TITLE);
    ASSERT_STR_EQ(f->items[0].text, "Train on MNIST");
    ASSERT_STR_EQ(json_string_value(json_object_get(f->title_options, "display-mode")), "form");
    ASSERT_EQ(f->items[1].kind, FM_ITEM_MARKDOWN);
    ASSERT_STR_EQ(f->items[1].text, "Choose the run's hyperparameters.");
    const fm_field *e = field_at(f, 2);
    ASSERT_STR_EQ(e->name, "epochs");
    ASSERT_EQ(e->line, 3);
    ASSERT_EQ(e->kind, FM_SLIDER);
    ASSERT_NEAR(e->min, 1, 0);
    ASSERT_NEAR(e->max, 50, 0);
    ASSERT_NEAR(e->step, 1, 0);
    ASSERT(e->int_slider);
    ASSERT_EQ(json_integer_value(e->code_value), 10);
    ASSERT_EQ(field_at(f, 3)->kind, FM_NUMBER);
    ASSERT_NEAR(json_real_value(field_at(f, 3)->code_value), 0.001, 1e-15);
    const fm_field *bs = field_at(f, 4);
    ASSERT_EQ(bs->kind, FM_DROPDOWN);
    ASSERT(bs->raw);
    ASSERT(!bs->allow_input);
    ASSERT_EQ(json_array_size(bs->labels), 4);
    ASSERT_STR_EQ(json_string_value(json_array_get(bs->labels, 2)), "128");
    ASSERT_EQ(json_integer_value(json_array_get(bs->values, 2)), 128);
    ASSERT_EQ(fm_dropdown_index(bs, bs->code_value), 2);
    const fm_field *opt = field_at(f, 5);
    ASSERT_EQ(opt->kind, FM_DROPDOWN);
    ASSERT(!opt->raw);
    ASSERT_STR_EQ(json_string_value(json_array_get(opt->values, 1)), "sgd");
    ASSERT_EQ(fm_dropdown_index(opt, opt->code_value), 0);
    ASSERT_EQ(field_at(f, 7)->kind, FM_STRING);
    ASSERT_STR_EQ(json_string_value(field_at(f, 7)->code_value), "mnist");
    ASSERT_EQ(field_at(f, 8)->kind, FM_BOOLEAN);
    ASSERT(json_is_false(field_at(f, 8)->code_value));
    fm_form_destroy(f);
}

/* One annotation line each: kind, flags and what the code says. */
T_TEST(every_kind_both_spellings)
{
    static const struct {
        const char *line;
        fm_kind kind;
        int raw, allow, int_slider;
    } cases[] = {
        {"x = 'hi'  #@param {type:\"string\"}", FM_STRING, 0, 0, 0},
        {"x = \"hi\"  # @param {\"type\":\"string\",\"placeholder\":\"enter\"}", FM_STRING, 0, 0,
         0},
        {"x = 1.5  #@param {type: 'number'}", FM_NUMBER, 0, 0, 0},
        {"x = 10  # @param {\"type\":\"integer\"}", FM_INTEGER, 0, 0, 0},
        {"x = 63 # @param {\"type\":\"slider\",\"min\":0,\"max\":100,\"step\":1}", FM_SLIDER, 0, 0,
         1},
        {"x = 0.3  #@param {type:\"slider\", min:-1, max:1, step:0.1}", FM_SLIDER, 0, 0, 0},
        {"x = 150  #@param {type:\"slider\", min:100, max:200}", FM_SLIDER, 0, 0, 1},
        {"x = True  #@param {type:\"boolean\"}", FM_BOOLEAN, 0, 0, 0},
        {"x = \"2024-09-19\"  #@param {type:\"date\"}", FM_DATE, 0, 0, 0},
        {"x = [1280, 768]  #@param {type:\"raw\"}", FM_RAW, 0, 0, 0},
        {"x = None  #@param", FM_UNTYPED, 0, 0, 0},
        {"x = \"b\"  #@param [\"a\", \"b\", \"c\"]", FM_DROPDOWN, 0, 0, 0},
        {"x = 'c'  #@param ['a', 'b'] {allow-input: true}", FM_DROPDOWN, 0, 1, 0},
        {"x = 64  #@param [32, 64] {type:\"raw\"}", FM_DROPDOWN, 1, 0, 0},
        {"quantity = 1 # @param [\"1\",\"2\",\"3\"] {\"type\":\"raw\",\"allow-input\":true}",
         FM_DROPDOWN, 1, 1, 0},
        {"x = 1+1  #@param {type:\"integer\"}", FM_INTEGER, 0, 0,
         0}, /* an expression: not checked */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fm_form *f = NULL;
        mg_error err = {{0}, {0}};
        int rc = fm_form_parse(cases[i].line, &f, &err);
        if (rc) fprintf(stderr, "  case %zu: %s\n", i, err.evalue);
        ASSERT_EQ(rc, 0);
        const fm_field *fd = field_at(f, 0);
        ASSERT(fd != NULL);
        ASSERT_EQ(fd->kind, cases[i].kind);
        ASSERT_EQ(fd->raw, cases[i].raw);
        ASSERT_EQ(fd->allow_input, cases[i].allow);
        if (fd->kind == FM_SLIDER) ASSERT_EQ(fd->int_slider, cases[i].int_slider);
        fm_form_destroy(f);
    }
}

T_TEST(details)
{
    fm_form *f = NULL;
    mg_error err = {{0}, {0}};
    const char *code = "  # @title ## Colab Form {\"run\":\"auto\"}\r\n"
                       "s = \"a#b\"  #@param {type:\"string\", placeholder:\"auto\"}\r\n"
                       "# an ordinary comment with @param in it\n"
                       "%train --note x  #@param\n"
                       "!echo #@param\n"
                       "opts = x  #@param [\"x\", 'y', 3, True] {type:\"raw\"}\n"
                       "#@markdown ---\n"
                       "sl = 100  #@param {type:\"slider\", min:100, max:200}\n";
    ASSERT_EQ(fm_form_parse(code, &f, &err), 0);
    ASSERT_EQ(f->n, 5);
    ASSERT_STR_EQ(f->items[0].text, "## Colab Form");
    ASSERT_STR_EQ(json_string_value(json_object_get(f->title_options, "run")), "auto");
    const fm_field *s = field_at(f, 1);
    ASSERT_STR_EQ(json_string_value(s->code_value), "a#b");
    ASSERT_STR_EQ(s->placeholder, "auto");
    ASSERT_EQ(s->line, 2);
    const fm_field *o = field_at(f, 2);
    ASSERT_EQ(o->line, 6);
    ASSERT_STR_EQ(json_string_value(json_array_get(o->labels, 0)), "x");
    ASSERT_STR_EQ(json_string_value(json_array_get(o->labels, 3)), "True");
    ASSERT_STR_EQ(o->code_text, "x");
    ASSERT(o->code_value == NULL); /* code, not a literal */
    json_t *three = json_integer(3);
    ASSERT_EQ(fm_dropdown_index(o, three), 2);
    json_decref(three);
    ASSERT_STR_EQ(f->items[3].text, "---");
    const fm_field *sl = field_at(f, 4);
    ASSERT_NEAR(sl->min, 100, 0);
    ASSERT_NEAR(sl->max, 200, 0);
    ASSERT_NEAR(sl->step, 1, 0);
    fm_form_destroy(f);

    f = (fm_form *)1;
    ASSERT_EQ(fm_form_parse("x = 1\nprint(x)  # no form here\n", &f, &err), 0);
    ASSERT(f == NULL);
    ASSERT_EQ(fm_form_parse("", &f, &err), 0);
    ASSERT(f == NULL);
}

/* Each malformed cell must fail with a SyntaxError that names its line. */
T_TEST(malformed_names_the_line)
{
    static const struct {
        const char *code;
        const char *line, *words;
    } cases[] = {
        {"a = 1\nb = 2\nx = 5  #@param {type:\"slidr\"}", "line 3:", "unknown @param type"},
        {"x = 'a'  #@param {type:\"string\"", "line 1:", "expected"},
        {"\nx = 'a'  #@param [\"a\" \"b\"]", "line 2:", "dropdown list"},
        {"x = 'a'  #@param []", "line 1:", "empty"},
        {"x = 5  #@param {type:\"slider\", min:10, max:1}", "line 1:", "below max"},
        {"x = 5  #@param {type:\"slider\", min:0, max:10, step:0}", "line 1:", "positive"},
        {"x = 50  #@param {type:\"slider\", min:0, max:10}", "line 1:", "outside the range"},
        {"x = 5  #@param {type:\"slider\", min:\"a\"}", "line 1:", "must be a number"},
        {"x = 'a'  #@param {type:\"string\", min:1}", "line 1:", "does not apply"},
        {"x = 'a'  #@param {type:\"string\", colour:1}", "line 1:", "does not apply"},
        {"y = 1\nprint(y)  #@param", "line 2:", "assignment"},
        {"#@param {type:\"string\"}", "line 1:", "assignment"},
        {"a.b = 1  #@param {type:\"integer\"}", "line 1:", "plain variable name"},
        {"x == 1  #@param", "line 1:", "assignment"},
        {"x = 'z'  #@param [\"a\", \"b\"]", "line 1:", "not one of"},
        {"x = \"a\"  #@param {type:\"integer\"}", "line 1:", "integer"},
        {"x = 1.5  #@param {type:\"integer\"}", "line 1:", "integer"},
        {"x = 5  #@param {type:\"string\"}", "line 1:", "string"},
        {"x = 1  #@param {type:\"boolean\"}", "line 1:", "boolean"},
        {"x = \"2024-02-30\"  #@param {type:\"date\"}", "line 1:", "date"},
        {"x = \"24-1-1\"  #@param {type:\"date\"}", "line 1:", "date"},
        {"x = 'a'  #@param {allow-input: true}", "line 1:", "allow-input"},
        {"x = 'a'  #@param [\"a\"] {allow-input: 1}", "line 1:", "allow-input"},
        {"x = 'a'  #@param [\"a\"] {type:\"slider\"}", "line 1:", "dropdown's type"},
        {"x = 1  #@param\nx = 2  #@param", "line 2:", "already"},
        {"#@title A\n#@title B", "line 2:", "only one"},
        {"x = 1  #@param {type:\"integer\"} trailing", "line 1:", "unexpected text"},
        {"#@title T { display-mode: \"form\" ", "line 1:", "expected"},
        {"x = 'a'  #@param {type:\"str\xff\"}", "line 1:", "UTF-8"},
        {"x = 'a'  #@param {type:\"\\ud800\"}", "line 1:", "escape"},
        {"x = 'a'  #@param {type:}", "line 1:", "expected a value"},
        {"x =   #@param {type:\"string\"}", "line 1:", "needs a value"},
        {"x = 1  #@param {type:1}", "line 1:", "quoted name"},
        {"x = 1  #@param {type:\"number\", placeholder: 3}", "line 1:", "placeholder"},
        {"x = 1  #@param [1, 2,, 3]", "line 1:", "dropdown list"},
        {"x = 1  #@param {type:\"slider\", max:1e999}", "line 1:", "bad number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fm_form *f = (fm_form *)1;
        mg_error err = {{0}, {0}};
        int rc = fm_form_parse(cases[i].code, &f, &err);
        if (rc != -1) fprintf(stderr, "  case %zu parsed: %s\n", i, cases[i].code);
        ASSERT_EQ(rc, -1);
        ASSERT(f == NULL);
        ASSERT_STR_EQ(err.ename, "SyntaxError");
        if (strncmp(err.evalue, cases[i].line, strlen(cases[i].line)) ||
            !strstr(err.evalue, cases[i].words))
            fprintf(stderr, "  case %zu: got \"%s\"\n", i, err.evalue);
        ASSERT(strncmp(err.evalue, cases[i].line, strlen(cases[i].line)) == 0);
        ASSERT_STR_CONTAINS(err.evalue, cases[i].words);
    }
}

/* Random bytes and random mixes of annotation fragments: never a crash, always a
 * clean answer (0, or -1 with a SyntaxError/MemoryError naming a line). */
T_TEST(fuzz_does_not_crash)
{
    static const char *frags[] = {
        "#@param",    "# @param",    "#@title", "#@markdown", "x = ",     "'",     "\"",
        "{",          "}",           "[",       "]",          ":",        ",",     "type",
        "\"slider\"", "min",         "1e5",     "-",          "\\",       "\\u12", "\n",
        "\r\n",       "allow-input", "true",    "\xff",       "\xe2\x82", "=",     "#",
        " ",          "raw",         "'date'",  "0.5",        "%",        "!"};
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    char buf[512];
    int ok = 0, errors = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = 0;
        int len = 1 + (int)(seed % 40);
        for (int k = 0; k < len && n < sizeof buf - 32; k++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            if ((seed >> 60) < 4) { /* a raw byte */
                buf[n++] = (char)(1 + (seed >> 32) % 255);
            } else {
                const char *fr = frags[(seed >> 33) % (sizeof frags / sizeof frags[0])];
                size_t fl = strlen(fr);
                memcpy(buf + n, fr, fl);
                n += fl;
            }
        }
        buf[n] = '\0';
        fm_form *f = NULL;
        mg_error err = {{0}, {0}};
        int rc = fm_form_parse(buf, &f, &err);
        if (rc == 0) {
            ok++;
            fm_form_destroy(f);
        } else {
            errors++;
            ASSERT_EQ(rc, -1);
            ASSERT(f == NULL);
            ASSERT_STR_CONTAINS(err.evalue, "line ");
        }
    }
    ASSERT(ok > 100);
    ASSERT(errors > 100);
}

T_TEST(size_limit)
{
    size_t n = 1001 * 40;
    char *code = malloc(n + 1), *p = code;
    ASSERT(code != NULL);
    for (int i = 0; i < 1001; i++) p += sprintf(p, "v%d = %d  #@param {type:\"integer\"}\n", i, i);
    fm_form *f = NULL;
    mg_error err = {{0}, {0}};
    int rc = fm_form_parse(code, &f, &err);
    free(code);
    ASSERT_EQ(rc, -1);
    ASSERT_STR_CONTAINS(err.evalue, "line 1001: a form holds at most 1000");
}

int main(void)
{
    T_RUN(design_example);
    T_RUN(every_kind_both_spellings);
    T_RUN(details);
    T_RUN(malformed_names_the_line);
    T_RUN(fuzz_does_not_crash);
    T_RUN(size_limit);
    return T_EXIT();
}
