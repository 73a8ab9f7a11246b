#!/usr/bin/python3
"""Runs the ONNX checker on model files.

  onnx_check.py [--quiet] FILE...      check each model; exit 1 if any fails
  onnx_check.py --non-tensor-io FILE...
      exit 0 only if every model has a sequence, optional, map or sparse-tensor
      typed input or output in its main graph (types the IR cannot hold)

Checking is onnx.checker.check_model (given the path, so external data files
are checked too) plus onnx.shape_inference.infer_shapes(strict_mode=False).
full_check=True is not used: strict shape inference rejects some valid models
with exotic ops. Needs Debian's python3-onnx: run it with /usr/bin/python3.
"""
import sys
import warnings

import numpy as np

# onnx 1.12 predates NumPy 1.24, which removed these aliases.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for _name, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
        if not hasattr(np, _name):
            setattr(np, _name, _type)

import onnx  # noqa: E402
import onnx.checker  # noqa: E402
import onnx.shape_inference  # noqa: E402


def check(path):
    """Returns None if the model passes, else a one-line reason."""
    try:
        onnx.checker.check_model(path)
        model = onnx.load(path, load_external_data=False)
        onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception as e:  # the checker raises several exception types
        return "%s: %s" % (type(e).__name__, " ".join(str(e).split())[:400])
    return None


def non_tensor_io(path):
    """Names of main-graph inputs/outputs whose type is not a dense tensor."""
    graph = onnx.load(path, load_external_data=False).graph
    return [vi.name for vi in list(graph.input) + list(graph.output)
            if vi.type.WhichOneof("value") not in (None, "tensor_type")]


def main(argv):
    quiet = "--quiet" in argv
    files = [a for a in argv if a not in ("--quiet", "--non-tensor-io")]
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    if "--non-tensor-io" in argv:
        missing = 0
        for path in files:
            names = non_tensor_io(path)
            print("%s %s: %s" % ("yes" if names else "no ", path, ", ".join(names)))
            missing += not names
        return 1 if missing else 0
    failed = 0
    for path in files:
        reason = check(path)
        if reason:
            failed += 1
            print("FAIL %s: %s" % (path, reason))
        elif not quiet:
            print("ok   %s" % path)
    print("checked %d models, %d failed" % (len(files), failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
