"""Parallax's Python side: exporting PyTorch modules for `parallaxc`.

Run with Debian's interpreter (/usr/bin/python3: torch 1.13, onnx 1.12),
with this folder's parent on the path (PYTHONPATH=python).

    from parallax import register_loss_symbolics, stamp

register_loss_symbolics() lets torch.onnx.export write the standard losses
that torch 1.13 cannot export (nn.MSELoss, nn.BCELoss, nn.L1Loss,
nn.SmoothL1Loss, nn.HuberLoss, cross_entropy with label_smoothing).
stamp(model, path) writes what the compiler needs to train the exported
file exactly like the module (trainable set, tied weights, padding_idx
rows) into its metadata_props: docs/metadata.md.
"""

from ._stamp import HELPER_VERSION, metadata_for, stamp  # noqa: F401
from ._symbolics import register_loss_symbolics  # noqa: F401

__all__ = ["HELPER_VERSION", "metadata_for", "register_loss_symbolics", "stamp"]
