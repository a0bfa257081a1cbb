/* test_train_options.c - the %train option table drives everything about an option:
 * every row parses, is bounded with the one message, round-trips through the
 * checkpoint JSON (which checks the same bounds), shows in help with its default,
 * completes, is documented in docs/training-magics.md, and - when run-defining - is
 * what makes a run directory's run differ (and only then). No training here. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "mg_run.h"
#include "t.h"

static const mg_command *train_cmd(void) { return mg_registry_find("train"); }

/* A valid value of row r that is not its default, as typed. */
static void some_value(const mg_train_option *r, char *buf, size_t n)
{
    /* the rows whose text has a syntax of its own (r->check) */
    static const char *const texts[][2] = {{"--augment", "crop:4,flip,cutout:8"},
                                           {"--normalize", "(0.1307,), (0.3081,)"},
                                           {"--freeze", "layer1,until:fc"},
                                           {"--lr-mult", "layer1=0.1,fc=2"}};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (!strcmp(r->opt.name, texts[i][0])) {
            snprintf(buf, n, "'%s'", texts[i][1]);
            return;
        }
    if (r->check) { /* a new row with a check: add its value above */
        snprintf(buf, n, "?");
        return;
    }
    const char *c = r->opt.choices;
    if (c) { /* the last choice */
        snprintf(buf, n, "%s", strrchr(c, '|') ? strrchr(c, '|') + 1 : c);
        return;
    }
    switch (r->store) {
    case MG_TO_INT: snprintf(buf, n, "%d", (int)r->lo + (r->lo + 1 == r->def ? 2 : 1)); break;
    case MG_TO_U64: snprintf(buf, n, "7"); break;
    case MG_TO_REAL:
        snprintf(buf, n, "%g", isinf(r->hi) ? r->lo + 0.5 : (r->lo + r->hi) / 4);
        break;
    case MG_TO_DURATION: snprintf(buf, n, "90s"); break;
    case MG_TO_EVERY: snprintf(buf, n, "2epochs"); break;
    case MG_TO_FLAG: buf[0] = 0; break;
    default: snprintf(buf, n, "x%s", r->def_text ? r->def_text : ""); break;
    }
}

/* Parses "%train ARGS" into o (defaults first); 0 or -1 with err. */
static int parse(const char *line, mg_run_opts *o, mg_error *err)
{
    mg_args a;
    mg_run_opts_default(o);
    if (mg_args_parse(train_cmd(), line, NULL, &a, err) < 0) return -1;
    int rc = mg_run_opts_from_args(o, &a, err);
    mg_args_deinit(&a);
    return rc;
}

static int typed(const mg_train_option *r, mg_run_opts *o, mg_error *err)
{
    char v[64], line[160];
    some_value(r, v, sizeof v);
    snprintf(line, sizeof line, "%s %s", r->opt.name, v);
    return parse(line, o, err);
}

T_TEST(test_every_row_parses_and_round_trips)
{
    int rows = 0;
    for (const mg_train_option *r = mg_train_table; r->opt.name; r++, rows++) {
        mg_run_opts o, back, def;
        mg_error err = {0};
        mg_run_opts_default(&def);
        ASSERT_EQ(typed(r, &o, &err), 0);
        char a[256], b[256], d[256];
        mg_train_option_format(r, &o, a, sizeof a);
        mg_train_option_format(r, &def, d, sizeof d);
        if (strcmp(a, d) == 0) fprintf(stderr, "%s kept its default %s\n", r->opt.name, a);
        ASSERT(strcmp(a, d) != 0); /* the value typed landed in the row's field */
        if (!r->key) continue;
        json_t *j = mg_run_opts_to_json(&o);
        ASSERT(j != NULL);
        ASSERT(json_object_get(j, r->key) != NULL);
        mg_run_opts_default(&back);
        ASSERT_EQ(mg_run_opts_from_json(&back, j, &err), 0);
        mg_train_option_format(r, &back, b, sizeof b);
        ASSERT_STR_EQ(b, a);
        json_decref(j);
    }
    ASSERT(rows >= 20);
}

T_TEST(test_one_bound_one_message)
{
    mg_run_opts o;
    mg_error err = {0};
    ASSERT_EQ(parse("--epochs -1", &o, &err), -1);
    ASSERT_STR_EQ(err.evalue, "%train: --epochs must be in 1..100000, got -1");
    ASSERT_EQ(parse("--lr 0", &o, &err), -1);
    ASSERT_STR_EQ(err.evalue, "%train: --lr must be in (0, 100], got 0");
    ASSERT_EQ(parse("--momentum 1", &o, &err), -1);
    ASSERT_STR_EQ(err.evalue, "%train: --momentum must be in [0, 1), got 1");
    ASSERT_EQ(parse("--seed -3", &o, &err), -1);
    ASSERT_STR_EQ(err.evalue, "%train: --seed must be >= 0, got -3");
    ASSERT_EQ(parse("--lr 100 --momentum 0 --weight-decay 1 --batch 65536", &o, &err), 0);
    /* every bounded number: just past each end is refused, with the option's name, by
     * %train and by a checkpoint's hyperparameters alike */
    for (const mg_train_option *r = mg_train_table; r->opt.name; r++) {
        if (!(r->lo < r->hi) || r->store == MG_TO_DURATION) continue;
        double past[2] = {r->lo - 1, r->hi + 1};
        for (int k = 0; k < 2; k++) {
            if (isinf(past[k]) || (r->store == MG_TO_U64 && past[k] < 0)) continue;
            if (past[k] == r->def) continue; /* the default means "not given" */
            char line[128];
            snprintf(line, sizeof line, "%s %.17g", r->opt.name, past[k]);
            if (r->store != MG_TO_REAL)
                snprintf(line, sizeof line, "%s %.0f", r->opt.name, past[k]);
            ASSERT_EQ(parse(line, &o, &err), -1);
            ASSERT_STR_CONTAINS(err.evalue, r->opt.name);
            ASSERT_STR_CONTAINS(err.evalue, "must be");
            mg_run_opts_default(&o);
            json_t *j = mg_run_opts_to_json(&o);
            json_object_set_new(j, r->key,
                                r->store == MG_TO_REAL ? json_real(past[k])
                                                       : json_integer((json_int_t)past[k]));
            ASSERT_EQ(mg_run_opts_from_json(&o, j, &err), -1);
            ASSERT(!strncmp(err.evalue, "hyperparameters: ", 17));
            ASSERT_STR_CONTAINS(err.evalue, r->opt.name);
            json_decref(j);
        }
    }
}

T_TEST(test_help_and_completion_list_every_row)
{
    char *help = mg_command_help(train_cmd());
    ASSERT(help != NULL);
    ASSERT_STR_CONTAINS(help, "learning rate (0.001)");
    ASSERT_STR_CONTAINS(help, "SGD momentum (0.9 with sgd)");
    ASSERT_STR_CONTAINS(help, "--resume {auto,never,must}");
    ASSERT_STR_CONTAINS(help, "optimiser (adam)");
    ASSERT_STR_CONTAINS(help, "(a fraction: %dataset --val F)"); /* --val is not a count only */
    for (const mg_train_option *r = mg_train_table; r->opt.name; r++) {
        char want[64];
        snprintf(want, sizeof want, "\n  %s", r->opt.name);
        ASSERT_STR_CONTAINS(help, want);
        char def[128];
        const char *d = mg_train_option_default(&r->opt, def, sizeof def);
        if (d && *d) {
            snprintf(want, sizeof want, "(%s)\n", d);
            ASSERT_STR_CONTAINS(help, want);
        }
    }
    for (char *l = help; *l;) { /* a notebook's width */
        size_t len = strcspn(l, "\n");
        ASSERT(len <= 90);
        l += len + (l[len] != 0);
    }
    free(help);
}

T_TEST(test_docs_list_every_row)
{
    FILE *f = fopen(KILN_DOCS "/training-magics.md", "r");
    ASSERT(f != NULL);
    static char text[1 << 18];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    const char *table = strstr(text, "## Options (`%train`)");
    ASSERT(table != NULL);
    for (const mg_train_option *r = mg_train_table; table && r->opt.name; r++) {
        char want[64];
        snprintf(want, sizeof want, "`%s", r->opt.name);
        if (!strstr(table, want))
            fprintf(stderr, "docs/training-magics.md lacks %s\n", r->opt.name);
        ASSERT(strstr(table, want) != NULL);
    }
}

T_TEST(test_run_defining_rows_alone_differ)
{
    for (const mg_train_option *r = mg_train_table; r->opt.name; r++) {
        mg_run_opts o, c;
        mg_error err = {0};
        mg_run_opts_default(&c);
        ASSERT_EQ(typed(r, &o, &err), 0);
        char buf[512] = "";
        int d = mg_run_opts_differences(&o, &c, buf, sizeof buf);
        int defining = (r->flags & MG_TO_DEFINING) && !(r->flags & MG_TO_DATA) &&
                       !(r->flags & MG_TO_AT_LEAST) && !r->effective;
        if (defining) {
            ASSERT_EQ(d, 1);
            char want[64];
            snprintf(want, sizeof want, " %s ", r->opt.name);
            ASSERT_STR_CONTAINS(buf, want);
            ASSERT_STR_CONTAINS(buf, "(checkpoint ");
        } else if (!r->effective && !(r->flags & MG_TO_AT_LEAST)) {
            ASSERT_EQ(d, 0);
        }
    }
    mg_run_opts o, c;
    mg_error err = {0};
    char buf[512] = "";
    ASSERT_EQ(parse("--epochs 5", &c, &err), 0);
    ASSERT_EQ(parse("--epochs 9", &o, &err), 0); /* longer: the same run */
    ASSERT_EQ(mg_run_opts_differences(&o, &c, buf, sizeof buf), 0);
    ASSERT_EQ(parse("--epochs 3", &o, &err), 0);
    ASSERT_EQ(mg_run_opts_differences(&o, &c, buf, sizeof buf), 1);
    ASSERT_STR_EQ(buf, " --epochs 3 (checkpoint 5)");
    /* momentum: what acts; sgd's 0.9 when not given, nothing for adam */
    ASSERT_EQ(parse("--optimizer sgd", &c, &err), 0);
    ASSERT_EQ(parse("--optimizer sgd --momentum 0.9", &o, &err), 0);
    buf[0] = 0;
    ASSERT_EQ(mg_run_opts_differences(&o, &c, buf, sizeof buf), 0);
    ASSERT_EQ(parse("--optimizer sgd --momentum 0.5", &o, &err), 0);
    ASSERT_EQ(mg_run_opts_differences(&o, &c, buf, sizeof buf), 1);
    ASSERT_STR_EQ(buf, " --momentum 0.5 (checkpoint 0.9)");
    ASSERT_EQ(parse("--momentum 0.5", &o, &err), 0); /* adam: momentum does not act */
    ASSERT_EQ(parse("", &c, &err), 0);
    buf[0] = 0;
    ASSERT_EQ(mg_run_opts_differences(&o, &c, buf, sizeof buf), 0);
}

int main(void)
{
    T_RUN(test_every_row_parses_and_round_trips);
    T_RUN(test_one_bound_one_message);
    T_RUN(test_help_and_completion_list_every_row);
    T_RUN(test_docs_list_every_row);
    T_RUN(test_run_defining_rows_alone_differ);
    return T_EXIT();
}
