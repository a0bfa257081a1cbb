"""Python values in %%kiln cells through a real bridge (ipykernel + a Kiln child): a
value that holds a line break and a `!` command, as a papermill parameter or a form
field can, never runs it. On a magic or `!` line it stays one word (Kiln's own `$name`
quoting, as for `kiln run -p`); spliced into Kiln code it is refused."""
import os

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
