"""Compile a vortex flow to its artifacts and manifest with `vortex-compile`.

    >>> from vortex.compiler import driver
    >>> path = driver.compile("examples/block_sparse_attention.mlir",
    ...                       target="cpu")          # or "sm_90", ...
    >>> path                                         # .../<flow>.manifest.json

`vortex-compile --target=cpu` lowers the flow through `vortex-to-cpu`, emits
an object for the host and links `lib<flow>.so`; a GPU target writes PTX and
a cubin. Both write `<flow>.manifest.json` (docs/manifest.md), the only
thing the runtimes read. Results are cached by a content hash of the IR, the
target, the options and the compiler binary, so compiling the same flow
again costs nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from typing import Optional, Sequence

from ..environment import SetupError, install_prefix, source_root

__all__ = ["ToolMissingError", "VortexCompileError", "cache_dir", "compile",
           "find_tool", "kernel_cache_dir", "kernel_cache_limit"]


class VortexCompileError(RuntimeError):
    """A compile step failed; the message carries the command and the
    tool's output, `diagnostics` the tool's output alone."""

    def __init__(self, message: str, diagnostics: str = "") -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


class ToolMissingError(VortexCompileError, SetupError):
    """vortex-compile or vortex-opt is not installed."""


def find_tool(name: str) -> str:
    """Locate `vortex-compile` or `vortex-opt`: $VORTEX_COMPILE /
    $VORTEX_OPT, else the build tree of the source checkout this package
    runs from ($VORTEX_BUILD_DIR, else <checkout>/build), else the tools
    `pip install` put in the environment (<prefix>/bin), else PATH."""
    if name not in ("vortex-compile", "vortex-opt"):
        raise ValueError(f"unknown tool {name!r}")
    env_name = "VORTEX_" + name.split("-")[1].upper()

    def usable(p):
        return p and os.path.isfile(p) and os.access(p, os.X_OK)

    env = os.environ.get(env_name)
    if env:
        if usable(env):
            return env
        found = shutil.which(env)
        if found:
            return found
        raise ToolMissingError(f"{env_name}={env!r} is not an executable: "
                               f"unset {env_name}, or point it at {name}")
    candidates = []
    root = source_root()
    if root:
        build = os.environ.get("VORTEX_BUILD_DIR",
                               os.path.join(root, "build"))
        candidates.append(os.path.join(build, "bin", name))
    candidates.append(os.path.join(install_prefix(), "bin", name))
    for path in candidates:
        if usable(path):
            return path
    found = shutil.which(name)
    if found:
        return found
    raise ToolMissingError(
        f"{name} not found (looked in {', '.join(candidates)} and PATH): "
        "pip install . in the Vortex checkout (scripts/setup.sh installs "
        f"MLIR 22 first), or set {env_name}")


def _quote(s: str) -> str:
    return s if re.fullmatch(r"[\w@%+=:,./-]+", s) else repr(s)


def run_tool(cmd: Sequence[str], what: str, stdin: Optional[str] = None) -> str:
    try:
        proc = subprocess.run(list(cmd), input=stdin, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    except OSError as err:
        raise VortexCompileError(f"{what}: cannot run {cmd[0]}: {err}") from err
    if proc.returncode != 0:
        raise VortexCompileError(
            f"{what} failed (exit {proc.returncode}): "
            f"{' '.join(_quote(c) for c in cmd)}\n{proc.stderr.strip()}",
            proc.stderr.strip())
    return proc.stdout


def cache_dir() -> str:
    """Where compiled flows are kept: $VORTEX_CACHE_DIR, else
    ~/.cache/vortex/flows."""
    return os.environ.get("VORTEX_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "vortex", "flows")


def kernel_cache_dir() -> str:
    """Where each GPU kernel's PTX and cubin are kept, so a flow edited on
    one side recompiles only the kernels that changed (vortex-compile
    --kernel-cache; docs/gpu.md, "Kernel cache"): $VORTEX_KERNEL_CACHE_DIR,
    else ~/.cache/vortex/kernels."""
    return os.environ.get("VORTEX_KERNEL_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "vortex", "kernels")


def kernel_cache_limit() -> str:
    """The size the kernel cache is trimmed to after each compile, least
    recently used entries first (vortex-compile --kernel-cache-limit: bytes,
    or a number with K, M or G): $VORTEX_KERNEL_CACHE_LIMIT, else 1G."""
    return os.environ.get("VORTEX_KERNEL_CACHE_LIMIT") or "1G"


def _names_option(options: Sequence[str], name: str) -> bool:
    """Whether `options` hold `--name` (or `-name`), with or without a
    value."""
    return any(o.split("=", 1)[0].lstrip("-") == name and o.startswith("-")
               for o in options)


def _tool_identity(path: str) -> str:
    st = os.stat(path)
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


def _read_source(source: str) -> str:
    is_text = "\n" in source or ("vortex.flow" in source
                                 and not os.path.exists(source))
    if is_text:
        return source
    if not os.path.exists(source):
        raise FileNotFoundError(f"no such flow file: {source}")
    with open(source) as f:
        return f.read()


def _manifest_in(directory: str) -> Optional[str]:
    names = [n for n in os.listdir(directory) if n.endswith(".manifest.json")]
    return os.path.join(directory, names[0]) if len(names) == 1 else None


def compile(source: str, target: str = "cpu", out_dir: Optional[str] = None,
            flow: Optional[str] = None, options: Sequence[str] = (),
            use_cache: bool = True) -> str:
    """Compile the flow in `source` (a .mlir path or IR text) for `target`
    ("cpu" or a GPU chip such as "sm_90") and return the manifest's path.

    `flow` picks one flow of a module that holds several. `options` go to
    vortex-compile as they are. Without `out_dir` the result lands in the
    compile cache (`cache_dir()`), keyed by a content hash; a hit costs a
    hash and a directory lookup. For a GPU target the kernels also go
    through the kernel cache (`kernel_cache_dir()`, trimmed to
    `kernel_cache_limit()`, which is not part of the key; a limit named in
    `options` is, like any option) unless `use_cache` is false or `options`
    name a --kernel-cache. Raises VortexCompileError with the tool's
    diagnostics (a bad limit among them, when a compile runs)."""
    text = _read_source(source)
    tool = find_tool("vortex-compile")
    args = [f"--target={target}"] + ([f"--flow={flow}"] if flow else []) + \
        list(options)
    trim = []
    if use_cache and target != "cpu" and not _names_option(options,
                                                           "kernel-cache"):
        args.append(f"--kernel-cache={kernel_cache_dir()}")
        if not _names_option(options, "kernel-cache-limit"):
            trim = [f"--kernel-cache-limit={kernel_cache_limit()}"]
    # The limit shapes the kernel cache, not the output: not in the key.
    key = hashlib.sha256("\0".join(
        [text, *args, _tool_identity(tool)]).encode()).hexdigest()[:24]
    args += trim
    if out_dir is None:
        out_dir = os.path.join(cache_dir(), key)
        if use_cache and os.path.isdir(out_dir):
            found = _manifest_in(out_dir)
            if found:
                return found
    final_dir = out_dir
    os.makedirs(os.path.dirname(os.path.abspath(final_dir)) or ".",
                exist_ok=True)
    # Compile into a fresh directory and move it in place: a concurrent or
    # interrupted compile never leaves a half-written entry.
    work = tempfile.mkdtemp(prefix=".vortex-compile-",
                            dir=os.path.dirname(os.path.abspath(final_dir)))
    try:
        src = os.path.join(work, "flow.mlir")
        with open(src, "w") as f:
            f.write(text)
        out = os.path.join(work, "out")
        run_tool([tool, src, "-o", out, *args], "vortex-compile")
        produced = _manifest_in(out)
        if not produced:
            raise VortexCompileError(f"vortex-compile left no manifest in "
                                     f"{out}")
        if os.path.isdir(final_dir):
            for n in os.listdir(out):
                os.replace(os.path.join(out, n), os.path.join(final_dir, n))
        else:
            try:
                os.replace(out, final_dir)
            except OSError:      # another process won the race
                pass
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # The output directory may hold other flows' artifacts too.
    return os.path.join(final_dir, os.path.basename(produced))
