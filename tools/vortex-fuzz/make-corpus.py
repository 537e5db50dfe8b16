#!/usr/bin/env python3
"""Seed corpus for tools/vortex-fuzz, generated from the repository's IR.

    make-corpus.py OUTDIR [--root ROOT]

Takes every examples/*.mlir and every test/**/*.mlir (each split-input-file
`// -----` section and each split-file `//--- name` part on its own), drops
comment-only lines (RUN/CHECK lines and expected-error annotations), and
writes each distinct section once per stage line that makes sense for it:

  - every section as it is (the `verify` stage: parse, verify, print,
    parse again), which covers the invalid-IR tests;
  - sections with a vortex.flow or vortex ops also through the pipelines
    (`//! cpu`, `//! fuse`, `//! pad`, `//! gpu ...`, `//! config ... | ...`,
    `//! nvvm chip=sm_90`), with a few option variants;
  - sections with a gpu.module through `//! nvvm`.

Files are named by the SHA-1 of their content, so regenerating is
idempotent. The corpus is not kept in git (a few MB); scripts/fuzz.sh
regenerates it before every run.
"""
import argparse
import hashlib
import os
import re
import sys

# Stage lines for sections with vortex ops (see tools/vortex-fuzz/vortex-fuzz.cpp).
FLOW_STAGES = [
    "//! cpu",
    "//! fuse",
    "//! pad",
    "//! gpu",
    "//! fuse | pad | gpu threads=128 ctas-per-sm=2 items-per-iteration=4",
    "//! config group-size=5 topk-val=64 | cpu",
    "//! config group-size=3 reserved-bos=0 reserved-eos=1 topk-ratio=0.5 | fuse | pad | gpu",
    "//! nvvm chip=sm_90",
]
GPU_MODULE_STAGES = ["//! nvvm chip=sm_90", "//! nvvm chip=sm_80"]

SPLIT_INPUT = re.compile(r"^// -----\s*$", re.M)
SPLIT_FILE = re.compile(r"^//--- .*$", re.M)
COMMENT_LINE = re.compile(r"^\s*//.*$")


def sections(text):
    parts = SPLIT_FILE.split(text) if SPLIT_FILE.search(text) else [text]
    for part in parts:
        yield from SPLIT_INPUT.split(part)


def clean(section):
    lines = [l for l in section.splitlines() if not COMMENT_LINE.match(l)]
    # Trailing `// CHECK` comments after code stay: they are harmless.
    return "\n".join(lines).strip() + "\n"


def sources(root):
    for name in sorted(os.listdir(os.path.join(root, "examples"))):
        if name.endswith(".mlir"):
            yield os.path.join(root, "examples", name)
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, "test")):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".mlir"):
                yield os.path.join(dirpath, name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("--root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)

    seen = set()
    written = total_bytes = 0
    for path in sources(args.root):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for section in sections(text):
            body = clean(section)
            if len(body.strip()) < 8:
                continue
            headers = [""]
            if "vortex." in body:
                headers += FLOW_STAGES
            if "gpu.module" in body:
                headers += GPU_MODULE_STAGES
            for header in headers:
                seed = (header + "\n" if header else "") + body
                data = seed.encode()
                digest = hashlib.sha1(data).hexdigest()
                if digest in seen:
                    continue
                seen.add(digest)
                with open(os.path.join(args.outdir, digest), "wb") as out:
                    out.write(data)
                written += 1
                total_bytes += len(data)
    print(f"make-corpus: {written} seeds, {total_bytes // 1024} KiB in "
          f"{args.outdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
