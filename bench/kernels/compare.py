#!/usr/bin/env python3
"""Kiln's per-op micro-benchmarks against PyTorch's, from one GPU run:
kiln_kernel_bench's JSON (--benchmark_out=F --benchmark_out_format=json)
and torch_kernels.py's. Prints a Markdown table: per case and precision,
both times, Kiln's time relative to PyTorch's (below 1: Kiln faster),
Kiln's achieved TFLOP/s or GB/s and, when the run was given peaks, their
fraction of the device's peak.

usage: compare.py KILN_JSON TORCH_JSON"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    kiln = json.load(open(sys.argv[1]))
    torch_rows = {(r["name"], r["precision"]): r for r in json.load(open(sys.argv[2]))}
    print(f"device: {kiln['context'].get('device', '?')}\n")
    print("| case | precision | Kiln µs | PyTorch µs | Kiln / PyTorch | Kiln TFLOP/s or GB/s | of peak |")
    print("|---|---|---|---|---|---|---|")
    for b in kiln["benchmarks"]:
        name, precision = b["name"].split("/")[:2]
        if b.get("error_occurred"):
            print(f"| {name} | {precision} | error: {b.get('error_message', '')} | | | | |")
            continue
        us = b["real_time"] if b["time_unit"] == "us" else b["real_time"] / 1e3
        rate = f"{b['TFLOPs']:.3g} TFLOP/s" if "TFLOPs" in b else f"{b['GBs']:.3g} GB/s"
        peak = f"{b['peak_frac'] * 100:.0f} %" if "peak_frac" in b else ""
        t = torch_rows.get((name, precision))
        tus = f"{t['ms'] * 1e3:.1f}" if t else ""
        ratio = f"{us / (t['ms'] * 1e3):.2f}" if t else ""
        print(f"| {name} | {precision} | {us:.1f} | {tus} | {ratio} | {rate} | {peak} |")


if __name__ == "__main__":
    main()
