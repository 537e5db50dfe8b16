#!/usr/bin/env python3
"""Group the findings of scripts/fuzz.sh by their stack.

    triage.py [--fuzzer BIN] [--minimize DIR] [--timeout S] CRASHDIR|FILE...

Replays every crash-*/leak-*/timeout-*/oom-* file (or the files given) once
with the fuzz target, under the sanitizer options of its build
(<build>/sanitizer-env.sh), reads what it reports and prints one line per
distinct finding: the kind (ASan error, UBSan check, LLVM fatal error,
signal, timeout), where (the first frames in vortex's own sources, else in
MLIR/LLVM), how many files hit it, and the smallest of them. A file that no
longer fails is listed as fixed.

With --minimize DIR, each distinct finding's smallest file is minimized with
libFuzzer's -minimize_crash=1 into DIR/<signature>.mlir (for the fuzz
target's binary built with libFuzzer).
"""
import argparse
import collections
import hashlib
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FRAME = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ in (.+?) (/\S+?|\(\S+\))(:\d+)?(:\d+)?\s*$")
SKIP_FUNCS = ("__sanitizer", "__asan", "__ubsan", "__interceptor", "__lsan",
              "fuzzer::", "LLVMFuzzerTestOneInput", "runOne", "abort",
              "raise", "__pthread_kill", "pthread_kill", "gsignal",
              "llvm::report_bad_alloc_error", "llvm::report_fatal_error",
              "llvm::llvm_unreachable_internal", "malloc", "calloc",
              "realloc", "operator new", "free", "operator delete",
              "llvm::sys::", "__libc_start", "_start", "main",
              "llvm::SmallVectorBase", "__cxa_", "std::__")


def sanitizer_env(fuzzer):
    env = dict(os.environ)
    script = os.path.join(os.path.dirname(os.path.dirname(fuzzer)),
                          "sanitizer-env.sh")
    if os.path.exists(script):
        out = subprocess.run(["bash", "-c", ". %s && env -0" % shlex.quote(script)],
                             capture_output=True).stdout
        for item in out.split(b"\0"):
            if b"=" in item:
                k, v = item.split(b"=", 1)
                env[k.decode()] = v.decode()
    # Symbolized frames, even when the caller's options turned it off.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":symbolize=1"
    return env


def frames(text):
    out = []
    for line in text.splitlines():
        m = FRAME.match(line)
        if m:
            out.append((m.group(2), m.group(3) + (m.group(4) or "")))
    return out


def where(text):
    """The first frames in vortex's sources, else the first interesting ones."""
    fs = [f for f in frames(text) if not f[0].startswith(SKIP_FUNCS)]
    own = [f for f in fs if f[1].startswith(ROOT) and "/tools/vortex-fuzz/" not in f[1]]
    picked = own[:2] if own else fs[:2]
    return " <- ".join("%s (%s)" % (short(fn), os.path.relpath(loc, ROOT)
                                      if loc.startswith(ROOT) else os.path.basename(loc))
                       for fn, loc in picked)


def short(fn):
    fn = re.sub(r"\(.*\)( const)?$", "", fn)
    return fn if len(fn) < 90 else fn[:87] + "..."


def classify(text, rc, timed_out):
    if timed_out:
        return "timeout (replay)", ""
    m = re.search(r"^(\S+?):(\d+):\d+: runtime error: (.*)$", text, re.M)
    if m:
        msg = re.sub(r"(?<![\w.])-?\d+\b", "N", m.group(3))
        return ("UBSan: " + msg[:100], "%s:%s" % (os.path.relpath(m.group(1), ROOT)
                                                  if m.group(1).startswith(ROOT)
                                                  else m.group(1), m.group(2)))
    m = re.search(r"ERROR: AddressSanitizer: ([\w-]+)", text)
    if m:
        return "ASan: " + m.group(1), where(text)
    m = re.search(r"ERROR: LeakSanitizer", text)
    if m:
        return "LeakSanitizer", where(text)
    m = re.search(r"^LLVM ERROR: (.*)$", text, re.M)
    if m:
        return "LLVM ERROR: " + m.group(1)[:100], where(text)
    m = re.search(r"ERROR: libFuzzer: ([\w -]+)", text)
    if m:
        return "libFuzzer: " + m.group(1).strip(), where(text)
    if rc != 0:
        return "exit %d" % rc, where(text)
    return None, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--fuzzer", default=os.path.join(ROOT, "build-asan", "bin",
                                                         "vortex-fuzz"))
    parser.add_argument("--timeout", type=int, default=60)
    parser.add_argument("--minimize", metavar="DIR")
    args = parser.parse_args()

    files = []
    for p in args.paths:
        if os.path.isdir(p):
            files += [os.path.join(p, f) for f in sorted(os.listdir(p))
                      if re.match(r"(crash|leak|timeout|oom)-", f)]
        else:
            files.append(p)
    env = sanitizer_env(args.fuzzer)
    groups = collections.OrderedDict()
    fixed = []
    for f in files:
        timed_out = False
        try:
            r = subprocess.run([args.fuzzer, "-rss_limit_mb=4096", f], env=env,
                               capture_output=True, timeout=args.timeout)
            text, rc = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace"), r.returncode
        except subprocess.TimeoutExpired as e:
            text, rc, timed_out = "", -1, True
        kind, loc = classify(text, rc, timed_out)
        if kind is None:
            fixed.append(f)
            continue
        groups.setdefault((kind, loc), []).append(f)

    print("%d file(s), %d distinct finding(s), %d no longer failing" %
          (len(files), len(groups), len(fixed)))
    for n, ((kind, loc), fs) in enumerate(groups.items(), 1):
        smallest = min(fs, key=os.path.getsize)
        print("\n[%d] %s\n    at:       %s\n    files:    %d\n    smallest: %s (%d bytes)" %
              (n, kind, loc or "?", len(fs), smallest, os.path.getsize(smallest)))
        if args.minimize:
            os.makedirs(args.minimize, exist_ok=True)
            tag = hashlib.sha1(("%s|%s" % (kind, loc)).encode()).hexdigest()[:10]
            out = os.path.join(args.minimize, "finding-%s.mlir" % tag)
            subprocess.run([args.fuzzer, "-minimize_crash=1", "-runs=20000",
                            "-max_total_time=120", "-exact_artifact_path=" + out,
                            smallest], env=env, capture_output=True)
            if os.path.exists(out):
                print("    minimized: %s (%d bytes)" % (out, os.path.getsize(out)))
    for f in fixed:
        print("no longer fails: %s" % f)


if __name__ == "__main__":
    sys.exit(main())
