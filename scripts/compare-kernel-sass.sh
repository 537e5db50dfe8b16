#!/usr/bin/env bash
#===- scripts/compare-kernel-sass.sh - per-kernel cubins vs a flow's cubin -===#
#
#   scripts/compare-kernel-sass.sh <per-kernel-dir> <one-cubin-dir>
#
# On a machine with cuobjdump (the GPU machine): for every manifest in
# <per-kernel-dir> with artifacts.cubins (vortex-compile --kernel-cache),
# compares each kernel's SASS in its own cubin with the same kernel's SASS
# in <one-cubin-dir>/<flow>.cubin (a build without the cache), instruction
# by instruction. Prints one line per kernel; exits non-zero on a
# difference or a missing kernel (docs/gpu.md, "Kernel cache").
#
#===----------------------------------------------------------------------===#
set -uo pipefail
KC="$1"
ONE="$2"
CUOBJDUMP="${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}"
sass() { # cubin kernel: the kernel's instructions, addresses and encodings kept
  "$CUOBJDUMP" -sass -fun "$2" "$1" | grep -E '^\s+/\*[0-9a-f]{4,}\*/'
}
rc=0 n=0
for m in "$KC"/*.manifest.json; do
  flow="$(basename "$m" .manifest.json)"
  while read -r kernel file; do
    a="$(sass "$KC/$file" "$kernel")"
    b="$(sass "$ONE/$flow.cubin" "$kernel")"
    if [ -n "$a" ] && [ "$a" = "$b" ]; then
      echo "same  $kernel ($(wc -l <<<"$a") instructions)"
    else
      echo "DIFF  $kernel (per-kernel $(wc -l <<<"$a"), flow cubin $(wc -l <<<"$b"))"
      rc=1
    fi
    n=$((n + 1))
  done < <(python3 -c "import json,sys
for k, f in json.load(open(sys.argv[1]))['artifacts'].get('cubins', {}).items():
    print(k, f)" "$m")
done
echo "$n kernels compared: $([ $rc -eq 0 ] && echo all the same || echo DIFFERENCES)"
exit $rc
