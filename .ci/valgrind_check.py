#!/usr/bin/env python3
"""Checks the memcheck logs of .ci/sanitize (one vg.<pid>.log per kiln process):
fails on any invalid read/write/free, use of uninitialised values or definite leak.
A process killed before exit (a test that SIGKILLs a kernel, or jupyter_client's
kill after its shutdown wait) has no leak summary: it is counted and listed, and
its other errors are still checked.  Usage: valgrind_check.py LOG_DIR"""
import glob
import os
import re
import sys

BAD = re.compile(r"(Invalid (read|write|free)|Mismatched free|uninitialised|"
                 r"Source and destination overlap|Conditional jump or move depends|"
                 r"Syscall param .* points to unaddressable|definitely lost in)")

logs = sorted(glob.glob(os.path.join(sys.argv[1], "vg.*.log")))
if not logs:
    sys.exit("valgrind_check: no logs in %s (did the tests start kiln at all?)" % sys.argv[1])
bad, no_summary, leak_bytes = [], [], 0
for path in logs:
    text = open(path, errors="replace").read()
    errs = re.search(r"ERROR SUMMARY: (\d+) errors", text)
    lost = re.search(r"definitely lost: ([\d,]+) bytes", text)
    if lost:
        leak_bytes += int(lost.group(1).replace(",", ""))
    hits = [l for l in text.splitlines() if BAD.search(l)]
    if hits or (errs and int(errs.group(1)) > 0) or (lost and lost.group(1) != "0"):
        bad.append(path)
        print(f"---- {path}")
        print(text[-8000:])
    elif not errs:
        no_summary.append(path)
print(f"valgrind_check: {len(logs)} kiln processes, {len(bad)} with errors, "
      f"{leak_bytes} bytes definitely lost, {len(no_summary)} ended without a summary "
      f"(killed): {' '.join(os.path.basename(p) for p in no_summary) or '-'}")
sys.exit(1 if bad else 0)
