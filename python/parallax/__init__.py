"""Parallax's Python helper: a PyTorch module in, trained weights back.

    import parallax
    parallax.export(model, (x, y), "model.onnx", loss_fn=torch.nn.CrossEntropyLoss())
    # parallaxc compile model.onnx -o train --batch 32; mpirun -np 4 ./train ...
    parallax.load_state_dict(model, "trained.onnx")
    run = parallax.read_run("run")

Pure Python; needs torch and onnx (Debian: /usr/bin/python3 with python3-torch
and python3-onnx). Use it with PYTHONPATH=python or pip install ./python
(docs/python.md).

The building blocks export() uses are public too: register_loss_symbolics()
lets torch.onnx.export write the standard losses torch 1.13 cannot export
(nn.MSELoss, nn.BCELoss, nn.L1Loss, nn.SmoothL1Loss, nn.HuberLoss,
cross_entropy with label_smoothing); stamp(model, path) writes what the
compiler needs to train the file exactly like the module (trainable set,
tied weights, padding_idx rows) into its metadata_props (docs/metadata.md);
check_onnx(path) lists the export pitfalls visible in a file;
export_training(model, example_inputs, path, input_names) is the bare
training-mode export stamp() completes (with or without constant folding).
"""
__version__ = "0.1.0"

from ._stamp import HELPER_VERSION, StampError, export_training, metadata_for, stamp  # noqa: E402
from ._symbolics import register_loss_symbolics  # noqa: E402
from .checks import check_onnx  # noqa: E402
from .export import ExportError, export  # noqa: E402
from .load import LoadError, LoadReport, load_state_dict  # noqa: E402
from .run import read_run  # noqa: E402

__all__ = ["export", "load_state_dict", "read_run", "check_onnx", "register_loss_symbolics",
           "stamp", "metadata_for", "export_training", "ExportError", "LoadError", "LoadReport", "StampError",
           "HELPER_VERSION", "__version__"]
