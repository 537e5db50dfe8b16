#!/usr/bin/env python3
"""Checks that the docs are references a reader can follow:

- every relative link `[text](path)` in README.md and docs/**/*.md names a
  file or folder that exists (anchors and web links are not checked);
- every file under docs/measurements/ is cited: its name appears in the
  README, in docs/*.md, in the sources, scripts or tests, or in a cited
  measurement file (a log that an index cites). An uncited log is history:
  it belongs in a commit message, not in the tree.

    python3 scripts/check-docs.py [ROOT]     # ROOT: a checkout (default: this one)

Prints one line per problem and exits 1 if there is any.
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SUFFIXES = (".md", ".py", ".sh", ".test", ".txt", ".cpp", ".h", ".td",
                 ".cfg", ".toml", ".mlir", ".c", ".in")


def tracked(root):
    try:
        out = subprocess.run(["git", "ls-files"], cwd=root, check=True,
                             capture_output=True, text=True).stdout
        files = out.split()
    except (OSError, subprocess.CalledProcessError):
        files = []
    if not files:   # not a git checkout: walk it
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if os.path.isfile(os.path.join(root, f)))


def read(root, f):
    with open(os.path.join(root, f), errors="replace") as fh:
        return fh.read()


def broken_links(root, files):
    for f in files:
        if not f.endswith(".md") or not (f == "README.md" or
                                         f.startswith("docs/")):
            continue
        for n, line in enumerate(read(root, f).splitlines(), 1):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue
                path = target.split("#", 1)[0]
                where = os.path.normpath(os.path.join(os.path.dirname(f),
                                                      path))
                if not os.path.exists(os.path.join(root, where)):
                    yield f"{f}:{n}: broken link to {target}"


def uncited(root, files):
    meas = [f for f in files if f.startswith("docs/measurements/")]
    roots = [f for f in files if not f.startswith("docs/measurements/")
             and f.endswith(CODE_SUFFIXES)]
    reached, frontier = set(), [read(root, f) for f in roots]
    while frontier:
        text = frontier.pop()
        for m in meas:
            if m not in reached and os.path.basename(m) in text:
                reached.add(m)
                frontier.append(read(root, m))
    for m in meas:
        if m not in reached:
            yield f"{m}: cited by nothing (not in the README, docs, sources or a cited log)"


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    files = tracked(root)
    problems = list(broken_links(root, files)) + list(uncited(root, files))
    for p in problems:
        print(p)
    if problems:
        print(f"check-docs: {len(problems)} problem(s)")
        return 1
    print(f"check-docs: ok ({len(files)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
