/* test_lang_eval.c - the cell language: every construct, Python's repr of the
 * results, and every error with its name, message and line/column. */
#include "lang_util.h"
#include "t.h"

static atomic_int intr;

/* Evaluates code in a fresh engine and checks the execute_result text. */
#define EXPECT_REPR(code, want)                                                          \
    do {                                                                                 \
        kl_engine *e_ = kl_engine_create(&intr);                                         \
        run r_;                                                                          \
        run_cell(e_, code, &r_);                                                         \
        kl_engine_destroy(e_);                                                           \
        if (r_.rc != 0) T_FAIL_("%s: raised %s: %s", code, r_.err.ename, r_.err.evalue); \
        ASSERT_EQ(r_.cap.nresults, 1);                                                   \
        ASSERT_STR_EQ(r_.cap.result, want);                                              \
    } while (0)

#define EXPECT_ERR(code, want_name, msg_part)         \
    do {                                              \
        kl_engine *e_ = kl_engine_create(&intr);      \
        run r_;                                       \
        run_cell(e_, code, &r_);                      \
        kl_engine_destroy(e_);                        \
        ASSERT_EQ(r_.rc, -1);                         \
        ASSERT_STR_EQ(r_.err.ename, want_name);       \
        ASSERT_STR_CONTAINS(r_.err.evalue, msg_part); \
    } while (0)

T_TEST(literals_and_repr)
{
    EXPECT_REPR("1", "1");
    EXPECT_REPR("-9223372036854775807 - 1", "-9223372036854775808");
    EXPECT_REPR("0x1F + 0o17 + 0b101 + 1_000", "1051");
    EXPECT_REPR("2.5", "2.5");
    EXPECT_REPR("0.1 + 0.2", "0.30000000000000004");
    EXPECT_REPR("1e16", "1e+16");
    EXPECT_REPR("1e15", "1000000000000000.0");
    EXPECT_REPR("0.0001", "0.0001");
    EXPECT_REPR("0.00001", "1e-05");
    EXPECT_REPR("-0.0", "-0.0");
    EXPECT_REPR("3.0", "3.0");
    EXPECT_REPR("'a'", "'a'");
    EXPECT_REPR("\"it's\"", "\"it's\"");
    EXPECT_REPR("'say \"hi\"'", "'say \"hi\"'");
    EXPECT_REPR("'both \\' and \"'", "'both \\' and \"'");
    EXPECT_REPR("'tab\\tnl\\n\\x00\\u00e9'", "'tab\\tnl\\n\\x00\xc3\xa9'");
    EXPECT_REPR("r'raw\\n'", "'raw\\\\n'");
    EXPECT_REPR("'''tri\nple'''", "'tri\\nple'");
    EXPECT_REPR("'ab' 'cd'", "'abcd'");
    EXPECT_REPR("True", "True");
    EXPECT_REPR("[1, 2.5, 'x', None, False]", "[1, 2.5, 'x', None, False]");
    EXPECT_REPR("{'k': True, \"n\": {'x': []}}", "{'k': True, 'n': {'x': []}}");
    EXPECT_REPR("(1, 2)", "[1, 2]"); /* tuples are lists in Kiln */
    EXPECT_REPR("[\n  1,\n  2,  # comment\n]", "[1, 2]");
}

T_TEST(arithmetic)
{
    EXPECT_REPR("7 // 2, -7 // 2, 7 % -3, -7 % 3", "[3, -4, -2, 2]");
    EXPECT_REPR("7 / 2", "3.5");
    EXPECT_REPR("2 ** 10, 2 ** -1, 2.0 ** 0.5", "[1024, 0.5, 1.4142135623730951]");
    EXPECT_REPR("-7.5 // 2, 7.5 % -2", "[-4.0, -0.5]");
    EXPECT_REPR("1 + 2 * 3 - 4 / 2", "5.0");
    EXPECT_REPR("(1 + 2) * 3", "9");
    EXPECT_REPR("-2 ** 2", "-4");
    EXPECT_REPR("True + True", "2");
    EXPECT_REPR("'ab' * 3 + 'c'", "'abababc'");
    EXPECT_REPR("'xyz' * 1, 'xyz' * 0, 'ab' * 5, 'é' * 4", "['xyz', '', 'ababababab', 'éééé']");
    EXPECT_REPR("s = 'abc' * 1000001\nlen(s), s[-4:], len(s.replace('abc', ''))",
                "[3000003, 'cabc', 0]");
    EXPECT_REPR("[1] * 3 + [2]", "[1, 1, 1, 2]");
    EXPECT_REPR("'' * 10 ** 18, [] * 10 ** 18, 'ab' * -1", "['', [], '']"); /* instant */
}

/* Bitwise and matrix operators are left out; the SyntaxError names the operator and
 * nothing in the cell runs. */
T_TEST(bitwise_operators_refused)
{
    static const char *const cells[][2] = {
        {"6 & 3", "'&'"},
        {"6 | 3", "'|'"},
        {"6 ^ 3", "'^'"},
        {"~5", "'~'"},
        {"1 << 4", "'<<'"},
        {"-16 >> 2", "'>>'"},
        {"{'a': 1} | {'b': 2}", "'|'"},
        {"x = 1\nx |= 2", "'|='"},
        {"x = 1\nx <<= 2", "'<<='"},
        {"x = 1\nx &= 2", "'&='"},
        {"x = 1\nx ^= 2", "'^='"},
        {"x = 1\nx >>= 2", "'>>='"},
        {"a @ b", "'@'"},
    };
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        kl_engine *e = kl_engine_create(&intr);
        run r;
        run_cell(e, cells[i][0], &r);
        ASSERT_EQ(r.rc, -1);
        ASSERT_STR_EQ(r.err.ename, "SyntaxError");
        ASSERT_STR_CONTAINS(r.err.evalue, "is not supported");
        ASSERT_STR_CONTAINS(r.err.evalue, cells[i][1]);
        ASSERT(kl_engine_var_get(e, "x") == NULL);
        kl_engine_destroy(e);
    }
    EXPECT_REPR("1 < 2, 3 >= 3, 3 <= 4, 1 != 2", "[True, True, True, True]"); /* still lex */
}

T_TEST(comparisons_and_logic)
{
    EXPECT_REPR("1 < 2, 2 > 3, 1 == 1.0, 'a' < 'b', 0 < 1 and 1 < 2",
                "[True, False, True, True, True]");
    EXPECT_REPR("[1, 2] == [1, 2.0], {'a': [1]} != {'a': [1]}", "[True, False]");
    EXPECT_REPR("'ell' in 'hello', 3 in [1, 2], 'k' in {'k': 1}, 4 not in [4]",
                "[True, False, True, False]");
    EXPECT_REPR("None is None, 1 is not None", "[True, True]");
    EXPECT_REPR("0 or 'x', 1 and 0, not [], not 5", "['x', 0, True, False]");
    EXPECT_REPR("'yes' if 2 > 1 else 'no'", "'yes'");
}

T_TEST(statements)
{
    kl_engine *e = kl_engine_create(&intr);
    run r;
    run_cell(e,
             "a = b = 2\nc = 1\na += 1; c -= 5\nlst = [1]\nlst += [2]\n"
             "dd = {'n': 1}\ndd['k'] = lst\ndd['k'][0] = 9\ndd['n'] *= 3\n[a, b, c, lst, dd]",
             &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_EQ(r.cap.result, "[3, 2, -4, [9, 2], {'n': 3, 'k': [9, 2]}]");
    run_cell(e, "del a, b", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT(kl_engine_var_get(e, "a") == NULL && kl_engine_var_get(e, "b") == NULL);
    run_cell(e, "del a", &r);
    ASSERT_STR_EQ(r.err.ename, "NameError");
    run_cell(e, "x = 5;", &r);
    ASSERT_EQ(r.cap.nresults, 0);
    run_cell(e, "x;", &r); /* a trailing ';' hides the value, as in IPython */
    ASSERT_EQ(r.cap.nresults, 0);
    run_cell(e, "None", &r);
    ASSERT_EQ(r.cap.nresults, 0);
    run_cell(e, "print(1)\nx\ny = 2", &r); /* only a trailing expression shows */
    ASSERT_EQ(r.cap.nresults, 0);
    ASSERT_STR_EQ(r.cap.out, "1\n");
    run_cell(e, "pass\n# only a comment\n", &r);
    ASSERT_EQ(r.rc, 0);
    kl_engine_destroy(e);
}

T_TEST(builtins)
{
    EXPECT_REPR("len('héllo'), len([1, 2]), len({'a': 1})", "[5, 2, 1]");
    EXPECT_REPR("int('  -42 '), int(3.9), int('1_000'), int(True)", "[-42, 3, 1000, 1]");
    EXPECT_REPR("float('1.5'), float(2), str(1.0), str([1, 'a'])",
                "[1.5, 2.0, '1.0', \"[1, 'a']\"]");
    EXPECT_REPR("min(3, 1, 2), max([1, 5, 2]), min('b', 'a')", "[1, 5, 'a']");
    EXPECT_REPR("round(2.5), round(3.5), round(2.675, 2), round(1234, 1), round(0.5)",
                "[2, 4, 2.67, 1234, 0]");
    EXPECT_REPR("range(3), range(1, 10, 4), range(5, 0, -2)", "[[0, 1, 2], [1, 5, 9], [5, 3, 1]]");
    EXPECT_REPR("abs(-3), abs(-2.5), sum([1, 2, 3]), sum([0.5, 1])", "[3, 2.5, 6, 1.5]");
    EXPECT_REPR("bool(0), bool('x'), list('ab'), list({'k': 1})",
                "[False, True, ['a', 'b'], ['k']]");
    EXPECT_REPR("int(' 1_000 '), int('-7'), float('1e3'), float(' -2.5 '), float('.5')",
                "[1000, -7, 1000.0, -2.5, 0.5]");
    EXPECT_REPR("'a,b'.split(','), ' a  b '.split(), '-'.join(['x', 'y']), ' s '.strip()",
                "[['a', 'b'], ['a', 'b'], 'x-y', 's']");
    EXPECT_REPR("'Ab'.upper(), 'Ab'.lower(), 'a-b-c'.replace('-', '_'), 'run1'.startswith('run'), "
                "'x.ipynb'.endswith('.py')",
                "['AB', 'ab', 'a_b_c', True, False]");
    EXPECT_REPR("l = [1]\nm = l\nl.append(2)\nl += [3, 4]\n[l, m]", "[[1, 2, 3, 4], [1, 2]]");
    EXPECT_REPR("d = {'a': 1}\n[d.get('b', 7), d.get('b'), d.get('a'), d.keys(), d.values(), "
                "d.items()]",
                "[7, None, 1, ['a'], [1], [['a', 1]]]");
}

/* The builtins and methods Python has and Kiln leaves out are errors that list what
 * there is; format() and str.format() say to use an f-string. */
T_TEST(removed_builtins_and_methods)
{
    static const char *const gone[] = {"sorted([3, 1])", "enumerate(['x'])", "zip([1], [2])",
                                       "any([0, 1])",    "all([])",          "open('f')",
                                       "dict(a=1)",      "repr('a')"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        EXPECT_ERR(gone[i], "NameError",
                   "is not defined (Kiln cells hold parameters; their "
                   "functions are abs, bool, float, input, "); /* ... the whole table */
    EXPECT_ERR("format(3.14159, '.2f')", "NameError", "format() is not supported");
    EXPECT_ERR("'{} and {}'.format(1, 'x')", "AttributeError", "str.format() is not supported");
    EXPECT_ERR(
        "'abc'.find('b')", "AttributeError",
        "'str' object has no attribute 'find' "
        "(Kiln's str methods: endswith, join, lower, replace, split, startswith, strip, upper)");
    EXPECT_ERR("[1].pop()", "AttributeError", "(Kiln's list methods: append)");
    EXPECT_ERR("[1].extend([2])", "AttributeError", "(Kiln's list methods: append)");
    EXPECT_ERR("{}.update({})", "AttributeError",
               "(Kiln's dict methods: get, items, keys, values)");
    EXPECT_ERR("(5).bit_length()", "AttributeError", "'int' object has no attribute 'bit_length'");
    EXPECT_ERR("int('ff', 16)", "TypeError", "int() takes at most 1 argument (2 given)");
    EXPECT_ERR("' x'.strip('x')", "TypeError", "strip() takes exactly 0 arguments (1 given)");
    EXPECT_ERR("max([], default=0)", "TypeError", "max() takes no keyword arguments");
    EXPECT_ERR("round(1234, -2)", "ValueError", "negative ndigits is not supported");
    EXPECT_ERR("sum([1], 2)", "TypeError", "sum() takes exactly 1 argument (2 given)");
    EXPECT_ERR("print(1, flush=True)", "TypeError", "unexpected keyword argument 'flush'");
    EXPECT_ERR("int('0x10')", "ValueError", "invalid literal for int() with base 10: '0x10'");
    EXPECT_ERR("int('1.5')", "ValueError", "invalid literal for int()");
    EXPECT_ERR("float('1.5x')", "ValueError", "could not convert string to float: '1.5x'");
    EXPECT_ERR("int('99999999999999999999')", "OverflowError", "64-bit");
    EXPECT_ERR("'a'.upper(1)", "TypeError", "upper() takes exactly 0 arguments (1 given)");
    EXPECT_ERR("{}.get()", "TypeError", "get() takes at least 1 argument (0 given)");
    EXPECT_ERR("'a'.split(1)", "TypeError", "split() argument must be str, not int");
}

/* Comprehensions are a SyntaxError wherever they are written. */
T_TEST(comprehensions_refused)
{
    static const char *const cells[] = {"[x * x for x in range(6) if x % 2]",
                                        "{k: 1 for k in 'ab'}",
                                        "sum(x for x in [1])",
                                        "(x for x in [1])",
                                        "y = [1, x for x in [1]]",
                                        "{x for x in 'ab'}"};
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++)
        EXPECT_ERR(cells[i], "SyntaxError", "comprehensions are not supported");
}

/* What a parameter cell does not need is left out, each with an error that says so
 * (and, for the syntax, before anything in the cell runs). */
T_TEST(dropped_features_refused)
{
    EXPECT_ERR("x = 1\n'hello'[::-1]", "SyntaxError", "slice steps are not supported");
    EXPECT_ERR("[1, 2, 3][0:3:2]", "SyntaxError", "slice steps are not supported");
    EXPECT_ERR("lr = 0.1\n0 < lr < 1", "SyntaxError", "chained comparisons are not supported");
    EXPECT_ERR("a, b = 1, 2", "SyntaxError", "unpacking a, b = ... is not supported");
    EXPECT_ERR("[a] = [1]", "SyntaxError", "unpacking a, b = ... is not supported");
    EXPECT_ERR("d = {'k': 1}\ndel d['k']", "SyntaxError", "only names can be deleted");
    EXPECT_ERR("[1, 2] < [1, 3]", "TypeError", "'<' not supported between instances of 'list'");
}

T_TEST(strings_index_slice_fstring)
{
    EXPECT_REPR("'héllo'[1], 'hello'[-1], 'hello'[1:3], 'héllo'[-3:], [1, 2, 3][:2], [1][5:9]",
                "['é', 'o', 'el', 'llo', [1, 2], []]");
    EXPECT_REPR("s = 'abcdef'\n[s[:-2], s[4:1], s[-99:2], s[2:None]]",
                "['abcd', '', 'ab', 'cdef']");
    EXPECT_REPR("x = 3.14159\nf'{x}|{\"s\"}|{\"s\"!r}|{{}}|{round(x, 2)}|{[1, \"a\"]}|{x > 3}'",
                "\"3.14159|s|'s'|{}|3.14|[1, 'a']|True\"");
    EXPECT_REPR("n = 'cnn'\nf'run-{n}' f'-{2 * 3}'", "'run-cnn-6'");
    /* a ':' or '!=' inside brackets or quotes is the expression's, not a format spec */
    EXPECT_REPR("m = [1, 2, 3]\nd = {'a:b': 1}\nf'{m[-2:]}|{d[\"a:b\"]}|{m[0] != 1}'",
                "'[2, 3]|1|False'");
    /* no format mini-language, and !r is the one conversion */
    EXPECT_ERR("x = 1\nf'{x:.2f}'", "SyntaxError",
               "f-string: format specs such as {x:.3f} "
               "are not supported");
    EXPECT_ERR("f'{1:>5}'", "SyntaxError", "format specs");
    EXPECT_ERR("f'{1!s}'", "SyntaxError", "f-string: only the !r conversion is supported");
    EXPECT_ERR("'\\101'", "SyntaxError", "\\1 escapes are not supported");
    EXPECT_ERR("'\\N{DASH}'", "SyntaxError", "\\N escapes are not supported");
    EXPECT_ERR("'%d' % 5", "TypeError", "use an f-string");
}

T_TEST(print_and_input)
{
    kl_engine *e = kl_engine_create(&intr);
    run r;
    run_cell(e, "print('a', 1, None, sep='|', end='!')\nprint()", &r);
    ASSERT_STR_EQ(r.cap.out, "a|1|None!\n");
    mg_out o = capture_out(&r.cap);
    r.cap.input_reply = "typed";
    kl_error err;
    ASSERT_EQ(kl_engine_execute(e, "v = input('name? ')\nv", &o, NULL, &err), 0);
    ASSERT_STR_EQ(r.cap.result, "'typed'");
    o.input = NULL;
    ASSERT_EQ(kl_engine_execute(e, "input()", &o, NULL, &err), -1);
    ASSERT_STR_EQ(err.ename, "StdinNotImplementedError");
    kl_error_deinit(&err);
    kl_engine_destroy(e);
}

T_TEST(runtime_errors)
{
    EXPECT_ERR("x", "NameError", "name 'x' is not defined");
    EXPECT_ERR("1 / 0", "ZeroDivisionError", "division by zero");
    EXPECT_ERR("1 // 0", "ZeroDivisionError", "integer division or modulo by zero");
    EXPECT_ERR("1.0 % 0", "ZeroDivisionError", "float modulo");
    EXPECT_ERR("'a' + 1", "TypeError", "can only concatenate str (not \"int\") to str");
    EXPECT_ERR("1 + 'a'", "TypeError", "unsupported operand type(s) for +: 'int' and 'str'");
    EXPECT_ERR("1 < 'a'", "TypeError", "'<' not supported between instances of 'int' and 'str'");
    EXPECT_ERR("[1][5]", "IndexError", "list index out of range");
    EXPECT_ERR("{'a': 1}['b']", "KeyError", "'b'");
    EXPECT_ERR("{1: 2}", "TypeError", "dict keys must be str");
    EXPECT_ERR("int('abc')", "ValueError", "invalid literal for int() with base 10: 'abc'");
    EXPECT_ERR("float('inf')", "OverflowError", "inf");
    EXPECT_ERR("x = float('nan')", "OverflowError", "nan"); /* papermill's NaN parameter */
    EXPECT_ERR("1e308 * 10", "OverflowError", "infinite");
    EXPECT_ERR("9223372036854775807 + 1", "OverflowError", "64-bit");
    EXPECT_ERR("len(5)", "TypeError", "object of type 'int' has no len()");
    EXPECT_ERR("print", "TypeError", "can only be called");
    EXPECT_ERR("x = 5\nx()", "TypeError", "'int' object is not callable");

    EXPECT_ERR("range(10 ** 12)", "MemoryError", "too large");
    EXPECT_ERR("'x' * 10 ** 12", "MemoryError", "too large");
    EXPECT_ERR("l = [1]\nl[0] = l", "ValueError", "cannot contain itself");
    EXPECT_ERR("l = [1]\nl.append(l)", "ValueError", "cannot contain itself");
    EXPECT_ERR("'abc'.nope()", "AttributeError", "'str' object has no attribute 'nope'");
    EXPECT_ERR("%nosuchmagic", "UsageError", "`%nosuchmagic` not found");
}

/* The traceback names the line and puts a caret under the column. */
T_TEST(error_positions)
{
    kl_engine *e = kl_engine_create(&intr);
    run r;
    run_cell(e, "a = 1\nb = a + 2\nc = b + zz\nd = 4", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_CONTAINS(r.tb, "Cell line 3, column 9");
    ASSERT_STR_CONTAINS(r.tb, "c = b + zz");
    ASSERT_STR_CONTAINS(r.tb, "^^");
    ASSERT_STR_CONTAINS(r.tb, "NameError");
    /* the statement before the error ran, the one after did not */
    ASSERT(kl_engine_var_get(e, "b") != NULL);
    ASSERT(kl_engine_var_get(e, "d") == NULL);
    kl_engine_destroy(e);
}

T_TEST(syntax_errors)
{
    EXPECT_ERR("a = (1 +", "SyntaxError", "'(' was never closed (line 1, column 5)");
    EXPECT_ERR("x = 1\ny = = 2", "SyntaxError", "(line 2, column 5)");
    EXPECT_ERR("1 = x", "SyntaxError", "cannot assign to literal");
    EXPECT_ERR("f(x) = 1", "SyntaxError", "cannot assign to function call");
    EXPECT_ERR("'abc", "SyntaxError", "unterminated string literal");
    EXPECT_ERR("x = 1\n  y = 2", "IndentationError", "unexpected indent");
    EXPECT_ERR("for i in range(3): pass", "SyntaxError", "'for' is not supported");
    EXPECT_ERR("import os", "SyntaxError", "'import' is not supported");
    EXPECT_ERR("x = [1, 2)", "SyntaxError", "closing parenthesis ')' does not match");
    EXPECT_ERR("007", "SyntaxError", "leading zeros");
    EXPECT_ERR("12abc", "SyntaxError", "invalid decimal literal");
    EXPECT_ERR("x = 1 $ 2", "SyntaxError", "invalid syntax");
    EXPECT_ERR("f'{}'", "SyntaxError", "f-string: empty expression");
    EXPECT_ERR("'\\xZZ'", "SyntaxError", "truncated \\x escape");
    EXPECT_ERR("99999999999999999999", "OverflowError", "64-bit");
    EXPECT_ERR("x = 1\n%%time\n", "SyntaxError", "first line");
    EXPECT_ERR("a = 1 +\\", "SyntaxError", "line continuation");
    EXPECT_ERR("\xff\xfe", "SyntaxError", "not valid UTF-8");
}

T_TEST(nothing_runs_on_syntax_error)
{
    kl_engine *e = kl_engine_create(&intr);
    run r;
    run_cell(e, "print('side effect')\nx = (", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_EQ(r.cap.nout, 0);
    kl_engine_destroy(e);
}

T_TEST(interrupt_between_statements)
{
    atomic_int flag = 1;
    kl_engine *e = kl_engine_create(&flag);
    run r;
    run_cell(e, "x = 1", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_EQ(r.err.ename, "KeyboardInterrupt");
    ASSERT(kl_engine_var_get(e, "x") == NULL);
    kl_engine_destroy(e);
}

T_TEST(api_vars_and_expressions)
{
    kl_engine *e = kl_engine_create(&intr);
    ASSERT_EQ(kl_engine_var_set(e, "lr", json_real(0.5)), 0);
    json_t *r = kl_engine_eval_expression(e, "lr * 2");
    ASSERT_STR_EQ(json_string_value(json_object_get(r, "status")), "ok");
    ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(r, "data"), "text/plain")),
                  "1.0");
    json_decref(r);
    r = kl_engine_eval_expression(e, "nope + 1");
    ASSERT_STR_EQ(json_string_value(json_object_get(r, "status")), "error");
    ASSERT_STR_EQ(json_string_value(json_object_get(r, "ename")), "NameError");
    json_decref(r);
    kl_engine_destroy(e);
}

/* kl_literal_parse / kl_value_repr: the literals of `kiln run -p` and of the forms'
 * #@param lines, read and shown as cells read and show them. */
T_TEST(literal_parse_and_repr)
{
    json_t *v = kl_literal_parse(" [1, -2.5e3, 'a\\'b', \"\\u00e9\", True, None, (3,), {'k': [ ]}, "
                                 "'''t''', +4, 1_000] ");
    ASSERT(v != NULL);
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII);
    ASSERT_STR_EQ(s, "[1,-2500.0,\"a'b\",\"\\u00E9\",true,null,[3],{\"k\":[]},\"t\",4,1000]");
    free(s);
    char *r = kl_value_repr(v);
    ASSERT_STR_EQ(r, "[1, -2500.0, \"a'b\", '\xc3\xa9', True, None, [3], {'k': []}, 't', 4, 1000]");
    free(r);
    json_decref(v);
    r = kl_value_repr(NULL);
    ASSERT_STR_EQ(r, "None");
    free(r);
    /* names, calls, operators, bad syntax, non-str keys, overflow: not a literal */
    static const char *not_literals[] = {
        "adam",  "print('x')", "1+1",    "x",   "[1, 2",  "'abc",
        "f(3)",  "1_",         "{1: 2}", "1e",  "",       "(",
        "--1",   "1 2",        "0.1.2",  "[x]", "f'{1}'", "99999999999999999999",
        "1e999", "a = 1",      "%time",  "\xff"};
    for (size_t i = 0; i < sizeof not_literals / sizeof not_literals[0]; i++) {
        json_t *x = kl_literal_parse(not_literals[i]);
        if (x) fprintf(stderr, "  parsed as literal: %s\n", not_literals[i]);
        ASSERT(x == NULL);
    }
    char deep[300];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    ASSERT(kl_literal_parse(deep) == NULL); /* depth-limited, no stack overflow */
    static const struct {
        double d;
        const char *repr;
    } reals[] = {{0.1, "0.1"},        {10.0, "10.0"},     {1e-5, "1e-05"},
                 {1.5e20, "1.5e+20"}, {0.0001, "0.0001"}, {123456.789, "123456.789"},
                 {1e16, "1e+16"},     {-0.5, "-0.5"},     {1.0 / 3, "0.3333333333333333"}};
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        v = json_real(reals[i].d);
        r = kl_value_repr(v);
        ASSERT_STR_EQ(r, reals[i].repr);
        free(r);
        json_decref(v);
    }
}

int main(void)
{
    T_RUN(literals_and_repr);
    T_RUN(arithmetic);
    T_RUN(bitwise_operators_refused);
    T_RUN(comparisons_and_logic);
    T_RUN(statements);
    T_RUN(builtins);
    T_RUN(removed_builtins_and_methods);
    T_RUN(comprehensions_refused);
    T_RUN(dropped_features_refused);
    T_RUN(strings_index_slice_fstring);
    T_RUN(print_and_input);
    T_RUN(runtime_errors);
    T_RUN(error_positions);
    T_RUN(syntax_errors);
    T_RUN(nothing_runs_on_syntax_error);
    T_RUN(interrupt_between_statements);
    T_RUN(api_vars_and_expressions);
    T_RUN(literal_parse_and_repr);
    return T_EXIT();
}
