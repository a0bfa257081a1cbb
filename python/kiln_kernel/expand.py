"""`$name` and `{expr}` in a bridged cell, filled in from the Python namespace.

`$name` becomes str(value) when the notebook's Python namespace has `name`, and is
left for Kiln (whose cells read `$name` from Kiln's own variables) when it has not.
`{expr}` becomes str(eval(expr)) when expr evaluates there, and is left as written when
it does not (a Kiln dict literal, an f-string field naming a Kiln variable). `$$`, `{{`
and `}}` stand for a literal `$`, `{` and `}`, as in IPython's own line expansion.
"""
import re

_TOKEN = re.compile(r"\$\$|\{\{|\}\}|\$([A-Za-z_][A-Za-z0-9_]*)|\{([^{}\n]+)\}")
_LITERAL = {"$$": "$", "{{": "{", "}}": "}"}


def expand(text, namespace):
    def one(m):
        tok = m.group(0)
        if tok in _LITERAL:
            return _LITERAL[tok]
        name, expr = m.group(1), m.group(2)
        if name is not None:
            return str(namespace[name]) if name in namespace else tok
        try:
            return str(eval(expr, namespace))  # noqa: S307 - the user's own notebook code
        except Exception:
            return tok

    return _TOKEN.sub(one, text)
