"""Build and load the native CUDA launcher of vortex torch ops.

    >>> from vortex.runtime import native
    >>> mod = native.load()          # None when unavailable:
    >>> mod is None and native.unavailable_reason()
    >>> mod.register_cuda_impl("vortex::op", num_args, planner)

`launcher.cpp` (the torch ops' kernels and plan cache), `plan.cpp` (plans,
described by `vortex.runtime.plan`) and `driver.cpp` (the runtime's one
libcuda loader, which `vortex.runtime.driver` uses) are one torch C++
extension. `load` compiles it with `torch.utils.cpp_extension.load` (ninja and
nvcc's CUDA toolkit; no GPU needed to build) into a cache directory,
`$VORTEX_NATIVE_DIR`, else
`~/.cache/vortex/native/<torch.__version__>-<hash>` where the hash covers
the sources, the compiler flags and the Python version. A stamp file written
after a successful build lets later processes import the built module
directly, without running ninja. `python3 -m vortex.runtime.native` (or
scripts/build-native.sh) builds it ahead of time.

`load` returns None, and `unavailable_reason()` says why, when
`VORTEX_NATIVE=0` is set, when torch is not a CUDA build
(`torch.version.cuda is None`), or when the build or import fails (the
compiler's output is kept in the reason). A failure is remembered for the
life of the process, so a broken build is not retried on every call.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import List, Optional

__all__ = ["HEADERS", "SOURCES", "build_directory", "failure_detail", "load",
           "unavailable_reason"]

_HERE = Path(__file__).resolve().parent
SOURCES = [_HERE / n for n in ("launcher.cpp", "plan.cpp", "driver.cpp")]
HEADERS = [_HERE / n for n in ("plan.h", "driver.h")]
_NAME = "vortex_native"
_CFLAGS: List[str] = ["-O3"]
_LDFLAGS: List[str] = ["-ldl"]  # dlopen of libcuda.so.1 (older glibc)
_STAMP = "vortex_native.stamp.json"

_lock = threading.Lock()
_module: Optional[ModuleType] = None
_failure: Optional[str] = None  # a build or import failure, remembered
_reason: Optional[str] = None   # why the last load returned None
_failure_detail: Optional[str] = None  # the build's whole output


def failure_detail() -> Optional[str]:
    """The whole compiler or import output of a failed build (None when
    no build failed)."""
    return _failure_detail


def unavailable_reason() -> Optional[str]:
    """Why the last `load` returned None (None after a successful one)."""
    return _reason


def _build_key() -> str:
    import torch
    h = hashlib.sha256()
    for path in SOURCES + HEADERS:
        h.update(path.read_bytes())
    h.update(repr((_CFLAGS, _LDFLAGS, torch.__version__, torch.version.cuda,
                   sys.implementation.cache_tag)).encode())
    return h.hexdigest()[:16]


def build_directory() -> Path:
    """Where the extension is (or will be) built."""
    env = os.environ.get("VORTEX_NATIVE_DIR")
    if env:
        return Path(env).expanduser()
    import torch
    return (Path.home() / ".cache" / "vortex" / "native" /
            f"{torch.__version__}-{_build_key()}")


def _import_so(path: Path) -> ModuleType:
    # The module's name is the one it was built with (torch may append a
    # version, `vortex_native_v1`), i.e. the file name up to the first dot.
    name = path.name.split(".", 1)[0]
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path),
                                                  loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _load_built(build_dir: Path) -> Optional[ModuleType]:
    """The module of a previous successful build with the same key, or None
    (then the caller builds)."""
    try:
        stamp = json.loads((build_dir / _STAMP).read_text())
        path = Path(stamp["path"])
        if stamp.get("key") != _build_key() or not path.is_file():
            return None
        return _import_so(path)
    except (OSError, ValueError, KeyError, TypeError, ImportError):
        return None


def _build(build_dir: Path, verbose: bool) -> ModuleType:
    from torch.utils import cpp_extension
    build_dir.mkdir(parents=True, exist_ok=True)
    module = cpp_extension.load(
        name=_NAME, sources=[str(p) for p in SOURCES],
        extra_cflags=list(_CFLAGS), extra_include_paths=[str(_HERE)],
        extra_ldflags=list(_LDFLAGS), with_cuda=True,
        build_directory=str(build_dir), verbose=verbose)
    stamp = {"key": _build_key(), "path": str(Path(module.__file__).resolve())}
    tmp = build_dir / (_STAMP + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(stamp))
    os.replace(tmp, build_dir / _STAMP)  # atomic: readers see old or new
    return module


def _unavailable(reason: str) -> None:
    global _reason
    _reason = reason
    return None


def load(build: bool = True, verbose: bool = False) -> Optional[ModuleType]:
    """The native launcher module, building it first if needed (and
    `build`); None when unavailable (see `unavailable_reason`)."""
    global _module, _failure, _reason
    if os.environ.get("VORTEX_NATIVE", "").strip() == "0":
        return _unavailable("disabled by VORTEX_NATIVE=0")
    with _lock:
        if _module is not None:
            _reason = None
            return _module
        if _failure is not None:
            return _unavailable(_failure)
        try:
            import torch
        except ImportError as err:
            return _unavailable(f"torch is not installed ({err}): pip "
                                "install torch (a CUDA build)")
        if torch.version.cuda is None:
            return _unavailable(f"torch {torch.__version__} is a CPU-only "
                                "build: pip install torch (a CUDA build)")
        try:
            build_dir = build_directory()
            module = _load_built(build_dir)
            if module is None and not build:
                return _unavailable(f"not built in {build_dir} (run "
                                    "python3 -m vortex.runtime.native)")
            if module is None:
                module = _build(build_dir, verbose)
        except Exception as err:  # compiler, ninja, import: keep the text
            global _failure_detail
            _failure_detail = f"{type(err).__name__}: {err}"
            first = str(err).strip().splitlines()[:1] or [type(err).__name__]
            _failure = (f"building {SOURCES[0].name} failed ({first[0][:200]}): "
                        "install the CUDA toolkit (nvcc) and ninja, then "
                        "scripts/build-native.sh -v shows the compiler's "
                        "output")
            return _unavailable(_failure)
        _module, _reason = module, None
        return module
