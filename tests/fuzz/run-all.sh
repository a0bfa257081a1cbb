#!/usr/bin/env bash
# Runs every libFuzzer target in tests/fuzz/ for SECONDS each.
#   tests/fuzz/run-all.sh SECONDS [TARGET...]
# Build first:  CC=clang meson setup build-fuzz -Dfuzz=true \
#                 -Db_sanitize=address,undefined -Db_lundef=false
#               ninja -C build-fuzz   (or just the tests/fuzz/fuzz_* targets)
# Environment:
#   FUZZ_BUILD      build directory (default: build-fuzz at the repository root)
#   FUZZ_OUT        where work corpora, logs and crashing inputs go
#                   (default: $FUZZ_BUILD/fuzz-out); crashes: $FUZZ_OUT/artifacts/
#   FUZZ_JOBS       targets run at the same time (default 1)
# The seed corpus (tests/fuzz/corpus/<target>/) is read, never written: new inputs
# go to $FUZZ_OUT/corpus/<target>/. Prints one stats line per target (executions,
# coverage, features) and writes them to $FUZZ_OUT/summary.txt.
# Exit status: 0 when no target found anything, 1 when one crashed, leaked, timed
# out or ran out of memory (its input is kept in $FUZZ_OUT/artifacts/), 2 bad usage.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
secs="${1:-}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
  echo "usage: $0 SECONDS [TARGET...]" >&2
  exit 2
fi
shift
all=(wire connection notebook cell forms model idx image cifar cifar100 svhn pixcsv ckpt http schedule
     history args resume results manifest s3xml s3list archive mlflow)
targets=("${@:-${all[@]}}")
build="${FUZZ_BUILD:-$root/build-fuzz}"
out="${FUZZ_OUT:-$build/fuzz-out}"
jobs="${FUZZ_JOBS:-1}"
mkdir -p "$out/artifacts" "$out/logs"
: > "$out/summary.txt"

# halt_on_error: the first UBSan report is a finding, as an ASan one is.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"

max_len() {
  case "$1" in
    cifar|cifar100) echo 40000 ;;   # members are padded to 3073/3074-byte records
    svhn|pixcsv) echo 16384 ;;
    archive|s3list) echo 16384 ;;
    ckpt|notebook|http) echo 16384 ;;
    *) echo 4096 ;;
  esac
}

run_one() {
  local t="$1" exe="$build/tests/fuzz/fuzz_$1"
  if [ ! -x "$exe" ]; then
    echo "$t: $exe not built" | tee -a "$out/summary.txt"
    return 1
  fi
  mkdir -p "$out/corpus/$t"
  local log="$out/logs/$t.log" rc
  # -timeout: one input running 10 s is a hang; -rss_limit_mb: a leak or a blow-up.
  "$exe" "$out/corpus/$t" "$here/corpus/$t" \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2560 -max_len="$(max_len "$t")" \
    -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" \
    > "$log" 2>&1
  rc=$?
  local last execs cov ft
  last="$(grep -E '^#[0-9]+' "$log" | tail -1)"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")"
  local verdict="ok"
  [ "$rc" -ne 0 ] && verdict="FOUND SOMETHING (exit $rc; see $log and $out/artifacts/$t-*)"
  printf '%-11s %5ss  execs %-10s cov %-6s ft %-6s %s\n' "$t" "$secs" "${execs:-?}" \
    "${cov:-?}" "${ft:-?}" "$verdict" | tee -a "$out/summary.txt"
  if [ "$rc" -ne 0 ]; then
    grep -E 'ERROR|SUMMARY|runtime error|invariant failed|Test unit written' "$log" | head -8 >&2
  fi
  return "$rc"
}

status=0
running=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
    running=$((running - 1))
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit "$status"
