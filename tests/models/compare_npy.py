#!/usr/bin/python3
"""Compares two .npy files with Kiln's model tolerance.

Passes when shapes match and max|a - b| <= rtol * max(1, max|b|), with
rtol = 1e-3 for fp32 (the issue's acceptance bar) unless --rtol is given.
Prints the error either way; exits 1 on mismatch.
"""
import argparse
import sys

import numpy as np


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("actual")
    p.add_argument("expected")
    p.add_argument("--rtol", type=float, default=1e-3)
    a = p.parse_args()
    actual, expected = np.load(a.actual), np.load(a.expected)
    if actual.shape != expected.shape:
        print(f"shape mismatch: {actual.shape} vs {expected.shape}")
        return 1
    scale = max(1.0, float(np.max(np.abs(expected))) if expected.size else 1.0)
    err = float(np.max(np.abs(actual.astype(np.float64) - expected.astype(np.float64)))) if expected.size else 0.0
    ok = err <= a.rtol * scale
    print(f"{'match' if ok else 'MISMATCH'}: max|delta| = {err:.3g}, bound = {a.rtol * scale:.3g} "
          f"(rtol {a.rtol} x max(1, max|ref|) = {scale:.3g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
