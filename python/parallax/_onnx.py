"""onnx, imported so that it works with Debian's onnx 1.12 and NumPy >= 1.24.

onnx 1.12 still refers to np.float, np.int, np.bool and np.object, which
NumPy 1.24 removed: restore them as the builtins they stood for before the
import. Every module of the package imports onnx through here.
"""
import numpy as np

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:
        setattr(np, _alias, _type)

import onnx  # noqa: E402,F401
from onnx import numpy_helper  # noqa: E402,F401
