"""vortex_torch's per-layer compressor checkpoints, as the learned MLA flows
read them from VORTEX_COMPRESSOR_CKPT: `{"state_dict", "config",
"layer_ids"}` (vortex_torch/compressor/train.py), weights under
`scorer.<name>` or `<name>`, one trained row per global layer id of
`layer_ids` (all rows in order when it is empty)."""

from typing import List


class Checkpoint:
    """A checkpoint at `path` for `flow` (named in errors); a ValueError
    unless it was trained per layer."""

    def __init__(self, path: str, flow: str) -> None:
        import torch
        ckpt = torch.load(path, map_location="cpu", weights_only=False)
        self.path, self.state = path, ckpt["state_dict"]
        self.config = ckpt.get("config", {})
        self.layer_ids = [int(x) for x in ckpt.get("layer_ids", [])]
        if not bool(self.config.get("per_layer", True)):
            raise ValueError(f"{path}: {flow} needs a per_layer=True "
                             "compressor checkpoint")

    def has(self, name: str) -> bool:
        return any(k.endswith(name) for k in self.state)

    def weight(self, name: str):
        """The weight `name` as float32 (a KeyError naming it if absent)."""
        for key in (f"scorer.{name}", name):
            if key in self.state:
                return self.state[key].float()
        raise KeyError(f"{self.path}: no 'scorer.{name}' in the checkpoint")

    def rows(self, trained: int) -> List[int]:
        """The global layer id of each of the `trained` rows."""
        return self.layer_ids or list(range(trained))
