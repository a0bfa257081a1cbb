#!/usr/bin/env bash
# Self-test of check-layering.sh: on a copy of kernel/, magics/ and runtime/ it must
# pass as the tree is, and fail, naming the rule, on each planted fault: bad includes
# written with and without a path, an op called through b->ops, a training-run file
# outside magics/run/, include cycles (the checkpoint code including the run, a runtime
# module including one that needs it).
#   selftest-layering.sh CHECK-LAYERING.SH SOURCE-ROOT
set -u
lint="$1"
src="$2"
tmp="$(mktemp -d)" || exit 99
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/kernel" "$src/magics" "$src/runtime" "$tmp/" || exit 99
fail=0

out="$(bash "$lint" "$tmp")" || { echo "selftest: the unplanted tree fails:"; echo "$out"; exit 1; }

first_c() { find "$tmp/$1" -maxdepth 1 -name '*.c' | sort | head -1; }

# All faults are planted at once (one lint run); each must be reported by its rule.
n=0
plant() { # dir line expected-message
  local file
  file="$(first_c "$1")"
  [ -n "$file" ] || { echo "selftest: no .c file in $1"; fail=1; return; }
  n=$((n + 1))
  printf '%s /* planted %d */\n' "$2" "$n" >>"$file"
  want+=("$3: ${file#"$tmp"/}:$(wc -l <"$file"):$2 /* planted $n */")
}
want=()

plant runtime '#include "kl_buf.h"' "runtime includes a kernel/magics header"
plant magics '#include "fm_widget.h"' "magics includes a kernel header"
plant magics '#include "../kernel/lang/kl.h"' "magics includes a kernel header"
plant runtime '#include "../kernel/lang/kl.h"' "runtime includes a kernel/magics header"
plant runtime '#include "../magics/mg_run.h"' "runtime includes a kernel/magics header"
plant kernel '#include "lang/kl_internal.h"' "private header outside its folder"
plant runtime/cpu '#include "../rt_model_internal.h"' "private header outside its folder"
plant magics '#include "../runtime/cpu/cpu_internal.h"' "magics includes a backend header"
plant runtime '    RT_TRY(b->ops->add_relu(b, dst, a, x, err));' "op called past its argument checks (use rt_backend_OP)"
plant magics '    s = m->b->ops->conv2d_fwd_moments (b, o, mo, i, w, bi, d, err);' \
  "op called past its argument checks (use rt_backend_OP)"
plant magics '#include "run/mg_run_internal.h"' "private header outside its folder"
plant magics '#include "lang/kl_internal.h"' "magics includes a kernel header"
: >"$tmp/magics/mg_train_planted.c"
want+=("a training-run file outside magics/run/: magics/mg_train_planted.c")
plant magics '    return mg_fail(err, "RuntimeError", "%%x: %s",' "mg_fail with an rt_error's message (use mg_fail_status)"
printf '%s\n' '                   re.msg);' >>"$(first_c magics)"

if out="$(bash "$lint" "$tmp")"; then
  echo "selftest: the lint passed $n planted faults"
  fail=1
fi
for w in "${want[@]}"; do
  if ! grep -qxF -- "layering: $w" <<<"$out"; then
    echo "selftest: not reported: layering: $w"
    fail=1
  fi
done
[ "$fail" = 0 ] || { echo "the lint said:"; echo "$out"; }

# Include cycles, one at a time on a clean copy (planted together they would merge into
# one circle): the checkpoint code including the run that uses it, and the runtime's
# error module (which everything includes) including the trainer. Each must be reported
# as a cycle that goes through the planted line.
clean="$tmp/clean"
mkdir "$clean" && cp -r "$src/kernel" "$src/magics" "$src/runtime" "$clean/" || exit 99
for plant in 'magics/run/mg_ckpt_hook.c|#include "mg_run.h"' 'runtime/rt_error.c|#include "rt_trainer.h"'; do
  file="${plant%%|*}"
  cp "$clean/$file" "$clean/$file.orig"
  printf '%s /* planted cycle */\n' "${plant#*|}" >>"$clean/$file"
  at="$file:$(wc -l <"$clean/$file")"
  if out="$(bash "$lint" "$clean")"; then
    echo "selftest: the lint passed an include cycle through $at"
    fail=1
  elif ! grep -E '^layering: include cycle: ' <<<"$out" | grep -qF -- "$at"; then
    echo "selftest: include cycle through $at not reported; the lint said:"
    echo "$out"
    fail=1
  fi
  mv "$clean/$file.orig" "$clean/$file"
done

if [ "$fail" = 0 ]; then echo "selftest: the lint fails on every planted fault"; fi
exit "$fail"
