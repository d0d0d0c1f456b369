#!/usr/bin/env bash
# Builds the wheels that bench/peers/dask_zarr.py needs on a machine without network (the GPU host:
# CPython 3.12 with NumPy and Numba but no Dask or zarr-python), for bench/cluster.ts --wheels DIR.
#
#   bash bench/peers/dask-wheelhouse.sh OUT_DIR PYTHON3.12 NUMCODECS_GIT C_BLOSC_GIT ZARR_GIT
#
# NUMCODECS_GIT, C_BLOSC_GIT and ZARR_GIT are git directories of zarr-developers/numcodecs,
# Blosc/c-blosc and zarr-developers/zarr-python (tags v0.16.5 and v3.1.6 are built; c-blosc at the
# commit numcodecs v0.16.5 pins as its submodule). Pure-Python wheels (dask and its needs) come
# through pip's configured index. The compiled ones are built here for CPython 3.12:
# - numcodecs 0.16.5 from source, with the interpreter given (its .pyx turned into C by Cython run
#   from its own .py modules, its vlen module compiled against NumPy 2.3.5's headers: NumPy 2's C
#   API is the same across 2.x, so the module runs with the host's newer NumPy);
# - google-crc32c 1.9.0 as its pure-Python part only (zarr-python imports it; its C part needs
#   Google's libcrc32c; the benchmark's arrays have no checksum codec, so it is never called).
# Each package once (pip refuses two versions of one name in a --no-index install).
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd); py312=$2; numcodecs_git=$3; blosc_git=$4; zarr_git=$5
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
pip=(python3 -m pip)

# Pure-Python wheels: dask and what it and zarr-python need beyond the GPU host's packages (kept at
# the versions tested with the Dask peer on the 2-core VM; newer than some of the host's).
"${pip[@]}" download -q --no-deps --only-binary=:all: -d "$out" \
  dask==2026.8.0 donfig==0.8.1.post1 partd==1.4.2 locket==1.0.0 toolz==1.1.0 cloudpickle==3.1.2 \
  typing_extensions==4.16.0

# zarr-python 3.1.6: pure Python, built by its own backend (hatchling), its version given
# (the git directory's tags are not in the archive).
mkdir -p "$work/zarr" "$work/hatch"
git -C "$zarr_git" archive v3.1.6 | tar -x -C "$work/zarr"
"${pip[@]}" install -q --target "$work/hatch" hatchling hatch-vcs
(cd "$work/zarr" && SETUPTOOLS_SCM_PRETEND_VERSION=3.1.6 PYTHONPATH="$work/hatch" python3 -c \
  'import hatchling.build as b, sys; print(b.build_wheel(sys.argv[1]))' "$out" >/dev/null)

# numcodecs 0.16.5 for CPython 3.12.
mkdir -p "$work/numcodecs/c-blosc" "$work/tools" "$work/np"
git -C "$numcodecs_git" archive v0.16.5 | tar -x -C "$work/numcodecs"
git -C "$blosc_git" archive "$(git -C "$numcodecs_git" ls-tree v0.16.5 c-blosc | awk '{print $3}')" | tar -x -C "$work/numcodecs/c-blosc"
"$py312" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q setuptools setuptools-scm py-cpuinfo wheel
# Cython and NumPy have no CPython 3.12 wheels in this machine's index: Cython runs from its .py
# modules (its compiled ones are 3.11's and not loaded by 3.12), and the build asks NumPy only for
# its headers' folder and declarations.
"${pip[@]}" download -q --no-deps --only-binary=:all: -d "$work/dl" cython==3.3.0 numpy==2.3.5
python3 -m zipfile -e "$work"/dl/cython-*.whl "$work/tools"
python3 -m zipfile -e "$work"/dl/numpy-*.whl "$work/np"
mkdir -p "$work/shim/numpy"
echo "def get_include(): return '$work/np/numpy/_core/include'" > "$work/shim/numpy/__init__.py"
cp "$work"/np/numpy/__init__*.pxd "$work/shim/numpy/"  # vlen.pyx's `cimport numpy`
(cd "$work/numcodecs" && SETUPTOOLS_SCM_PRETEND_VERSION=0.16.5 PYTHONPATH="$work/tools:$work/shim" \
  "$work/venv/bin/python" -m pip wheel -q --no-build-isolation --no-deps -w "$work/built" .)
# Its build keeps debug information (9 MB; 1.7 MB without): the wheelhouse travels to the GPU host
# within a 64 MiB limit.
"${pip[@]}" install -q --target "$work/wheeltool" wheel
PYTHONPATH="$work/wheeltool" python3 -m wheel unpack -d "$work/unpacked" "$work"/built/numcodecs-*.whl
strip --strip-debug "$work"/unpacked/numcodecs-*/numcodecs/*.so
PYTHONPATH="$work/wheeltool" python3 -m wheel pack -d "$out" "$work"/unpacked/numcodecs-*

# google-crc32c 1.9.0, its pure-Python part as a py3-none-any wheel.
"${pip[@]}" download -q --no-deps --only-binary=:all: -d "$work/crc" google-crc32c==1.9.0
mkdir -p "$work/crc/x" && python3 -m zipfile -e "$work"/crc/*.whl "$work/crc/x"
rm -rf "$work"/crc/x/google_crc32c/*.so "$work"/crc/x/google_crc32c.libs "$work"/crc/x/*.dist-info/RECORD
sed -i 's/^Tag: .*/Tag: py3-none-any/; s/^Root-Is-Purelib: .*/Root-Is-Purelib: true/' "$work"/crc/x/*.dist-info/WHEEL
PYTHONPATH="$work/wheeltool" python3 -m wheel pack -d "$out" "$work/crc/x"

ls -la "$out"; du -sh "$out"
