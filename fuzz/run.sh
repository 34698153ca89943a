#!/bin/bash
# Runs the libFuzzer targets: fuzz/run.sh [SECONDS] [TARGET ...] (default 60 s each, every target).
# Builds build-fuzz/ with clang, AddressSanitizer and UndefinedBehaviorSanitizer on first use,
# gathers each target's seeds (specs/, tests/e2e/cases/, fuzz/seeds/, fuzz/regressions/) into
# build-fuzz/corpus/TARGET (kept between runs, so later runs start where earlier ones stopped),
# and writes what it finds to fuzz/findings/. A finding becomes a regression test by moving it
# into fuzz/regressions/TARGET/ once fixed (the fuzz-replay test runs every file there).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then targets=(spec_parser config_reader whole_compile tensor_reader unpack_routines); fi

if [[ ! -d build-fuzz ]]; then
  CXX=clang++ meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debugoptimized >/dev/null
fi
# (the build's output only when it fails)
if ! build_log=$(ninja -C build-fuzz $(printf 'fuzz/fuzz_%s ' "${targets[@]}") 2>&1); then
  echo "$build_log" >&2
  exit 1
fi

seed_corpus() {
  local target=$1 dir=build-fuzz/corpus/$1
  mkdir -p "$dir"
  case $target in
    spec_parser) cp specs/*.spg tests/e2e/cases/*.spg tests/e2e/statements/*.spg "$dir/" ;;
    config_reader) cp specs/*.json tests/e2e/cases/*.json "$dir/" ;;
    whole_compile)
      python3 - "$dir" <<'PY'
import glob, os, sys
specs = {os.path.basename(p)[:-4]: p for p in glob.glob('specs/*.spg') + glob.glob('tests/e2e/cases/*.spg') + glob.glob('tests/e2e/statements/*.spg')}
for config in sorted(glob.glob('specs/*.json') + glob.glob('tests/e2e/cases/*.json') + glob.glob('tests/e2e/statements/*.json')):
    stem = os.path.basename(config)[:-5]
    owners = [s for s in specs if stem.startswith(s + '_')]
    if not owners:
        continue
    spec = specs[max(owners, key=len)]
    with open(os.path.join(sys.argv[1], stem + '.txt'), 'w') as out:
        out.write(open(spec).read() + '\n%%\n' + open(config).read())
PY
      ;;
    tensor_reader) cp fuzz/seeds/tensor_reader/* "$dir/" ;;
    unpack_routines) head -c 64 /dev/urandom > "$dir/random" ;;
  esac
  if compgen -G "fuzz/regressions/$target/*" >/dev/null; then cp fuzz/regressions/"$target"/* "$dir/"; fi
}

mkdir -p fuzz/findings
for target in "${targets[@]}"; do
  seed_corpus "$target"
  echo "== $target: $seconds s"
  # -timeout: an input that takes longer (1 s) is a hang (a finding). Wall-clock time: on a machine
  # busy with other work, a starved process overruns it; there, run with FUZZ_TIMEOUT=10 and replay
  # each slow unit it reports alone (build-fuzz/fuzz/fuzz_TARGET FILE) against the 1 s.
  build-fuzz/fuzz/fuzz_"$target" build-fuzz/corpus/"$target" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-1}" \
    -report_slow_units=1 -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1 -artifact_prefix=fuzz/findings/"$target"- 2>&1 |
    grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|stat::slowest_unit_time_sec|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written|Slowest unit)' || true
done
ls fuzz/findings
