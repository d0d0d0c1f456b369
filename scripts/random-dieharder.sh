#!/usr/bin/env bash
# The statistical quality of the kernels' random stream: dieharder's whole battery (`-a`) on the
# stream bench/random-stream.ts writes (the words float64 draws read, loop iteration after
# iteration), niced. Writes bench/results/random-dieharder-<label>.txt.
#
#   bash scripts/random-dieharder.sh [label] [seed] [draws per iteration]
#
# Needs Debian's `dieharder` (apt-get install -y dieharder). TestU01 and PractRand are not packaged.
set -euo pipefail
cd "$(dirname "$0")/.."
label=${1:-$(hostname -s)}
seed=${2:-20261126}
draws=${3:-1}
out=bench/results/random-dieharder-${label}.txt
{
  echo "# dieharder -g 200 -a on the kernels' random stream (Philox4x32-10, src/compiler/random-stream.ts)"
  echo "# command: npx tsx bench/random-stream.ts --seed ${seed} --draws ${draws} | dieharder -g 200 -a"
  echo "# started $(date -u +%FT%TZ) on $(hostname -s), $(nproc) cores, node $(node --version), dieharder $(dpkg-query -W -f='${Version}' dieharder 2>/dev/null || echo '?')"
} > "$out"
start=$(date +%s)
npx tsx bench/random-stream.ts --seed "$seed" --draws "$draws" | nice -n 10 dieharder -g 200 -a >> "$out" 2>&1 || true
echo "# finished $(date -u +%FT%TZ) after $(( $(date +%s) - start )) s" >> "$out"
echo "$out"
