"""`$name` / `{expr}` in a %%kiln cell: Python's values where Python has them, the text
left for Kiln where it has not."""
import pytest

from kiln_kernel.expand import ExpandError, expand, literal, prepare

NS = {"epochs": 5, "lr": 0.002, "opt": "adam", "sizes": [1, 2]}


def test_names_python_has_are_filled_in():
    assert expand("%train net --epochs $epochs --optim $opt", NS) == "%train net --epochs 5 --optim adam"


def test_names_python_lacks_are_left_for_kiln():
    assert expand("%train net --epochs $kiln_var", NS) == "%train net --epochs $kiln_var"


def test_expressions():
    assert expand("lr = {lr * 10}\nn = {len(sizes)}", NS) == "lr = 0.02\nn = 2"


def test_what_python_cannot_evaluate_is_left_as_written():
    src = 'd = {"k": 1}\nprint(f"{loss}")\nx = {1 +}'
    assert expand(src, NS) == src


def test_escapes():
    assert expand("$$epochs {{lr}} }}", NS) == "$epochs {lr} }"


def test_a_value_with_dollars_is_not_expanded_again():
    assert expand("$a", {"a": "$epochs"}) == "$epochs"


def test_magic_and_shell_lines_get_values_as_kiln_assignments():
    ns = {"epochs": 5, "lr": 0.002, "opt": "adam", "v": "a b\n!touch /tmp/x"}
    assignments, code = prepare("%train net --epochs $epochs --lr {lr * 10}\n!echo $v\nx = 1", ns)
    assert code == "%train net --epochs {__py_epochs} --lr {__py_0_}\n!echo {__py_v}\nx = 1"
    assert assignments.split("\n") == ["__py_epochs = 5", "__py_0_ = 0.02",
                                       "__py_v = 'a b\\n!touch /tmp/x'"]
    assert prepare("%kiln_var $unknown", ns) == ("", "%kiln_var $unknown")


def test_a_line_break_is_never_spliced_into_code():
    for value in ["1\n!touch /tmp/x", "1\r!touch /tmp/x", "1\u2028x"]:
        ns = {"v": value}
        for cell in ['print("$v")', "x = {v}", "%%model net\ndense $v"]:
            with pytest.raises(ExpandError, match="line break"):
                prepare(cell, ns)


def test_literals_read_back_as_the_value():
    import ast
    for v in [0, -3, 2.5, 1e-300, True, None, "it's \"q\" \\ \x00 é", [1, "a"]]:
        lit = literal(v)
        assert ast.literal_eval(lit) == (v if not isinstance(v, list) else str(v)), lit
    assert literal(float("nan")) == "'nan'"
