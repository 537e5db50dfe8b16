#!/usr/bin/env python3
"""Checks that a Python package's imports go one way: no module imports,
directly or through others, a module that imports it back.

Every `import` and `from ... import` of the package's own modules counts,
at module level and inside functions alike (an import moved into a
function still closes a cycle; it only hides it until the call). Importing
`a.b.c` runs `a.b`'s `__init__` first, so `c` also depends on what that
`__init__` imports from outside `a.b`; a package importing its own
children is not a cycle. The root package is the top of the stack and is
not inherited this way. Imports through `importlib` are not seen.

For vortex it also checks the leaves of the stack (`LEAVES`): modules that
import no module of the package, and must not. The float64 oracle stays
independent of the code it checks, the manifest and the attend contract
are the runtimes' shared bottom, and the role folders' `__init__`s
(`compiler/`, `runtime/`, `semantics/`) import nothing, so that importing
one module of a folder does not import the rest of it (docs/design.md,
"The Python package's import order").

    python3 scripts/check-imports.py [PACKAGE_DIR]   # default: python/vortex

Prints each cycle (its modules, and one import of each edge with its line)
and each leaf that imports a module of the package (or no longer exists),
and exits 1 if there is any; else the module count.
"""
import ast
import os
import sys

# {package: modules that must import none of the package's modules}.
LEAVES = {
    "vortex": [
        "vortex.environment",
        "vortex.compiler",              # the role folders' __init__s
        "vortex.runtime",
        "vortex.semantics",
        "vortex.runtime.attention",     # the attend and decode contract
        "vortex.runtime.manifest",      # the manifest and its validator
        "vortex.runtime.plan",          # the launch plan's description
        "vortex.semantics.reference",   # the float64 numpy oracle
        "vortex.semantics.reference_attention",
    ],
}


def modules(root):
    """{dotted name: path} of every .py under the package dir `root`."""
    top = os.path.dirname(os.path.abspath(root))
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, top)[:-3].replace(os.sep, ".")
                out[name[:-len(".__init__")] if name.endswith(".__init__")
                    else name] = path
    return out


def targets(mods, module, is_pkg, node):
    """The package's modules an import node names (the deepest existing
    one for `from x import y`: y may be a module or a name in x)."""
    pkg = module.split(".")[0]
    names = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module if is_pkg else module.rsplit(".", 1)[0]
            parts = base.split(".")
            base = ".".join(parts[:len(parts) - node.level + 1])
            where = base + ("." + node.module if node.module else "")
        else:
            where = node.module or ""
        names = [where + "." + a.name for a in node.names] + [where]
    out = set()
    for n in names:
        if n != pkg and not n.startswith(pkg + "."):   # another package
            continue
        while n not in mods and "." in n:
            n = n.rsplit(".", 1)[0]
        if n in mods and n != module:
            out.add(n)
    if isinstance(node, ast.ImportFrom) and len(out) > 1:
        out.discard(where)   # `from a import b` with b a module: edge to a.b
    return out


def graph(mods):
    """{module: {imported module: line}}, with the package inits' outside
    imports inherited by their submodules."""
    edges = {}
    for m, path in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        is_pkg = path.endswith("__init__.py")
        edges[m] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in targets(mods, m, is_pkg, node):
                    edges[m].setdefault(t, node.lineno)
    own = {m: dict(e) for m, e in edges.items()}
    for m in mods:
        parts = m.split(".")
        for i in range(2, len(parts)):
            init = ".".join(parts[:i])
            for t, line in own.get(init, {}).items():
                if t != m and not t.startswith(init + "."):
                    edges[m].setdefault(t, (init, line))
    return edges


def cycles(edges):
    """The strongly connected components with more than one module
    (Tarjan's algorithm, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        "python", "vortex")
    if not os.path.isfile(os.path.join(root, "__init__.py")):
        print(f"check-imports: {root} is not a package directory")
        return 2
    mods = modules(root)
    edges = graph(mods)
    found = cycles(edges)
    for comp in found:
        print(f"cycle of {len(comp)} modules: {', '.join(comp)}")
        inside = set(comp)
        for m in comp:
            for t, where in sorted(edges[m].items()):
                if t in inside:
                    via = f" (through {where[0]}'s __init__, line " \
                        f"{where[1]})" if isinstance(where, tuple) else \
                        f" (line {where})"
                    print(f"  {m} -> {t}{via}")
    bad_leaves = 0
    for leaf in LEAVES.get(os.path.basename(os.path.abspath(root)), []):
        if leaf not in mods:
            print(f"leaf {leaf}: no such module (update LEAVES)")
            bad_leaves += 1
            continue
        for t, where in sorted(edges[leaf].items()):
            if not isinstance(where, tuple):
                print(f"leaf {leaf} imports {t} (line {where})")
                bad_leaves += 1
    if found or bad_leaves:
        print(f"check-imports: {len(found)} cycle(s), {bad_leaves} leaf "
              f"problem(s)" if bad_leaves else
              f"check-imports: {len(found)} cycle(s)")
        return 1
    print(f"check-imports: ok ({len(mods)} modules, no cycles)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
