#!/usr/bin/env bash
# Structural checks that keep the module boundaries true (run as a meson test):
#   kernel -> magics -> runtime -> runtime/{cpu,cuda}; nothing points backwards.
# - runtime/ includes no ZeroMQ, no Jupyter-side header, no OpenSSL except the
#   SHA-256 of downloads and the signatures of the ranks' meeting, no jansson except
#   checkpoint headers and manifests (and a mirrored data set's record of ETags) and
#   the results store.
# - magics/ includes no ZeroMQ/OpenSSL and nothing from kernel/.
# - kernel/ and magics/ include no CUDA header and no header of a backend
#   (runtime/cpu, runtime/cuda): what they need is in rt.h (rt_device.h: devices and
#   precision); CUDA #ifdefs stay in runtime/cuda.
# - private headers (NAME_internal.h, magics' mg_*.h) stay in their own folder.
# - the training run's files are in magics/run/.
# - no include cycle among magics/ and runtime/ (include-cycles.pl): a module (a header
#   with the files that implement it) never needs, through its includes, a module that
#   needs it. The training run uses its checkpoints, not the other way round.
# - only kernel/jk_main.c calls exit() (children after fork use _exit).
# - a runtime failure is reported with mg_fail_status (its status names the exception),
#   never with mg_fail and the rt_error's message.
# - compute ops are called through rt_backend_OP (runtime/rt_backend_call.c, which
#   checks their arguments), never through b->ops directly.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$root" || exit 99
fail=0
bad() { echo "layering: $*"; fail=1; }

check() { # dir pattern allowed-regex description
  local dir="$1" pat="$2" allow="$3" what="$4"
  [ -d "$dir" ] || return 0
  while IFS= read -r hit; do
    file="${hit%%:*}"
    text="${hit#*:*:}"
    # comments do not count
    if echo "$text" | grep -Eq '^[[:space:]]*(\*|/\*|//)'; then continue; fi
    if [ -n "$allow" ] && echo "$file" | grep -Eq "$allow"; then continue; fi
    bad "$what: $hit"
  done < <(grep -rnE --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' "$pat" "$dir" 2>/dev/null)
}

inc='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]'
# A header is matched by its file name after any path ("kl.h", "../kernel/lang/kl.h").
p='([^">]*/)?'
check runtime "${inc}${p}zmq\.h" "" "runtime includes ZeroMQ"
check runtime "${inc}${p}(mg|kl|fm|jk)(_[a-z0-9_]*)?\.h" "" "runtime includes a kernel/magics header"
check runtime "${inc}openssl/" "^runtime/data/rt_sha256\.c$|^runtime/dist/rt_dist_meet_frame\.c$" "runtime includes OpenSSL"
check runtime "${inc}${p}jansson\.h" "^runtime/ckpt/|^runtime/results/|^runtime/store/rt_store_(ckpt|mirror)\.c$" "runtime includes jansson"
check magics "${inc}(${p}zmq\.h|openssl/)" "" "magics includes ZeroMQ/OpenSSL"
check magics "${inc}${p}(kl|fm|jk)(_[a-z0-9_]*)?\.h" "" "magics includes a kernel header"
check kernel "${inc}${p}(cuda|cudnn|cublas)[a-z_]*\.h" "" "kernel includes CUDA"
check magics "${inc}${p}(cuda|cudnn|cublas)[a-z_]*\.h" "" "magics includes CUDA"
# A backend's headers (runtime/cpu/*.h, runtime/cuda/*.h) are the runtime's own.
while IFS= read -r hdr; do
  hname="$(basename "$hdr")"
  check kernel "${inc}${p}${hname//./\\.}\"" "" "kernel includes a backend header"
  check magics "${inc}${p}${hname//./\\.}\"" "" "magics includes a backend header"
done < <(find runtime/cpu runtime/cuda -name '*.h' -o -name '*.cuh' 2>/dev/null)
check kernel "^[[:space:]]*#[[:space:]]*if(def|ndef)?[[:space:]].*(KILN_CUDA|HAVE_CUDA|__CUDACC__)" "" "CUDA #ifdef outside runtime/cuda"
check magics "^[[:space:]]*#[[:space:]]*if(def|ndef)?[[:space:]].*(KILN_CUDA|HAVE_CUDA|__CUDACC__)" "" "CUDA #ifdef outside runtime/cuda"
check runtime "^[[:space:]]*#[[:space:]]*if(def|ndef)?[[:space:]].*(KILN_CUDA|HAVE_CUDA|__CUDACC__)" "^runtime/cuda/|^runtime/rt_backend\.c$" "CUDA #ifdef outside runtime/cuda"
# magics/ headers other than mg.h (mg_run.h, mg_ckpt.h, ...) are private to magics/.
check kernel "${inc}${p}mg_[a-z0-9_]+\.h" "" "kernel includes a private magics header"
check runtime "${inc}${p}mg_[a-z0-9_]+\.h" "" "runtime includes a private magics header"
# A private header (NAME_internal.h) is included only by files in its own folder; the
# training run (magics/run/) is part of magics/ and may include magics/' own (magics/
# may not include the run's, and a backend under runtime/ not the runtime's).
while IFS= read -r hdr; do
  hname="$(basename "$hdr")"; hdir="$(dirname "$hdr")"
  while IFS= read -r hit; do
    file="${hit%%:*}"
    [ "$(dirname "$file")" = "$hdir" ] && continue
    [ "$hdir" = magics ] && [ "$(dirname "$file")" = magics/run ] && continue
    bad "private header outside its folder: $hit"
  done < <(grep -rnE --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' \
             "${inc}${p}${hname//./\\.}\"" kernel magics runtime 2>/dev/null)
done < <(find kernel magics runtime -name '*_internal.h' 2>/dev/null)
# The training run lives in magics/run/: a run or %train source elsewhere in magics/
# (mg_run*.c, mg_train*.c, the run's checkpoint hook and saver) is out of place.
while IFS= read -r f; do
  bad "a training-run file outside magics/run/: $f"
done < <(find magics -maxdepth 1 \( -name 'mg_run*.[ch]' -o -name 'mg_train*.[ch]' \
           -o -name 'mg_ckpt_hook.c' -o -name 'mg_ckpt_save.c' \) 2>/dev/null | sort)
# Include cycles. Known and not broken yet: the runtime's tensors and backends (a tensor
# is allocated through its backend, whose ops take tensors, and rt_amp_rule.h is shared
# by both); a cycle that takes in any other module, or a new one, fails.
cycles="$(perl "$here/include-cycles.pl" --known rt_tensor.h,rt_backend.h,rt_amp_rule.h \
  . magics runtime)"
st=$?
[ "$st" -le 1 ] || bad "include-cycles.pl failed (status $st)"
while IFS= read -r line; do
  case "$line" in
    "") ;;
    "include cycle: "*) bad "$line" ;;
    *) echo "layering: note: $line" ;;
  esac
done <<<"$cycles"
for d in kernel magics runtime; do
  check "$d" "(^|[^_a-zA-Z0-9])exit[[:space:]]*\(" "^kernel/jk_main\.c$" "exit() outside kernel/jk_main.c"
done
# A runtime failure reaches the user through mg_fail_status, which names the exception
# from its status (rt_status_exception, the one table): an mg_fail call whose arguments
# carry an rt_error's message (re.msg, e->msg) names an exception by hand.
while IFS= read -r hit; do
  bad "mg_fail with an rt_error's message (use mg_fail_status): $hit"
done < <(find kernel magics -name '*.c' -o -name '*.h' 2>/dev/null | sort | xargs -r perl -e '
  undef $/;
  for my $f (@ARGV) {
    open my $fh, "<", $f or next; my $s = <$fh>; close $fh;
    while ($s =~ /\bmg_fail\s*(\((?:[^()]++|(?1))*\))/g) {
      my ($args, $at) = ($1, $-[0]);
      next unless $args =~ /(?:\.|->)msg\b/;
      my $line = 1 + (substr($s, 0, $at) =~ tr/\n//);
      my ($text) = substr($s, rindex($s, "\n", $at) + 1) =~ /^([^\n]*)/;
      print "$f:$line:$text\n";
    }
  }')
# The checked ops: every op rt_backend.h declares an rt_backend_OP for
# ("RT_MUST_USE rt_op_OP rt_backend_OP;"), so a new op is checked once it has one.
checked_ops="$(sed -nE 's/^RT_MUST_USE rt_op_([a-z0-9_]+) rt_backend_\1;$/\1/p' runtime/rt_backend.h |
  paste -sd'|')"
[ -n "$checked_ops" ] || bad "no rt_backend_OP declarations in runtime/rt_backend.h"
for d in kernel magics runtime; do
  check "$d" "ops->($checked_ops)[[:space:]]*\(" "^runtime/(cpu|cuda)/|^runtime/rt_backend_call\.c$" \
    "op called past its argument checks (use rt_backend_OP)"
done

if [ "$fail" = 0 ]; then echo "layering: ok"; fi
exit "$fail"
