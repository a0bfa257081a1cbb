/* test_lang_fuzz.c - hostile input: a few hundred malformed cells (random bytes,
 * truncations of valid cells, deep nesting, huge literals) must each end in a clean
 * error or a result, never a crash; the engine stays usable afterwards. Also
 * is_complete/complete/inspect on the same inputs. Deterministic (fixed seed). */
#include "lang_util.h"
#include "t.h"

static const char *const seeds[] = {
    "a = [1, 2, {'k': (3, 4)}]\nb = a[2]['k'][-1] ** 2\nprint(f'{b!r}', sep='')",
    "x = 'it\\'s' + \"\\u00e9\" * 3\n%env X=$x\n!echo {x}",
    "d = {}\nd['a'] = list(range(10))[2:8]\nd['a'].append(-1)\nd",
    "%%time\ny = sum(range(10))\n",
    "lr = 0.001 #@param {type:\"number\"}\nepochs = 5 #@param {type:\"slider\", min:1, max:9}",
};

static unsigned rng = 12345;
static unsigned next(void) { return rng = rng * 1103515245u + 12345u, (rng >> 8) & 0xffffff; }

static int check_one(kl_engine *e, const char *code, int *crashed_never)
{
    capture cap;
    mg_out o = capture_out(&cap);
    kl_error err;
    int rc = kl_engine_execute(e, code, &o, NULL, &err);
    /* bytes that are not UTF-8 are always refused as a SyntaxError */
    json_t *as_json = json_string(code);
    if (!as_json && (rc == 0 || strcmp(err.ename, "SyntaxError"))) *crashed_never = 0;
    json_decref(as_json);
    if (rc < 0) {
        /* an error always has a name and a traceback array */
        if (!err.ename[0] || !json_is_array(err.traceback)) *crashed_never = 0;
        /* every traceback line is valid JSON text (UTF-8) */
        size_t i;
        json_t *x;
        json_array_foreach(err.traceback, i, x) if (!json_is_string(x)) *crashed_never = 0;
        json_t *ev = json_string(err.evalue);
        if (!ev) *crashed_never = 0;
        json_decref(ev);
    }
    kl_error_deinit(&err);
    const char *ind;
    kl_engine_is_complete(e, code, &ind);
    json_decref(kl_engine_complete(e, code, (int)(next() % 40)));
    json_decref(kl_engine_inspect(e, code, (int)(next() % 40), 0));
    return rc;
}

T_TEST(malformed_inputs_never_crash)
{
    atomic_int intr = 0;
    kl_engine *e = kl_engine_create(&intr);
    int ok = 1, n = 0, errors = 0;
    char buf[512];
    /* random bytes, biased towards the language's punctuation */
    static const char alphabet[] =
        "()[]{}'\"\\#%!$?:;,.=+-*/<>&|^~ \n\tabcxyz0123456789_f\xc3\xa9\xff";
    for (int k = 0; k < 300; k++, n++) {
        size_t len = next() % (sizeof buf - 1);
        for (size_t i = 0; i < len; i++)
            buf[i] = k % 3 == 0 ? (char)(next() & 0xff) : alphabet[next() % (sizeof alphabet - 1)];
        buf[len] = 0;
        errors += check_one(e, buf, &ok) < 0;
    }
    /* random text is almost never a valid cell: each of those must be an error */
    ASSERT(errors > 250);
    /* every prefix of valid cells */
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++)
        for (size_t cut = 0; cut <= strlen(seeds[s]); cut++, n++) {
            snprintf(buf, sizeof buf, "%.*s", (int)cut, seeds[s]);
            check_one(e, buf, &ok);
        }
    ASSERT(ok);
    ASSERT(n > 400);
    kl_engine_destroy(e);
}

T_TEST(deep_and_huge_inputs)
{
    atomic_int intr = 0;
    kl_engine *e = kl_engine_create(&intr);
    static char big[200000];
    int ok = 1;
    const char *units[] = {"(", "[", "-", "not ", "{'a':", "1+", "2**", "f'{"};
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        size_t k = 0, ul = strlen(units[u]);
        while (k + ul < sizeof big - 2) {
            memcpy(big + k, units[u], ul);
            k += ul;
        }
        big[k++] = '1';
        big[k] = 0;
        check_one(e, big, &ok);
    }
    /* long flat chains are fine up to the nesting limit, then a clean error */
    strcpy(big, "x = 1");
    for (int i = 0; i < 5000; i++) strcat(big, "+1");
    capture cap;
    mg_out o = capture_out(&cap);
    kl_error err;
    ASSERT_EQ(kl_engine_execute(e, big, &o, NULL, &err), -1);
    ASSERT_STR_EQ(err.ename, "SyntaxError");
    kl_error_deinit(&err);
    /* values nested through variables stop at the limit too */
    ASSERT_EQ(kl_engine_execute(e, "a = []", &o, NULL, &err), 0);
    int failed = 0;
    for (int i = 0; i < 300 && !failed; i++) {
        failed = kl_engine_execute(e, "a = [a]", &o, NULL, &err) < 0;
        if (failed) {
            ASSERT_STR_EQ(err.ename, "RecursionError");
            kl_error_deinit(&err);
        }
    }
    ASSERT(failed);
    ASSERT_EQ(kl_engine_execute(e, "z = 1 + 1", &o, NULL, &err), 0);
    /* interpolation cannot blow a big value up without bound */
    ASSERT_EQ(kl_engine_execute(e, "big = 'x' * 10000000\n%env KILN_BIG=$big$big", &o, NULL, &err),
              -1);
    ASSERT_STR_EQ(err.ename, "MemoryError");
    ASSERT_STR_CONTAINS(err.evalue, "expansion");
    kl_error_deinit(&err);
    ASSERT(ok);
    kl_engine_destroy(e);
}

/* inputs that once produced invalid output; each must give a clean error */
T_TEST(regressions)
{
    static const char *const cases[] = {
        /* a forms message quoted user text cut inside a UTF-8 character */
        "[ n\x0alr = 0.0$01 #@param nt= 'i(\xde\x96t\x5c"
        "e(10)s' x*2), int(\xde\x96"
        "e(10)s' x*\x01's@=*=*ode",
    };
    atomic_int intr = 0;
    kl_engine *e = kl_engine_create(&intr);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        capture cap;
        mg_out o = capture_out(&cap);
        kl_error err;
        ASSERT_EQ(kl_engine_execute(e, cases[i], &o, NULL, &err), -1);
        json_t *ev = json_string(err.evalue);
        ASSERT(ev != NULL);
        json_decref(ev);
        kl_error_deinit(&err);
    }
    kl_engine_destroy(e);
}

int main(void)
{
    T_RUN(malformed_inputs_never_crash);
    T_RUN(deep_and_huge_inputs);
    T_RUN(regressions);
    return T_EXIT();
}
