"""Python values in %%kiln cells through a real bridge (ipykernel + a Kiln child): a
value that holds a line break and a `!` command, as a papermill parameter or a form
field can, never runs it. On a magic or `!` line it stays one word (Kiln's own `$name`
quoting, as for `kiln run -p`); spliced into Kiln code it is refused."""
import os
import re
import subprocess

from conftest import PyKernel


def test_a_value_with_a_line_break_runs_no_command(tmp_path):
    planted = tmp_path / "planted"
    k = PyKernel()
    try:
        reply, text = k.run(f"v = 'x\\n!touch {planted}'\nw = 'two words'")
        assert reply["status"] == "ok", text
        # a shell line: one quoted word, echoed back whole
        reply, text = k.run("%%kiln\n!echo $v")
        assert reply["status"] == "ok", text
        assert "!touch" in text and not planted.exists(), text
        # a magic option: one argument, spaces and all
        reply, text = k.run("%kiln %train --name {w} --nope")
        assert reply["status"] == "error" and not planted.exists(), text
        # Kiln code: refused before anything runs, naming the value
        reply, text = k.run('%%kiln\nprint("$v")')
        assert reply["status"] == "error", text
        assert "$v holds a line break" in text, text
        reply, text = k.run("%kiln print({v})")
        assert reply["status"] == "error" and "{v} holds a line break" in text, text
        assert not planted.exists()
        # ordinary values still arrive as before, on both kinds of line
        reply, text = k.run("n = 3\n")
        reply, text = k.run('%%kiln\nprint("n is", $n, {n * 2})\n!echo got $n-{n + 1}')
        assert reply["status"] == "ok", text
        assert "n is 3 6" in text and "got 3-4" in text, text
    finally:
        k.close()
    assert not os.path.exists(planted)


def test_a_kiln_magic_in_a_python_cell_hints_at_kiln():
    """`%dataset` typed without %%kiln: a hint naming %%kiln, not IPython's bare "Line
    magic function not found"; the hint list is exactly Kiln's magics that IPython lacks."""
    k = PyKernel()
    try:
        reply, text = k.run("%dataset fashion-mnist --val 0.25")
        assert reply["status"] == "error", text
        assert "%dataset is a Kiln magic" in text and "%%kiln" in text, text
        assert "%kiln %dataset fashion-mnist --val 0.25" in text, text
        reply, text = k.run("%%model net\ndense 10")
        assert reply["status"] == "error" and "%%model is a Kiln magic" in text, text
        listed = subprocess.run([os.environ["KILN_BINARY"], "help"], capture_output=True,
                                text=True, check=True).stdout
        kiln = set(re.findall(r"^  %([a-z_]+) ", listed, re.M))
        assert "dataset" in kiln and "cd" in kiln, listed
        reply, text = k.run(
            "from kiln_kernel.bridge import KILN_ONLY_MAGICS\n"
            "m = get_ipython().magics_manager.magics\n"
            "hint = lambda f: 'runs in a %%kiln cell' in (getattr(f, '__doc__', '') or '')\n"
            "print(sorted(KILN_ONLY_MAGICS))\n"
            "print(sorted({n for kind in m for n, f in m[kind].items() if not hint(f)}))")
        hints, ipython = (eval(line) for line in text.strip().split("\n")[-2:])
        assert set(hints) == {n for n in kiln if n not in ipython}, (hints, kiln)
    finally:
        k.close()
