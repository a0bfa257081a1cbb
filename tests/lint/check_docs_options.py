#!/usr/bin/env python3
"""Every `--option` the docs name exists, and every magic's option is documented.

    check_docs_options.py KILN SOURCE_ROOT

The option tables come from the built binary itself: `kiln help` lists the magics,
`kiln help MAGIC` prints each one's table (generated from its mg_option array), and
`kiln --help` / `kiln COMMAND --help` give the command line's options. The docs are
README.md and docs/*.md.

Each `--word` in the docs is read in its code context: the backtick span holding it, or
the whole line of an indented or fenced code block. The nearest command word before it
in that context owns it:
  %MAGIC / %%MAGIC        it must be in that magic's table (or be --help);
  kiln COMMAND            it must be in `kiln COMMAND --help`;
  another program         (pip, meson, mpirun, bench/x.py, ...) it is not Kiln's: skipped;
  none (prose, `--lr`)    it must be an option of some magic or kiln command.
The other way round, each option in a magic's table must appear in the docs either owned
by that magic or unowned in a file that names the magic.
"""
import re
import subprocess
import sys
from pathlib import Path

# Programs whose options the docs may show; a word with a '/' ending in .py or .sh, or
# starting with bench/, tools/ or .ci/, is a program too.
EXTERNAL = {
    "actionlint", "apt", "apt-get", "auditwheel", "aws", "bash", "cibuildwheel",
    "clang-format", "cmake", "curl", "debootstrap", "docker", "gdb", "git", "gsutil",
    "jupyter", "jupyter-lab", "make", "meson", "mpirun", "mpiexec", "ninja", "nvcc",
    "papermill", "perf", "pip", "pip3", "pytest", "python", "python3", "sh", "srun",
    "sudo", "tar", "torchrun", "twine", "ulimit", "valgrind", "wget", "wheel",
    "train_bench", "gpu_check.sh",
}
# Words the docs write with -- that are not Kiln's, where no program is named before them:
# the option and why.
NOT_KILNS = {
    "--bogus": "docs/lang.md: a string value that only looks like an option",
    "--ip": "docs/security.md: Jupyter's own option (jupyter lab --ip)",
}
PLACEHOLDERS = {"magic"}  # `%magic --help` in docs/lang.md: any magic
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
WORD = re.compile(r"%%?[a-z_]+|[\w./+-]+")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    return p.stdout + p.stderr


def tables(kiln):
    """{magic: {--opt: help}} and {kiln command: {--opt}}."""
    magics = {}
    listing = run([kiln, "help"])
    names = re.findall(r"^  %%?([a-z_]+)\s", listing, re.M)
    if not names:
        sys.exit("check_docs_options: `kiln help` lists no magics:\n" + listing)
    for name in names:
        text = run([kiln, "help", name])
        if "\nOptions:\n" not in text:
            sys.exit(f"check_docs_options: `kiln help {name}` has no Options: table:\n{text}")
        table = text.rsplit("\nOptions:\n", 1)[1]
        magics[name] = {m.group(1): m.group(2).strip() for m in re.finditer(
            r"^  (--[a-z][a-z0-9-]*)(?: [^ ]+)?\s+(.*)$", table, re.M)}
    usage = run([kiln, "--help"])
    commands = {"": set(OPTION.findall(usage))}  # `kiln --version`
    block = usage.split("commands:", 1)[-1]
    for sub in sorted(set(re.findall(r"^  ([a-z]+)\b", block, re.M))):
        lines = [ln for ln in block.splitlines() if re.match(r"\s+" + sub + r"\b", ln)]
        opts = set(OPTION.findall("\n".join(lines))) | set(OPTION.findall(run([kiln, sub, "--help"])))
        commands[sub] = opts | {"--help"}
    return magics, commands


def contexts(path):
    """(line number, context text, is code) for every context that names an option: a
    line of a code block, a backtick span (which may wrap over lines of a paragraph), or
    a paragraph's text outside its spans."""
    fenced = False
    para = []  # (line number, text) of the prose paragraph being read

    def prose():
        text, starts = "", []
        for no, line in para:
            starts.append((len(text), no))
            text += line + "\n"
        line_of = lambda pos: max(no for at, no in starts if at <= pos)
        for m in re.finditer(r"`([^`]+)`", text):
            if OPTION.search(m.group(1)):
                yield line_of(m.start()), m.group(1).replace("\n", " "), True
        bare = re.sub(r"`[^`]*`", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
        for no, line in zip((n for n, _ in para), bare.split("\n")):
            if OPTION.search(line):
                yield no, line, False
        para.clear()

    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            yield from prose()
            fenced = not fenced
            continue
        if fenced or line.startswith("    ") and not line.lstrip().startswith(("-", "*", "|")):
            yield from prose()
            if OPTION.search(line):
                yield no, line, True
            continue
        if not line.strip():
            yield from prose()
            continue
        para.append((no, line))
    yield from prose()


def owner(text, pos):
    """The nearest command word before pos: ('magic', name), ('kiln', sub), ('ext', w)."""
    words = [(m.start(), m.group(0)) for m in WORD.finditer(text[:pos])]
    for i in range(len(words) - 1, -1, -1):
        w = words[i][1]
        if w.startswith("%"):
            return ("magic", w.lstrip("%"))
        base = w.rsplit("/", 1)[-1]
        if base == "kiln":
            nxt = words[i + 1][1] if i + 1 < len(words) else ""
            return ("kiln", nxt if re.fullmatch(r"[a-z]+", nxt) else "")
        if base in EXTERNAL or ("/" in w and (w.endswith((".py", ".sh")) or
                                              w.startswith(("bench/", "tools/", ".ci/")))):
            return ("ext", w)
    return None


def main():
    kiln, root = sys.argv[1], Path(sys.argv[2])
    magics, commands = tables(kiln)
    every = set().union(*magics.values()) | set().union(*commands.values())
    docs = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    problems = []
    owned = {m: set() for m in magics}   # options seen owned by each magic
    unowned = {}                          # doc -> options named with no owner
    names_in = {}                         # doc -> magics it names
    for doc in docs:
        rel = doc.relative_to(root)
        text = doc.read_text(encoding="utf-8")
        names_in[rel] = set(re.findall(r"%%?([a-z_]+)", text)) & set(magics)
        for no, ctx, code in contexts(doc):
            for m in OPTION.finditer(ctx):
                opt = m.group(0)
                who = owner(ctx, m.start()) if code else None
                where = f"{rel}:{no}"
                if who is None and opt in NOT_KILNS:
                    continue
                if who is None:
                    unowned.setdefault(rel, set()).add(opt)
                    if opt not in every:
                        problems.append(f"{where}: {opt} is no option of any magic or kiln "
                                        f"command (`kiln help MAGIC`, `kiln COMMAND --help`)")
                elif who[0] == "magic":
                    name = who[1]
                    if name in PLACEHOLDERS:
                        continue
                    if name not in magics:
                        problems.append(f"{where}: %{name} is no magic (`kiln help` lists them)")
                    elif opt != "--help" and opt not in magics[name]:
                        problems.append(f"{where}: %{name} has no option {opt} "
                                        f"(`kiln help {name}` lists its table)")
                    else:
                        owned[name].add(opt)
                elif who[0] == "kiln":
                    sub = who[1] if who[1] in commands else ""
                    if opt not in commands[sub]:
                        problems.append(f"{where}: `kiln {who[1]}` has no option {opt} "
                                        f"(`kiln {who[1]} --help`)")
    for name, table in sorted(magics.items()):
        home = sorted((d for d, n in names_in.items() if name in n),
                      key=lambda d: (d.name != "training-magics.md", str(d)))
        for opt, help_text in table.items():
            if opt == "--help" or opt in owned[name]:
                continue
            if any(opt in unowned.get(d, ()) for d in home):
                continue
            where = home[0] if home else Path("docs/training-magics.md")
            problems.append(
                f"%{name} {opt} is in the option table but in no doc: add it to {where} "
                f"(e.g. a line `%{name} ... {opt} ...` or a row of its options table saying "
                f"what it does: \"{help_text}\")")
    if problems:
        print(f"check_docs_options: {len(problems)} option(s) where the docs and the "
              f"option tables disagree:")
        for p in problems:
            print("  " + p)
        return 1
    n = sum(len(t) for t in magics.values())
    print(f"check_docs_options: {n} options of {len(magics)} magics and "
          f"{sum(len(c) for c in commands.values())} of the command line agree with "
          f"{len(docs)} docs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
