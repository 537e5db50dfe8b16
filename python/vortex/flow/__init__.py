"""vortex_torch's `flow` package: `vFlow`, `register`, `build_vflow`.

    from vortex.flow import vFlow, register    # was: from vortex_torch.flow ...

The shipped flows are in `vortex.flows` (vortex_torch's
`flow.algorithms`); importing it registers them.
"""

from .flow import flow_name, vFlow, vFlowMLA
from .loader import FlowInitError, FlowLoadError, build_vflow, load_module
from .registry import RegistryError, get, has, list_keys, register

__all__ = ["FlowInitError", "FlowLoadError", "RegistryError", "build_vflow",
           "flow_name", "get", "has", "list_keys", "load_module", "register",
           "vFlow", "vFlowMLA"]
