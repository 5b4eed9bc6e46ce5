#!/usr/bin/python3
"""Measures RDP on zoo models exported with dynamic axes (SoD² Fig. 8).

For each model this exports OUT/<name>/model.onnx with dynamic axes (batch,
H and W for the CNNs, the sequence for the encoder; torchvision models with
seeded random weights), runs it once with `kiln run --backend reference
--stats` at a small shape, and reads the `rdp` pass's statistics: the share
of values whose shape is fully known (static), symbolic, or nac, before RDP's
first run (after canonicalization) and after its last. With --readme it
replaces the table between the markers in plugins/rdp/README.md.

Exports go to OUT (default /tmp/rdp_zoo), never into the repository.
Run with Debian's interpreter (/usr/bin/python3 has torch and torchvision).

Usage: zoo_stats.py --kiln BUILD/tools/kiln/kiln [--out DIR] [--readme] [MODEL ...]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import warnings

DEFAULT_MODELS = ["resnet18", "mobilenet_v2", "squeezenet1_0", "shufflenet_v2_x1_0", "efficientnet_b0",
                  "transformer_encoder"]
BEGIN, END = "<!-- zoo-stats:begin -->", "<!-- zoo-stats:end -->"


def export(name, path):
    """Writes model.onnx with dynamic axes; returns the --shape flag for a run."""
    import torch
    import torchvision

    torch.manual_seed(0)
    if name == "transformer_encoder":
        layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                                 batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        example, axes, shape = torch.randn(1, 16, 64), {1: "seq"}, "input=1x11x64"
    else:
        model = getattr(torchvision.models, name)(weights=None)
        example, axes, shape = torch.randn(1, 3, 224, 224), {0: "batch", 2: "h", 3: "w"}, "input=1x3x96x128"
    model.eval()
    if not os.path.exists(path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, example, path, opset_version=17, input_names=["input"],
                              output_names=["output"], dynamic_axes={"input": axes, "output": {0: "batch"}
                                                                     if name != "transformer_encoder" else axes})
    return shape


def measure(kiln, model, shape, stats_path):
    subprocess.run([kiln, "run", model, "--backend", "reference", "--shape", shape, "--stats", stats_path],
                   check=True, stdout=subprocess.DEVNULL)
    with open(stats_path) as f:
        doc = json.load(f)
    records = [r for r in find_passes(doc) if r["name"] == "rdp"]
    if not records:
        raise RuntimeError(f"{model}: no rdp pass in the statistics")
    first, last = records[0]["statistics"], records[-1]["statistics"]
    return {
        "values": last["values"],
        "before": (first["values"] - first["values-nac-before"], first["values-nac-before"], first["values"]),
        "static": last["values-static"],
        "symbolic": last["values-symbolic"],
        "nac": last["values-nac"],
        "refined": sum(r["statistics"].get("dims-refined", 0) for r in records),
        "shape_data": last.get("shape-data-values", 0),
        "classes": {k[len("nodes-"):]: v for k, v in last.items() if k.startswith("nodes-")},
        # RDP from the graph inputs alone (first run: before any refinement).
        "alone": (first["rdp-alone-static"], first["rdp-alone-symbolic"], first["rdp-alone-nac"]),
        "mismatches": max(r["statistics"]["rdp-alone-mismatches"] for r in records),
    }


def find_passes(doc):
    """The pass records, wherever the stats document keeps them."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "passes" and isinstance(value, list) and value and "statistics" in value[0]:
                return value
            found = find_passes(value)
            if found:
                return found
    if isinstance(doc, list):
        for item in doc:
            found = find_passes(item)
            if found:
                return found
    return []


def pct(part, whole):
    return f"{100.0 * part / whole:.0f}%" if whole else "-"


def table(rows):
    lines = ["| model | values | static | symbolic | nac | nac before RDP | RDP alone: static / symbolic / nac |"
             " mismatches | dims refined | shape-data values | nodes ISDO / ISDOS / ISVDOS / EDO |",
             "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    for name, s in rows:
        c = s["classes"]
        a, n = s["alone"], sum(s["alone"])
        lines.append(f"| {name} | {s['values']} | {pct(s['static'], s['values'])} | {pct(s['symbolic'], s['values'])}"
                     f" | {pct(s['nac'], s['values'])} | {pct(s['before'][1], s['before'][2])}"
                     f" | {pct(a[0], n)} / {pct(a[1], n)} / {pct(a[2], n)} | {s['mismatches']} | {s['refined']}"
                     f" | {s['shape_data']} | {c.get('ISDO', 0)} / {c.get('ISDOS', 0)} / {c.get('ISVDOS', 0)}"
                     f" ({c.get('ISVDOS-resolved', 0)} resolved) / {c.get('EDO', 0)} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--out", default="/tmp/rdp_zoo")
    ap.add_argument("--readme", action="store_true", help="write the table into plugins/rdp/README.md")
    ap.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    args = ap.parse_args()
    rows = []
    for name in args.models:
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        model = os.path.join(d, "model.onnx")
        shape = export(name, model)
        s = measure(args.kiln, model, shape, os.path.join(d, "stats.json"))
        rows.append((name, s))
        print(f"{name}: {s['values']} values, nac {pct(s['before'][1], s['before'][2])} -> "
              f"{pct(s['nac'], s['values'])}", flush=True)
    text = table(rows)
    print(text)
    if args.readme:
        readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "README.md")
        with open(readme) as f:
            body = f.read()
        if BEGIN not in body or END not in body:
            sys.exit(f"{readme} has no {BEGIN} ... {END} markers")
        body = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: BEGIN + "\n" + text + "\n" + END, body,
                      flags=re.S)
        with open(readme, "w") as f:
            f.write(body)


if __name__ == "__main__":
    main()
