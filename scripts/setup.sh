#!/usr/bin/env bash
#===- scripts/setup.sh - Install what building and testing Vortex needs ---===#
#
# For Debian 12 (bookworm). Installs only what is missing, so it is safe to run
# again and quick when everything is there:
#   - LLVM/MLIR 22 (llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools,
#     from bookworm-security): libMLIR.so, headers, CMake packages,
#     mlir-tblgen, mlir-opt, FileCheck, not and lit (/usr/lib/llvm-22/bin/lit);
#   - clang-22, the compiler of Debian's libMLIR.so, which Vortex must be
#     built with (the CMakeLists.txt says why), gcc/g++ (torch's C++
#     extensions), CMake >= 3.20 and Ninja (apt's cmake 3.25 and
#     ninja-build, unless a recent enough cmake / a ninja is already on PATH);
#   - python3 with numpy, scikit-build-core (the package's build backend),
#     torch 2.13.0 (pip's wheel, the CPU build is enough) and transformers
#     5.17.0 (with psutil and accelerate), for the tests that use them;
#   - SmolLM2-135M-Instruct's weights (scripts/fetch-smollm2.sh: a 93 MB
#     GGUF into ~/.cache/vortex/models, and the gguf package);
#   - with --sanitizers (or VORTEX_SETUP_SANITIZERS=1) also
#     libclang-rt-22-dev (the ASan/UBSan runtimes and libFuzzer), for
#     scripts/test-sanitizers.sh and scripts/fuzz.sh; llvm-symbolizer comes
#     with llvm-22.
# `apt-get update` runs only when a package has to be installed. Uses sudo
# only when not root.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

sanitizers="${VORTEX_SETUP_SANITIZERS:-0}"
for arg in "$@"; do
  case "$arg" in
    --sanitizers) sanitizers=1 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--sanitizers]" >&2; exit 2 ;;
  esac
done

LLVM_VERSION=22
CMAKE_MIN_VERSION=3.20
TORCH_VERSION=2.13.0
TRANSFORMERS_VERSION=5.17.0

log() { echo "[setup] $*" >&2; }
die() { echo "[setup] error: $*" >&2; exit 1; }

have() { command -v "$1" >/dev/null 2>&1; }

# True if the Debian package is installed.
installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

# True if version $1 >= version $2.
version_ge() {
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

cmake_ok() {
  have cmake || return 1
  local v
  v=$(cmake --version 2>/dev/null | head -n1 | awk '{print $3}')
  [ -n "$v" ] && version_ge "$v" "$CMAKE_MIN_VERSION"
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif have sudo; then
    sudo "$@"
  else
    die "need root or sudo to run: $*"
  fi
}

APT_UPDATED=0
apt_install() {
  [ "$#" -gt 0 ] || return 0
  have apt-get || die "apt-get not found: this script is for Debian 12; install $* by hand"
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends "$@"
}

#--- Debian packages ---------------------------------------------------------
packages=(
  "llvm-${LLVM_VERSION}-dev"
  "libmlir-${LLVM_VERSION}-dev"
  "mlir-${LLVM_VERSION}-tools"
  "llvm-${LLVM_VERSION}-tools"
  "clang-${LLVM_VERSION}"  # the compiler of libMLIR.so: Vortex's too
  python3  # /usr/bin/python3 runs lit
)
if [ "$sanitizers" = 1 ]; then
  packages+=("libclang-rt-${LLVM_VERSION}-dev")
fi
have g++ || packages+=(g++)
have gcc || packages+=(gcc)
cmake_ok || packages+=(cmake)
have ninja || packages+=(ninja-build)

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
apt_install "${missing[@]}"

# apt's cmake (3.25 on Debian 12) suffices; an older one elsewhere: pip's.
if ! cmake_ok; then
  log "cmake >= ${CMAKE_MIN_VERSION} not found; installing it with pip"
  python3 -m pip install --quiet --user cmake || die "cannot install cmake"
  export PATH="$HOME/.local/bin:$PATH"
  cmake_ok || die "cmake >= ${CMAKE_MIN_VERSION} still not on PATH (try \$HOME/.local/bin)"
fi

#--- Python packages ---------------------------------------------------------
if ! python3 -c 'import numpy' >/dev/null 2>&1; then
  log "installing numpy for $(command -v python3)"
  # pip where the Python allows it; Debian's externally managed Python takes
  # python3-numpy instead.
  python3 -m pip install --quiet numpy 2>/dev/null || apt_install python3-numpy
  python3 -c 'import numpy' >/dev/null 2>&1 \
    || die "numpy is not importable by $(command -v python3)"
fi

# scikit-build-core: the build backend of pyproject.toml (pip install
# --no-build-isolation . uses the one installed here).
if ! python3 -c 'import scikit_build_core' >/dev/null 2>&1; then
  log "installing scikit-build-core for $(command -v python3)"
  python3 -m pip install --quiet "scikit-build-core>=0.10" \
    || die "cannot install scikit-build-core with pip"
fi

# torch (the torch-op tests, test/Python/ops/torch_ops_*.py): pip's wheel, pinned.
if ! python3 -c 'import torch' >/dev/null 2>&1; then
  log "installing torch==${TORCH_VERSION} for $(command -v python3)"
  python3 -m pip install --quiet "torch==${TORCH_VERSION}" \
    || die "cannot install torch==${TORCH_VERSION} with pip (an externally" \
           "managed Python needs a virtual environment)"
  python3 -c 'import torch' >/dev/null 2>&1 \
    || die "torch is not importable by $(command -v python3)"
fi

# transformers (test/Python/integrations/integrations_transformers.py: paged|vortex under
# continuous batching), pinned; psutil sizes its paged cache on the CPU.
if ! python3 -c 'import transformers, psutil' >/dev/null 2>&1; then
  log "installing transformers==${TRANSFORMERS_VERSION} for $(command -v python3)"
  python3 -m pip install --quiet "transformers==${TRANSFORMERS_VERSION}" \
    psutil accelerate \
    || die "cannot install transformers==${TRANSFORMERS_VERSION} with pip"
fi
# SmolLM2-135M's real weights (a 93 MB GGUF) and the gguf package: the test
# of the loading path (test/Python/integrations/smollm2_engine.py) and
# bench/accuracy_smollm2.py. Quick when already fetched.
bash "$(dirname "${BASH_SOURCE[0]}")/fetch-smollm2.sh" >/dev/null \
  || die "cannot fetch SmolLM2-135M (scripts/fetch-smollm2.sh)"

#--- Check -------------------------------------------------------------------
LLVM_PREFIX="/usr/lib/llvm-${LLVM_VERSION}"
for f in "$LLVM_PREFIX/lib/cmake/mlir/MLIRConfig.cmake" \
         "$LLVM_PREFIX/lib/libMLIR.so" \
         "$LLVM_PREFIX/bin/mlir-tblgen" "$LLVM_PREFIX/bin/mlir-opt" \
         "$LLVM_PREFIX/bin/FileCheck" "$LLVM_PREFIX/bin/lit"; do
  [ -e "$f" ] || die "$f is missing after the install"
done
have ninja || die "ninja is not on PATH"
have "clang++-${LLVM_VERSION}" || die "clang++-${LLVM_VERSION} is not on PATH"
if [ "$sanitizers" = 1 ]; then
  rt="$LLVM_PREFIX/lib/clang/${LLVM_VERSION}/lib/linux"
  for f in "$LLVM_PREFIX/bin/llvm-symbolizer" \
           "$rt/libclang_rt.asan-x86_64.so" "$rt/libclang_rt.fuzzer-x86_64.a"; do
    [ -e "$f" ] || die "$f is missing after the install"
  done
fi
log "ok: LLVM/MLIR $("$LLVM_PREFIX/bin/llvm-config" --version)," \
    "$(cmake --version | head -n1), ninja $(ninja --version)," \
    "$(clang++-${LLVM_VERSION} --version | head -n1)"
if [ "$sanitizers" = 1 ]; then
  log "ok: sanitizers and libFuzzer"
fi
