"""The flow registry: `@register(name)` and lookups (vortex_torch's
`flow/registry.py`)."""

from __future__ import annotations

from typing import Dict, List, Type

from .flow import vFlow

__all__ = ["RegistryError", "register", "get", "has", "list_keys"]

_REGISTRY: Dict[str, Type[vFlow]] = {}


class RegistryError(Exception):
    """Registering a class that is not a vFlow, a name twice, or looking up
    a name nobody registered."""


def register(name: str):
    """Class decorator registering a vFlow subclass under `name`; the flow
    then traces as `vortex.flow @<name>`."""
    if not isinstance(name, str) or not name:
        raise RegistryError(f"a flow is registered under a non-empty string, "
                            f"got {name!r}")

    def deco(cls):
        if not (isinstance(cls, type) and issubclass(cls, vFlow)):
            raise RegistryError(f"{getattr(cls, '__name__', cls)!r} must "
                                "inherit from vFlow")
        if name in _REGISTRY:
            raise RegistryError(f"Registration name '{name}' already exists "
                                f"(class {_REGISTRY[name].__qualname__})")
        _REGISTRY[name] = cls
        if "_vortex_flow_name" not in cls.__dict__:
            cls._vortex_flow_name = name
        return cls
    return deco


def get(name: str) -> Type[vFlow]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise RegistryError(f"Registration name '{name}' not found") from None


def has(name: str) -> bool:
    return name in _REGISTRY


def list_keys() -> List[str]:
    return list(_REGISTRY)
