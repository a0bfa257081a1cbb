"""`$name` and `{expr}` in a bridged cell, filled in from the Python namespace.

`$name` takes Python's value when the notebook's Python namespace has `name`, and is
left for Kiln (whose cells read `$name` from Kiln's own variables) when it has not.
`{expr}` takes the value of expr when it evaluates there, and is left as written when
it does not (a Kiln dict literal, an f-string field naming a Kiln variable). `$$`, `{{`
and `}}` stand for a literal `$`, `{` and `}`, as in IPython's own line expansion.

How a value reaches Kiln depends on the line:
- on a magic line (`%train ...`, `%%model ...`) or a shell line (`!ls ...`) it is sent
  as an assignment to a Kiln variable (`__py_epochs = 5`) and the line reads it back as
  `{__py_epochs}`, so Kiln's own quoting applies: one argument in magic options, one
  quoted word in `!` lines, whatever the value holds (spaces, quotes, line breaks);
- anywhere else (Kiln code, a cell magic's body) its text is put in place. A value whose
  text holds a line break is refused there (ExpandError): it would start a new line of
  Kiln code, a `!` shell line for example.
"""
import math
import re

_TOKEN = re.compile(r"\$\$|\{\{|\}\}|\$([A-Za-z_][A-Za-z0-9_]*)|\{([^{}\n]+)\}")
_LITERAL = {"$$": "$", "{{": "{", "}}": "}"}
# what ends a line for Python's str.splitlines: none of it may be spliced into code
_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
PREFIX = "__py_"


class ExpandError(ValueError):
    """A value that cannot be put into the cell as text."""


def literal(value):
    """value as a literal of Kiln's cell language (which reads Python literals): numbers
    and booleans as themselves, None as None, anything else as the string str(value)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int) and abs(value) < 2**62:
        return repr(int(value))
    if isinstance(value, float) and math.isfinite(value):
        return repr(float(value))
    return repr(str(value))


def _is_argument_line(line):
    s = line.lstrip(" \t")
    return s.startswith("%") or s.startswith("!")


def prepare(text, namespace):
    """-> (assignments, code): the Kiln code that sets the values the cell's magic and
    shell lines use ("" when none), and the cell with every `$name` / `{expr}` that
    Python has replaced. Raises ExpandError for a line break spliced into code."""
    bound = {}  # Kiln variable -> literal
    exprs = {}  # expression text -> its Kiln variable

    def one_line(line):
        arg = _is_argument_line(line)

        def one(m):
            tok = m.group(0)
            if tok in _LITERAL:
                return _LITERAL[tok]
            name, expr = m.group(1), m.group(2)
            if name is not None:
                if name not in namespace:
                    return tok
                value, what = namespace[name], "$" + name
            else:
                try:
                    value = eval(expr, namespace)  # noqa: S307 - the user's own notebook code
                except Exception:
                    return tok
                what = "{" + expr + "}"
            if arg:
                if name is not None:
                    var = PREFIX + name
                else:
                    var = exprs.setdefault(expr, f"{PREFIX}{len(exprs)}_")
                bound[var] = literal(value)
                return "{" + var + "}"  # braces: text right after it is not in the name
            s = str(value)
            if _BREAKS.search(s):
                raise ExpandError(
                    f"%%kiln: {what} holds a line break, which would start a new line of "
                    f"Kiln code; use it on a magic or ! line (where it stays one word), or "
                    f"take the line break out")
            return s

        return _TOKEN.sub(one, line)

    code = "\n".join(one_line(line) for line in text.split("\n"))
    return "\n".join(f"{k} = {v}" for k, v in bound.items()), code


def expand(text, namespace):
    """The cell as Kiln would read it after prepare(): every value in place as its
    text (for reading and tests; the bridge sends prepare()'s assignments instead)."""
    assignments, code = prepare(text, namespace)
    if not assignments:
        return code
    values = {}
    for line in assignments.split("\n"):
        k, v = line.split(" = ", 1)
        values[k] = str(eval(v, {}))  # noqa: S307 - literal() wrote it
    return re.sub(r"\{(" + re.escape(PREFIX) + r"[A-Za-z0-9_]*)\}", lambda m: values[m.group(1)],
                  code)
