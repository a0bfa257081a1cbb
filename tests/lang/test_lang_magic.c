/* test_lang_magic.c - the shared option parser, $name/{expr} interpolation, magic
 * dispatch and help, the convenience magics, and is_complete / complete / inspect. */
#include <sys/stat.h>
#include <unistd.h>

#include "lang_util.h"
#include "rt_error.h"
#include "t.h"

static atomic_int intr;

static const mg_option opts[] = {
    {"--epochs", MG_OPT_INT, "N", "number of epochs", NULL},
    {"--lr", MG_OPT_FLOAT, "LR", "learning rate", NULL},
    {"--optimizer", MG_OPT_CHOICE, "NAME", "optimizer", "adam|sgd|adamw"},
    {"--dry-run", MG_OPT_FLAG, NULL, "do nothing", NULL},
    {"--name", MG_OPT_STRING, "S", "a name", NULL},
    {NULL, 0, NULL, NULL, NULL},
};
static int noop(mg_ctx *c, const mg_args *a, mg_error *e)
{
    (void)c;
    (void)a;
    (void)e;
    return 0;
}
static const mg_command fake = {
    "train", "train a model", "Usage: %train [MODEL] [options]", MG_LINE, opts, noop, NULL, 0,
    NULL};

T_TEST(args_parse_ok)
{
    mg_args a;
    mg_error err = {{0}, {0}};
    ASSERT_EQ(mg_args_parse(&fake,
                            "cnn --epochs 3 --lr=0.5 --optimizer sgd --dry-run "
                            "--name 'my run' \"x y\" -5 -- --literal",
                            NULL, &a, &err),
              0);
    ASSERT_EQ(a.npos, 4);
    ASSERT_STR_EQ(a.pos[0], "cnn");
    ASSERT_STR_EQ(a.pos[1], "x y");
    ASSERT_STR_EQ(a.pos[2], "-5");
    ASSERT_STR_EQ(a.pos[3], "--literal");
    long ep;
    double lr;
    ASSERT_EQ(mg_args_int(&a, "--epochs", 1, &ep, &err), 0);
    ASSERT_EQ(ep, 3);
    ASSERT_EQ(mg_args_float(&a, "--lr", 0, &lr, &err), 0);
    ASSERT_NEAR(lr, 0.5, 0);
    ASSERT_STR_EQ(mg_args_get(&a, "--optimizer"), "sgd");
    ASSERT_STR_EQ(mg_args_get(&a, "--name"), "my run");
    ASSERT(mg_args_has(&a, "--dry-run"));
    ASSERT(!mg_args_has(&a, "--missing"));
    ASSERT_EQ(mg_args_int(&a, "--absent", 7, &ep, &err), 0);
    ASSERT_EQ(ep, 7);
    mg_args_deinit(&a);
}

/* One rule: a line that cannot be read is a UsageError, a value an option cannot
 * take a ValueError (as --epochs -1 is). */
#define EXPECT_ARGS_ERR_AS(want_, line, part)                             \
    do {                                                                  \
        mg_args margs_;                                                   \
        mg_error merr_ = {{0}, {0}};                                      \
        ASSERT_EQ(mg_args_parse(&fake, line, NULL, &margs_, &merr_), -1); \
        ASSERT_STR_EQ(merr_.ename, want_);                                \
        ASSERT_STR_CONTAINS(merr_.evalue, "%train");                      \
        ASSERT_STR_CONTAINS(merr_.evalue, part);                          \
    } while (0)
#define EXPECT_ARGS_ERR(line, part) EXPECT_ARGS_ERR_AS("UsageError", line, part)
#define EXPECT_VALUE_ERR(line, part) EXPECT_ARGS_ERR_AS("ValueError", line, part)

T_TEST(args_parse_errors)
{
    EXPECT_ARGS_ERR("--epoch 3", "unknown option --epoch (did you mean --epochs?)");
    EXPECT_ARGS_ERR("--bogus", "unknown option --bogus");
    EXPECT_ARGS_ERR("--epochs", "option --epochs needs a value N");
    EXPECT_VALUE_ERR("--epochs three", "option --epochs expects an integer, got 'three'");
    EXPECT_VALUE_ERR("--lr fast", "option --lr expects a number, got 'fast'");
    EXPECT_VALUE_ERR("--lr nan", "expects a number");
    EXPECT_VALUE_ERR("--optimizer rmsprop", "must be one of {adam,sgd,adamw}, got 'rmsprop'");
    EXPECT_ARGS_ERR("--dry-run=yes", "option --dry-run takes no value");
    EXPECT_ARGS_ERR("--name 'unterminated", "unterminated single quote");
    ASSERT(mg_args_wants_help("cnn --help"));
    ASSERT(!mg_args_wants_help("'--help'x"));
    char *help = mg_command_help(&fake);
    ASSERT_STR_CONTAINS(help, "Usage: %train");
    ASSERT_STR_CONTAINS(help, "--optimizer {adam,sgd,adamw}");
    ASSERT_STR_CONTAINS(help, "--epochs N");
    free(help);
}

T_TEST(interpolation_and_shell_vars)
{
    kl_engine *e = kl_engine_create(&intr);
    run r;
    run_cell(e, "n = 3\nname = 'a b'\n!echo $n {n * 2} '$$n' {{x}} '$undefined_var' '{1 +}'", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_EQ(r.cap.out, "3 6 $n {x} $undefined_var {1 +}\n");
    run_cell(e, "%env KILN_TEST_VAR=$n-{name}", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_EQ(getenv("KILN_TEST_VAR"), "3-a b");
    kl_engine_destroy(e);
}

/* An interpolated value is one value: not re-split into words or options, in a shell
 * line (quoted for sh, whatever quotes surround it) or in a magic's options; $!name and
 * {!expr} splice raw text into a shell line for those who want that. */
T_TEST(interpolated_value_is_one_value)
{
    kl_engine *e = kl_engine_create(&intr);
    run r;
    run_cell(e,
             "evil = 'x; echo INJECTED > /dev/stderr'\n"
             "q = \"it's \\\"q\\\" $HOME `id` \\\\\"\n"
             "!echo $evil\n!echo {evil}\n!echo \"[$q]\" '[$q]' [$q]",
             &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT(strstr(r.cap.err, "INJECTED") == NULL); /* the ; did not start a command */
    ASSERT_STR_EQ(r.cap.out, "x; echo INJECTED > /dev/stderr\n"
                             "x; echo INJECTED > /dev/stderr\n"
                             "[it's \"q\" $HOME `id` \\] [it's \"q\" $HOME `id` \\] "
                             "[it's \"q\" $HOME `id` \\]\n");
    run_cell(e, "words = 'one two'\n!printf '<%s>' $!words {!words} $words", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_EQ(r.cap.out, "<one><two><one><two><one two>");
    /* an option smuggled in a value stays part of that value */
    run_cell(e, "e = '2 --lr fast'\n%train cnn --epochs $e", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_CONTAINS(r.err.evalue, "--epochs expects an integer, got '2 --lr fast'");
    run_cell(e, "e = \"2' --lr 'fast\"\n%train cnn --epochs \"{e}\"", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_CONTAINS(r.err.evalue, "got '2' --lr 'fast'");
    kl_engine_destroy(e);
}

/* An undefined name in a magic's arguments: {expr} is a NameError naming the magic; an
 * undefined $name stays as written (as in IPython) and an option that then fails to
 * parse asks whether it is defined (it said only "expects a number, got '{lr}'"). */
T_TEST(undefined_names_in_magic_args)
{
    kl_engine *e = kl_engine_create(&intr);
    run r;
    run_cell(e, "%train cnn --lr {lr}", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_EQ(r.err.ename, "NameError");
    ASSERT_STR_EQ(r.err.evalue, "name 'lr' is not defined (in %train's arguments)");
    run_cell(e, "%train cnn --lr $lr", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_EQ(r.err.ename, "ValueError");
    ASSERT_STR_CONTAINS(r.err.evalue, "expects a number, got '$lr' (is `$lr` defined?)");
    /* a bad value that is not the undefined name gets no hint */
    run_cell(e, "%train cnn --lr fast --name $nope", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT(strstr(r.err.evalue, "defined?") == NULL);
    /* a {expr} failing otherwise is still left as written; shell lines keep IPython's rule */
    run_cell(e, "%env KILN_TEST_VAR2={1 +}", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_EQ(getenv("KILN_TEST_VAR2"), "{1 +}");
    run_cell(e, "!echo {lr}", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_CONTAINS(r.cap.out, "{lr}");
    kl_engine_destroy(e);
}

T_TEST(convenience_magics)
{
    kl_engine *e = kl_engine_create(&intr);
    run r;
    run_cell(e, "%lsmagic", &r);
    ASSERT_STR_CONTAINS(r.cap.out, "%time");
    ASSERT_STR_CONTAINS(r.cap.out, "%%time");
    ASSERT_STR_CONTAINS(r.cap.out, "%env");
    run_cell(e, "%who", &r);
    ASSERT_STR_EQ(r.cap.out, "Interactive namespace is empty.\n");
    run_cell(e, "b = 1\na = 'x'\n_hidden = 2\n%who", &r);
    ASSERT_STR_EQ(r.cap.out, "a\tb\n");
    run_cell(e, "%who str", &r);
    ASSERT_STR_EQ(r.cap.out, "a\n");
    run_cell(e, "%env KILN_T2 hello\n%env KILN_T2", &r);
    ASSERT_STR_EQ(r.cap.out, "env: KILN_T2=hello\nhello\n");
    run_cell(e, "%env NOPE_NOT_SET_X", &r);
    ASSERT_EQ(r.rc, -1);
    char *old = getcwd(NULL, 0);
    run_cell(e, "%cd /tmp\n%pwd", &r);
    ASSERT_STR_EQ(r.cap.out, "/tmp\n/tmp\n");
    run_cell(e, "%cd -", &r);
    ASSERT_STR_CONTAINS(r.cap.out, old);
    run_cell(e, "%cd /no/such/dir", &r);
    ASSERT_STR_EQ(r.err.ename, "FileNotFoundError");
    free(old);
    run_cell(e, "%time q = sum(range(100))\nq", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_CONTAINS(r.cap.out, "CPU times: user");
    ASSERT_STR_CONTAINS(r.cap.out, "Wall time:");
    ASSERT_STR_EQ(r.cap.result, "4950");
    run_cell(e, "%%time\nz = 2\nprint('in body', z)", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_CONTAINS(r.cap.out, "in body 2\nCPU times");
    run_cell(e, "%%time\nok = 1\nzz = undefined_thing", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_EQ(r.err.ename, "NameError");
    ASSERT_STR_CONTAINS(r.tb, "Cell line 3, column 6"); /* the body's line in the cell */
    ASSERT_STR_CONTAINS(r.tb, "zz = undefined_thing");
    run_cell(e, "%%nosuch\nbody", &r);
    ASSERT_STR_CONTAINS(r.err.evalue, "Cell magic `%%nosuch` not found");
    run_cell(e, "%%lsmagic\nbody", &r);
    ASSERT_STR_CONTAINS(r.err.evalue, "line magic, not a cell magic");
    run_cell(e, "%who --bogus", &r);
    ASSERT_STR_CONTAINS(r.err.evalue, "%who: unknown option --bogus");
    kl_engine_destroy(e);
}

/* %env never prints a credential into the notebook: not in the list, not asked for by
 * name, not echoed when set, and not the user:password@ of a URL. */
T_TEST(env_hides_secrets)
{
    kl_engine *e = kl_engine_create(&intr);
    run r;
    static const char *secret_names[] = {"AWS_SECRET_ACCESS_KEY",    "AWS_SESSION_TOKEN",
                                         "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
                                         "KILN_TEST_API_KEY",        "kiln_test_passwd"};
    for (size_t i = 0; i < sizeof secret_names / sizeof *secret_names; i++)
        setenv(secret_names[i], "s3cr3t-VALUE", 1);
    setenv("KILN_TEST_DB_URL", "postgres://alice:pw-in-url@db.example:5432/x", 1);
    setenv("KILN_TEST_PLAIN", "plain-value", 1);
    run_cell(e, "%env", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT(strstr(r.cap.out, "s3cr3t-VALUE") == NULL);
    ASSERT(strstr(r.cap.out, "pw-in-url") == NULL);
    ASSERT_STR_CONTAINS(r.cap.out, "AWS_SECRET_ACCESS_KEY=<hidden>\n");
    ASSERT_STR_CONTAINS(r.cap.out, "kiln_test_passwd=<hidden>\n");
    ASSERT_STR_CONTAINS(r.cap.out, "KILN_TEST_DB_URL=postgres://db.example:5432/x\n");
    ASSERT_STR_CONTAINS(r.cap.out, "KILN_TEST_PLAIN=plain-value\n");
    run_cell(e, "%env AWS_SESSION_TOKEN", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT(strstr(r.cap.out, "s3cr3t-VALUE") == NULL);
    ASSERT_STR_CONTAINS(r.cap.out, "<hidden> (set, 12 characters");
    run_cell(e, "%env KILN_TEST_PLAIN", &r);
    ASSERT_STR_EQ(r.cap.out, "plain-value\n");
    run_cell(e, "%env MLFLOW_TRACKING_TOKEN=fresh-t0ken\n%env KILN_TEST_DB_URL http://u:p@h/", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_EQ(r.cap.out,
                  "env: MLFLOW_TRACKING_TOKEN=<hidden>\nenv: KILN_TEST_DB_URL=http://h/\n");
    ASSERT_STR_EQ(getenv("MLFLOW_TRACKING_TOKEN"), "fresh-t0ken"); /* set all the same */
    ASSERT_STR_EQ(getenv("KILN_TEST_DB_URL"), "http://u:p@h/");
    for (size_t i = 0; i < sizeof secret_names / sizeof *secret_names; i++)
        unsetenv(secret_names[i]);
    unsetenv("KILN_TEST_DB_URL");
    unsetenv("KILN_TEST_PLAIN");
    kl_engine_destroy(e);
}

/* The messages a new user reads after a typo: a %%model body error names the cell
 * line, and the traceback points at it; a misspelt layer or data set name gets the
 * nearest real one; the line form says %model, not %%model. */
T_TEST(typo_messages)
{
    kl_engine *e = kl_engine_create(&intr);
    run r = {0};
    run_cell(e,
             "%%model m --input 1x28x28 --classes 10\nconv2d 8 3\nmaxpoool 2\nflatten\n"
             "dense 10",
             &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_CONTAINS(r.err.evalue, "%%model m: cell line 3: unknown layer 'maxpoool'");
    ASSERT_STR_CONTAINS(r.err.evalue, "did you mean 'maxpool'?");
    ASSERT_STR_CONTAINS(r.tb, "Cell line 3");
    run_cell(e, "%%model m --input 1x28x28 --classes 10\nconv2d 8 3\nflaten\ndense 10", &r);
    ASSERT_STR_CONTAINS(r.err.evalue, "did you mean 'flatten'?");
    run_cell(e, "%model r2 resnet18", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_CONTAINS(r.err.evalue, "%model r2:");
    ASSERT(strstr(r.err.evalue, "%%model") == NULL);
    run_cell(e, "%dataset fashion-mnst", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_CONTAINS(r.err.evalue, "did you mean fashion-mnist?");
    kl_engine_destroy(e);
}

T_TEST(help)
{
    kl_engine *e = kl_engine_create(&intr);
    run r;
    run_cell(e, "%env --help", &r);
    ASSERT_STR_CONTAINS(r.cap.out, "Usage: %env");
    run_cell(e, "%time?", &r);
    ASSERT_STR_CONTAINS(r.cap.out, "Usage: %time");
    run_cell(e, "%%time?", &r);
    ASSERT_STR_CONTAINS(r.cap.out, "Usage: %time");
    run_cell(e, "lr = 0.5\nlr?", &r);
    ASSERT_STR_CONTAINS(r.cap.out, "Type:  float");
    ASSERT_STR_CONTAINS(r.cap.out, "Value: 0.5");
    run_cell(e, "?len", &r);
    ASSERT_STR_CONTAINS(r.cap.out, "len(x)");
    run_cell(e, "nothing_here?", &r);
    ASSERT_STR_CONTAINS(r.cap.out, "Object `nothing_here` not found.");
    kl_engine_destroy(e);
}

static int has_match(json_t *r, const char *m)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(r, "matches"), i,
                       x) if (!strcmp(json_string_value(x), m)) return 1;
    return 0;
}

T_TEST(is_complete_complete_inspect)
{
    kl_engine *e = kl_engine_create(&intr);
    const char *ind;
    ASSERT_STR_EQ(kl_engine_is_complete(e, "a = 1", &ind), "complete");
    ASSERT_STR_EQ(kl_engine_is_complete(e, "a = [1,", &ind), "incomplete");
    ASSERT_STR_EQ(kl_engine_is_complete(e, "s = '''abc", &ind), "incomplete");
    ASSERT_STR_EQ(kl_engine_is_complete(e, "a = 1 + \\", &ind), "incomplete");
    ASSERT_STR_EQ(kl_engine_is_complete(e, "%%time\nx = 1", &ind), "incomplete");
    ASSERT_STR_EQ(kl_engine_is_complete(e, "a = = 1", &ind), "invalid");
    ASSERT_STR_EQ(kl_engine_is_complete(e, "a = 1)", &ind), "invalid");
    ASSERT_STR_EQ(kl_engine_is_complete(e, "%lsmagic", &ind), "complete");
    run r;
    run_cell(e, "learning_rate = 0.1\nlearn_x = 'abc'", &r);
    json_t *c = kl_engine_complete(e, "%ls", 3);
    ASSERT(has_match(c, "%lsmagic"));
    ASSERT_EQ(json_integer_value(json_object_get(c, "cursor_start")), 0);
    json_decref(c);
    c = kl_engine_complete(e, "%%ti", 4);
    ASSERT(has_match(c, "%%time"));
    json_decref(c);
    c = kl_engine_complete(e, "x = lear", 8);
    ASSERT(has_match(c, "learning_rate"));
    ASSERT(has_match(c, "learn_x"));
    ASSERT_EQ(json_integer_value(json_object_get(c, "cursor_start")), 4);
    json_decref(c);
    c = kl_engine_complete(e, "pri", 3);
    ASSERT(has_match(c, "print"));
    json_decref(c);
    c = kl_engine_complete(e, "learn_x.up", 10);
    ASSERT(has_match(c, "upper"));
    json_decref(c);
    /* methods come from the table the calls use: every completion of "v." runs */
    char code[256];
    run_cell(e, "lst = [1]\ndd = {'k': 'v'}", &r);
    static const char *const values[][2] = {{"learn_x", "8"}, {"lst", "1"}, {"dd", "4"}};
    for (size_t v = 0; v < 3; v++) {
        snprintf(code, sizeof code, "%s.", values[v][0]);
        c = kl_engine_complete(e, code, (int)strlen(code));
        json_t *m = json_object_get(c, "matches");
        ASSERT_EQ((long long)json_array_size(m), atoll(values[v][1]));
        for (size_t k = 0; k < json_array_size(m); k++) {
            char call[128];
            const char *name = json_string_value(json_array_get(m, k));
            snprintf(call, sizeof call, "%s.%s()", values[v][0], name);
            run_cell(e, call, &r);
            if (r.rc) ASSERT(strcmp(r.err.ename, "AttributeError") != 0);
        }
        json_decref(c);
    }
    c = kl_engine_complete(e, "é = lear", 8); /* cursor counts code points */
    ASSERT(has_match(c, "learning_rate"));
    ASSERT_EQ(json_integer_value(json_object_get(c, "cursor_start")), 4);
    json_decref(c);
    c = kl_engine_complete(e, "!echo $lea", 10);
    ASSERT(has_match(c, "$learning_rate"));
    json_decref(c);
    c = kl_engine_complete(e, "!l", 2); /* the command word itself: nothing */
    ASSERT_EQ(json_array_size(json_object_get(c, "matches")), 0);
    json_decref(c);
    json_t *i = kl_engine_inspect(e, "x = learning_rate + 1", 8, 0);
    ASSERT(i != NULL);
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(i, "text/plain")), "Value: 0.1");
    json_decref(i);
    i = kl_engine_inspect(e, "%lsmagic", 3, 0);
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(i, "text/plain")), "Usage: %lsmagic");
    json_decref(i);
    ASSERT(kl_engine_inspect(e, "   ", 1, 0) == NULL);
    ASSERT(kl_engine_inspect(e, "unknown_thing", 3, 0) == NULL);
    kl_engine_destroy(e);
}

/* Every runtime status goes through one table to a Python exception (the errors a
 * magic reports for the runtime); a failure without a status is a RuntimeError, and
 * the message is kept as given. */
T_TEST(status_table)
{
    static const char *const builtins[] = {
        "ValueError",   "MemoryError", "OSError",           "FileNotFoundError",
        "RuntimeError", "SystemError", "KeyboardInterrupt", NULL};
    const struct {
        rt_status s;
        const char *want;
    } cases[] = {
        {RT_OK, "RuntimeError"},          {RT_EINVAL, "ValueError"},
        {RT_ENOMEM, "MemoryError"},       {RT_EIO, "OSError"},
        {RT_EFORMAT, "ValueError"},       {RT_ENOTFOUND, "FileNotFoundError"},
        {RT_ENODEV, "RuntimeError"},      {RT_EDEVICE, "RuntimeError"},
        {RT_EDEVICE_LOST, "SystemError"}, {RT_EINTERRUPTED, "KeyboardInterrupt"},
    };
    ASSERT_EQ(sizeof cases / sizeof *cases, (size_t)RT_EINTERRUPTED + 1); /* all of them */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rt_error re;
        RT_ERR(&re, cases[i].s, "broken %d", (int)i);
        mg_error err;
        ASSERT_EQ(mg_fail_status(&err, &re, "%%x: %s", re.msg), -1);
        ASSERT_STR_EQ(err.ename, cases[i].want);
        ASSERT_STR_EQ(err.ename, rt_status_exception(cases[i].s));
        char want[64];
        snprintf(want, sizeof want, "%%x: broken %d", (int)i);
        ASSERT_STR_EQ(err.evalue, want);
        int builtin = 0;
        for (int k = 0; builtins[k]; k++) builtin |= !strcmp(err.ename, builtins[k]);
        ASSERT(builtin);
    }
    mg_error err;
    ASSERT_EQ(mg_fail_status(&err, NULL, "no status"), -1);
    ASSERT_STR_EQ(err.ename, "RuntimeError");
}

static void only_stream(void *u, const char *name, const char *text, size_t len)
{
    (void)name;
    *(size_t *)u += len;
}

/* A frontend that gives only a stream (as a fuzz target's or a tool's minimal output
 * does): a magic that displays, clears or returns a result must not call through a
 * NULL callback; %html {{{... crashed the engine's fuzz target so. */
T_TEST(an_output_with_only_a_stream_is_enough)
{
    kl_engine *e = kl_engine_create(&intr);
    size_t got = 0;
    mg_out o = {.user = &got, .stream = only_stream};
    static const char *const cells[] = {"%html {{{{{{{{{{{{{{{{",
                                        "%%html\n<b>x</b>\n",
                                        "%html --id s <i>a</i>",
                                        "%html --id s --update <i>b</i>",
                                        "%clear",
                                        "1 + 1",
                                        "print('x')"};
    for (size_t i = 0; i < sizeof cells / sizeof *cells; i++) {
        kl_error err;
        int rc = kl_engine_execute(e, cells[i], &o, NULL, &err);
        if (rc < 0) {
            printf("%s -> %s: %s\n", cells[i], err.ename, err.evalue);
            kl_error_deinit(&err);
        }
    }
    ASSERT(got >= 2); /* print's text came through the one callback there is */
    kl_error err;
    ASSERT_EQ(kl_engine_execute(e, "%html <b>y</b>", NULL, NULL, &err), 0); /* none at all */
    kl_engine_destroy(e);
}

int main(void)
{
    T_RUN(status_table);
    T_RUN(an_output_with_only_a_stream_is_enough);
    T_RUN(args_parse_ok);
    T_RUN(args_parse_errors);
    T_RUN(interpolation_and_shell_vars);
    T_RUN(interpolated_value_is_one_value);
    T_RUN(undefined_names_in_magic_args);
    T_RUN(convenience_magics);
    T_RUN(env_hides_secrets);
    T_RUN(typo_messages);
    T_RUN(help);
    T_RUN(is_complete_complete_inspect);
    return T_EXIT();
}
