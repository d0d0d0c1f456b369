#!/usr/bin/env bash
# The statistical quality of `Math.random()` in kernels, as users get it: the numbers a kernel
# returns through the public API (bench/random-kernel-stream.ts: a float64 draw per element on the
# cpu or parallel target, with fixed seeds) as 32-bit words, into TestU01's SmallCrush or Crush, or
# PractRand's RNG_test. Writes bench/results/random-battery-<label>-<battery>.txt: the command, the
# machine, the tool's whole output and how long it ran. CI does not run it (it takes from minutes
# to hours, and the tools are not packaged for Debian): build them, then pass their paths.
#
#   TESTU01=<TestU01 install prefix> bash scripts/random-battery.sh <label> SmallCrush|Crush|BigCrush
#   RNG_TEST=<PractRand's RNG_test>  bash scripts/random-battery.sh <label> PractRand [max bytes, e.g. 16GB]
#
# Environment: SEED (the first call's seed, default 20261126), TARGET (cpu or parallel, default
# cpu), BITS (high or low: which 32 of a draw's 53 bits make the word, default high; see
# bench/random-kernel-stream.ts), NICE (default 10).
#
# Building the tools (sources: github.com/umontreal-simul/TestU01-2009, a fork of PractRand 0.95
# such as github.com/planet36/PractRand):
#   (cd TestU01-2009 && ./configure --prefix=$PWD/install --disable-shared && make && make install)
#   (cd PractRand && make tools/RNG_test)
set -euo pipefail
cd "$(dirname "$0")/.."
label=${1:?usage: random-battery.sh <label> SmallCrush|Crush|BigCrush|PractRand [max bytes]}
battery=${2:?usage: random-battery.sh <label> SmallCrush|Crush|BigCrush|PractRand [max bytes]}
seed=${SEED:-20261126}
target=${TARGET:-cpu}
bits=${BITS:-high}
niceness=${NICE:-10}
stream=(npx tsx bench/random-kernel-stream.ts --seed "$seed" --target "$target" --bits "$bits")

case "$battery" in
  SmallCrush | Crush | BigCrush)
    : "${TESTU01:?set TESTU01 to the install prefix of TestU01 (with include/ and lib/)}"
    tool=$(mktemp -d)/testu01-stdin
    cc -O2 -o "$tool" scripts/testu01-stdin.c -I"$TESTU01/include" -L"$TESTU01/lib" -ltestu01 -lprobdist -lmylib -lm
    test_command=("$tool" "$battery" "ufunc Math.random() ($target, seed $seed, $bits bits)")
    shown="scripts/testu01-stdin $battery"
    ;;
  PractRand)
    : "${RNG_TEST:?set RNG_TEST to the RNG_test executable of PractRand}"
    max=${3:-16GB}
    test_command=("$RNG_TEST" stdin32 -tlmax "$max")
    shown="RNG_test stdin32 -tlmax $max"
    ;;
  *)
    echo "random-battery.sh: unknown battery $battery (SmallCrush, Crush, BigCrush or PractRand)" >&2
    exit 1
    ;;
esac

suffix=$([ "$bits" = high ] && echo "" || echo "-$bits")
out=bench/results/random-battery-${label}-${battery,,}${suffix}.txt
{
  echo "# ${battery} on Math.random() in kernels, through the public API (Philox4x32-10, docs/random.md)"
  echo "# command: SEED=$seed TARGET=$target BITS=$bits bash scripts/random-battery.sh $label $battery ${3:-}"
  echo "#   i.e. nice -n $niceness ${stream[*]} | nice -n $niceness $shown"
  echo "# machine: $(hostname -s), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), load $(cut -d' ' -f1-3 /proc/loadavg), node $(node --version)"
  echo "# started $(date -u +%FT%TZ)"
} > "$out"
start=$(date +%s)
status=0
nice -n "$niceness" "${stream[@]}" | nice -n "$niceness" "${test_command[@]}" >> "$out" 2>&1 || status=$?
echo "# finished $(date -u +%FT%TZ) after $(( $(date +%s) - start )) s, exit status $status" >> "$out"
echo "$out"
