#!/usr/bin/python3
"""Regenerates the ONNX backend node-test data (model.onnx + test_data_set_0).

Debian's python3-onnx ships the node-test generators but not their output, so
the conformance suite is rebuilt here, in-process, so that two things hold:
the numpy aliases that numpy 1.24 removed (np.float, np.int, np.bool,
np.object) exist again for the generators that still use them, and every
case is generated from np.random.seed(0) (onnx's own exporter seeds before
each export function), so the data is the same on every run.

Usage: generate_data.py [--if-missing] OUTPUT_DIR   (writes OUTPUT_DIR/node/test_*/ ...)
With --if-missing, a complete earlier run (its GENERATED stamp names the same
onnx version) is kept as is.
"""
import argparse
import os
import sys
import time
import warnings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="directory to write node/test_*/ into")
    parser.add_argument("--op-type", default=None, help="only cases whose model contains this op")
    parser.add_argument("--if-missing", action="store_true", help="keep data a previous complete run generated")
    args = parser.parse_args()

    import onnx
    out = os.path.abspath(args.output)
    stamp_path = os.path.join(out, "GENERATED")
    stamp = f"onnx {onnx.__version__} op_type={args.op_type}"
    if args.if_missing and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.readline().strip() == stamp:
                print(f"node test data in {out} is up to date ({stamp}); not regenerating")
                return 0

    import numpy as np
    for alias, builtin in (("float", float), ("int", int), ("bool", bool), ("object", object),
                           ("complex", complex), ("str", str)):
        if alias not in np.__dict__:
            setattr(np, alias, builtin)
    np.random.seed(0)
    warnings.simplefilter("ignore")

    start = time.monotonic()
    # Imported only after the aliases exist: importing the case modules runs
    # the generators.
    from onnx.backend.test import cmd_tools

    os.makedirs(out, exist_ok=True)
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    cmd_tools.generate_data(argparse.Namespace(output=out, op_type=args.op_type))
    node_dir = os.path.join(out, "node")
    count = len([d for d in os.listdir(node_dir) if d.startswith("test_")]) if os.path.isdir(node_dir) else 0
    # A stamp, written last, lets the build skip regeneration when the data
    # is complete.
    with open(stamp_path, "w") as f:
        f.write(f"{stamp}\n{count} cases\n")
    print(f"generated {count} node test cases into {node_dir} in {time.monotonic() - start:.1f} s")
    return 0 if count > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
