"""`build_vflow`: instantiate a registered flow, optionally after running a
user's flow file (vortex_torch's `flow/loader.py`)."""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import uuid
from typing import Any, Dict, Optional

from ..frontend.errors import FlowError
from .flow import vFlow
from .registry import RegistryError, get as reg_get, list_keys

__all__ = ["FlowLoadError", "FlowInitError", "build_vflow", "load_module"]


class FlowLoadError(Exception):
    """The user file could not be run, or the name is not registered."""


class FlowInitError(Exception):
    """The constructor arguments do not fit, or the constructor failed."""


def load_module(file_path: str):
    """Run a flow file under a unique module name, so that its
    `@register(...)` decorators run; returns the module. The module is kept
    in sys.modules (tracebacks, inspect and pickling find it there)."""
    if not os.path.isfile(file_path):
        raise FlowLoadError(f"File does not exist: {file_path}")
    # A shipped flow's own file (a module of vortex.flows, imported with
    # vortex): running it again would register its flow twice. A user's
    # file runs again on every load (it may have changed).
    real = os.path.realpath(file_path)
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name.startswith("vortex.flows.") and isinstance(path, str) and \
                os.path.realpath(path) == real:
            return module
    mod_name = f"user_flow_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(mod_name, file_path)
    if spec is None or spec.loader is None:
        raise FlowLoadError(f"Failed to create import spec for: {file_path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[mod_name]
        raise FlowLoadError(f"Failed to import user module {file_path}: "
                            f"{type(e).__name__}: {e}") from e
    return module


def _validate_kwargs(cls: type, init_kwargs: Dict[str, Any]) -> None:
    sig = inspect.signature(cls.__init__)
    try:
        sig.bind_partial(None, **init_kwargs)
    except TypeError as e:
        raise FlowInitError(f"Constructor arguments mismatch for "
                            f"{cls.__qualname__}{sig}: {e}") from e


def build_vflow(selected: str, init_kwargs: Optional[Dict[str, Any]] = None,
                user_file: Optional[str] = None) -> vFlow:
    """The flow registered as `selected`, built with `init_kwargs` (checked
    against its __init__ first); `user_file` is run first so that its
    registrations exist."""
    if user_file:
        load_module(user_file)
    try:
        cls = reg_get(selected)
    except RegistryError as e:
        raise FlowLoadError(f"{e} (available: {list_keys()})") from None
    init_kwargs = dict(init_kwargs or {})
    _validate_kwargs(cls, init_kwargs)
    try:
        return cls(**init_kwargs)
    except Exception as e:
        if isinstance(e, FlowError):
            raise
        raise FlowInitError(f"Failed to instantiate {cls.__qualname__}: "
                            f"{type(e).__name__}: {e}") from e
