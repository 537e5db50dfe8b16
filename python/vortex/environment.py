"""What Vortex needs from the machine it runs on, and what it says when a
piece is missing.

Every setup failure is a `SetupError` whose message is one line: what is
missing, then the command that fixes it. `python -m vortex` prints that line
alone and exits 1; scripts/setup.sh installs everything a source checkout
needs (docs/python.md, "Installing").

This module imports nothing of Vortex, so every layer may use it.
"""

from __future__ import annotations

import os
from typing import Optional

__all__ = ["SetupError", "TorchMissingError", "import_torch",
           "install_prefix", "require_cuda", "source_root"]

TORCH_PIN = "2.13.0"


class SetupError(RuntimeError):
    """A missing piece of the machine's setup; the message is one line that
    ends with the command that fixes it."""


class TorchMissingError(SetupError, ImportError):
    """torch is not importable (also an ImportError, so that code which
    treats torch as optional keeps catching it)."""


def import_torch():
    """torch, or a TorchMissingError that says how to install it."""
    try:
        import torch
    except ImportError as err:
        raise TorchMissingError(
            f"torch is not installed ({err}): pip install "
            f"torch=={TORCH_PIN} (the CPU build; a CUDA build for GPU "
            "flows)") from err
    return torch


def require_cuda(what: str):
    """torch with a usable CUDA device for `what` (a flow's name), else a
    SetupError that tells a CPU-only build from a machine without a GPU."""
    torch = import_torch()
    if torch.version.cuda is None:
        raise SetupError(
            f"{what} runs on CUDA, but this torch ({torch.__version__}) is a "
            "CPU-only build: pip install torch (a CUDA build) on the GPU "
            "machine, or compile the flow with target='cpu'")
    if not torch.cuda.is_available():
        raise SetupError(
            f"{what} runs on CUDA, but torch {torch.__version__} sees no "
            "CUDA device: run on a machine with an NVIDIA GPU and driver "
            "(check with nvidia-smi), or compile the flow with target='cpu'")
    return torch


def source_root() -> Optional[str]:
    """The source checkout this package runs from (an editable install or
    python/ on the path), else None (an installed wheel)."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    if (os.path.basename(os.path.dirname(here)) == "python"
            and os.path.isfile(os.path.join(root, "CMakeLists.txt"))
            and os.path.isdir(os.path.join(root, "include", "Vortex"))):
        return root
    return None


def install_prefix() -> str:
    """Where `pip install` put the compiler beside the package (bin/, lib/,
    share/vortex/; pyproject.toml's wheel.install-dir)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "_toolchain")
