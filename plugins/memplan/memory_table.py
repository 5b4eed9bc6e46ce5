#!/usr/bin/python3
"""Runs zoo models with `kiln run --stats` and prints the memory-plan table of
plugins/memplan/README.md: per model and input shape, the activation arena
Kiln planned, the live-set lower bound for the chosen order, a greedy
best-fit allocator's arena and the no-reuse total (all from the runtime's
own lifetimes and sizes; see README.md).

  memory_table.py KILN ZOO_DIR [MODEL ...] [--storage buffer|image] [--inplace on|off] [--check]
  memory_table.py KILN ZOO_DIR [MODEL ...] [--storage ...] --inplace-effect

With --storage image the arena holds the image tensors too (when one memory
type serves buffers and images) and two columns give the images' slots
summed and where they live. The transformer runs at seq 8, 64 and 200 in
one process (--then). With
--check the exit status is 1 when a planned arena exceeds 1.05x its bound.
--inplace off plans without in-place writes (planner/inplace.h);
--inplace-effect runs every model both ways and prints the bound and arena
without and with them.
"""
import json
import os
import subprocess
import sys
import tempfile

DYNAMIC = {"transformer_encoder": ["input=1x8x64", "input=1x64x64", "input=1x200x64"]}


def kib(b):
    return f"{b / 1024:,.0f}"


def run_model(kiln, zoo, model, storage, inplace="on"):
    path = os.path.join(zoo, model, "model.onnx")
    with tempfile.TemporaryDirectory() as tmp:
        stats = os.path.join(tmp, "stats.json")
        cmd = [kiln, "run", path, "--backend", "vulkan", "--storage", storage, "--inplace", inplace,
               "--stats", stats]
        for i, shape in enumerate(DYNAMIC.get(model, [None])):
            if i:
                cmd.append("--then")
            if shape:
                cmd += ["--shape", shape]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{model}: {' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
        with open(stats) as f:
            doc = json.load(f)
    order = [p for p in doc["passes"] if p["name"] == "memplan-order"]
    stats = order[-1]["statistics"] if order else {}
    rows = []
    for run in doc["runs"]:
        m = run["memory"]
        shape = ", ".join(f"{k} {v}" for k, v in run["inputs"].items())
        rows.append((model, shape, m))
    return rows, stats


def option(argv, name, default):
    if name not in argv:
        return default
    i = argv.index(name)
    value = argv[i + 1]
    del argv[i:i + 2]
    return value


def inplace_effect(kiln, zoo, models, storage):
    """The bound and arena without and with in-place writes, per run."""
    print("| model | input | bound off KiB | bound on KiB | arena off KiB | arena on KiB | arena on / off | "
          "no reuse off KiB | no reuse on KiB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    ratios = []
    for model in models:
        off, _ = run_model(kiln, zoo, model, storage, "off")
        on, _ = run_model(kiln, zoo, model, storage, "on")
        for (name, shape, a), (_, _, b) in zip(off, on):
            ratio = b["arena_bytes"] / max(a["arena_bytes"], 1)
            ratios.append(ratio)
            print(f"| {name} | {shape} | {kib(a['live_lower_bound'])} | {kib(b['live_lower_bound'])} | "
                  f"{kib(a['arena_bytes'])} | {kib(b['arena_bytes'])} | {ratio:.3f} | "
                  f"{kib(a['no_reuse_bytes'])} | {kib(b['no_reuse_bytes'])} |", flush=True)
    print(f"\narena on / off: {min(ratios):.3f} to {max(ratios):.3f}")
    return 0


def main(argv):
    check = "--check" in argv
    effect = "--inplace-effect" in argv
    argv = [a for a in argv if a not in ("--check", "--inplace-effect")]
    storage = option(argv, "--storage", "buffer")
    inplace = option(argv, "--inplace", "on")
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    kiln, zoo, models = argv[0], argv[1], argv[2:]
    if not models:
        models = sorted(d for d in os.listdir(zoo) if os.path.isfile(os.path.join(zoo, d, "model.onnx")))
    if effect:
        return inplace_effect(kiln, zoo, models, storage)
    # Image storage: the image tensors' slots (no reuse) and whether they
    # share the arena (then they are in every other column) or not.
    images = storage == "image"
    print("| model | input | live-set bound KiB | Kiln arena KiB | Kiln / bound | greedy best-fit KiB | "
          "best-fit / bound | no reuse KiB | no reuse / bound | plan ms |" +
          (" image slots KiB | images |" if images else ""))
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---|" if images else ""))
    worst = 0.0
    orders = []
    for model in models:
        rows, stats = run_model(kiln, zoo, model, storage, inplace)
        orders.append((model, stats))
        for name, shape, m in rows:
            bound = max(m["live_lower_bound"], 1)
            ratio = m["arena_bytes"] / bound
            worst = max(worst, ratio)
            print(f"| {name} | {shape} | {kib(m['live_lower_bound'])} | {kib(m['arena_bytes'])} | {ratio:.3f} | "
                  f"{kib(m['best_fit_bytes'])} | {m['best_fit_bytes'] / bound:.3f} | {kib(m['no_reuse_bytes'])} | "
                  f"{m['no_reuse_bytes'] / bound:.2f} | {m.get('plan_ms', 0):.2f} |" +
                  (f" {kib(m.get('image_bytes', 0))} | {m.get('images', '')} |" if images else ""), flush=True)
    print(f"\nworst Kiln arena / live-set bound: {worst:.3f}")
    print("\nmemplan-order (peak of the graph's order and of the chosen one, dims at the pass's hints):\n")
    print("| model | graph order KiB | memplan order KiB | nodes moved |")
    print("|---|---:|---:|---:|")
    for model, st in orders:
        before = st.get("peak-bytes-at-hint-before", 0)
        after = st.get("peak-bytes-at-hint", 0)
        print(f"| {model} | {kib(before)} | {kib(after)} | {st.get('nodes-moved', 0)} |")
    return 1 if check and worst > 1.05 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
