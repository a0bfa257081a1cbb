"""`$name` / `{expr}` in a %%kiln cell: Python's values where Python has them, the text
left for Kiln where it has not."""
from kiln_kernel.expand import expand

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
