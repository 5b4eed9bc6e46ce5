#!/usr/bin/env python3
"""Times Kiln on the benchmark models through the `kiln` CLI.

One `kiln run` process per (model, precision, storage): the model is loaded
and compiled once, then run warmup + iters times, the runs separated by
--then, each fed the model's fixed input.npy. Per-run latency comes from the
--stats JSON (runs[i].run_ms: host wall time of one run, which includes the
input upload and output download) or, where the stats lack it, from the
"run N: X ms" lines kiln prints. The first `warmup` runs (command-buffer
recording, first-use costs) are dropped. Scalar fields of the stats document
(load/pass/compile times, dispatch counts, memory, whatever this kiln writes)
are kept under `kiln_stats`, and per-run GPU times, if present (runs[i].gpu_ms),
are summarized under `gpu`. Run 1's output is checked against the exported
output.npy with the issue's tolerance (fp32 1e-3, fp16 2e-2, times
max(1, max|ref|)), so a fast wrong answer cannot pass as a result.

Writes a kiln-bench-v1 document (bench/README.md) with engines named
kiln-vulkan-<storage> (kiln-reference for --backend reference, fp32 only).

Usage: kiln_runner.py --kiln BIN --models-dir DIR --json OUT.json
                      [--models a,b] [--precisions fp32,fp16] [--storages auto,buffer,image]
                      [--backend vulkan|reference] [--iters N] [--warmup N] [--budget-s S]
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402

STORAGES = ["auto", "buffer", "image"]
TOLERANCE = {"fp32": 1e-3, "fp16": 2e-2}
RUN_LINE = re.compile(r"^run (\d+): ([0-9.eE+-]+) ms", re.MULTILINE)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln", default=os.environ.get("KILN_BIN"), help="the kiln binary (default: $KILN_BIN)")
    p.add_argument("--models-dir", required=True, help="export_models.py's --out directory")
    p.add_argument("--json", required=True, help="output kiln-bench-v1 file")
    p.add_argument("--models", default=",".join(bench_common.BENCH_MODELS))
    p.add_argument("--precisions", default="fp32,fp16")
    p.add_argument("--storages", default="auto,buffer,image")
    p.add_argument("--backend", default="vulkan", choices=["vulkan", "reference"])
    p.add_argument("--kiln-arg", action="append", default=[],
                   help="extra argument for every `kiln run` (repeatable, e.g. --kiln-arg=--device --kiln-arg=0)")
    p.add_argument("--warmup", type=int, default=5, help="runs dropped before timing (default %(default)s)")
    p.add_argument("--iters", type=int, default=50, help="timed runs (default %(default)s)")
    p.add_argument("--timeout-s", type=float, default=180.0, help="limit for one kiln process (default %(default)s)")
    p.add_argument("--budget-s", type=float, default=0.0,
                   help="whole-run budget; configurations that would start after it are recorded as skipped (0: none)")
    p.add_argument("--keep-dir", default=None, help="keep each process's stats JSON and log here")
    args = p.parse_args()
    if not args.kiln:
        p.error("no kiln binary: give --kiln or set KILN_BIN")
    if not (os.path.isfile(args.kiln) and os.access(args.kiln, os.X_OK)):
        p.error(f"--kiln {args.kiln}: not an executable file")
    try:
        args.models = bench_common.split_list(args.models, bench_common.export_zoo().ALL_MODELS, "model")
        args.precisions = bench_common.split_list(args.precisions, bench_common.PRECISIONS, "precision")
        args.storages = bench_common.split_list(args.storages, STORAGES, "storage")
    except ValueError as e:
        p.error(str(e))
    if args.iters < 1 or args.warmup < 0:
        p.error("--iters must be >= 1 and --warmup >= 0")
    return args


def kiln_info(kiln):
    """(kiln version, device names) from `kiln info --json`; (None, []) if it fails."""
    try:
        proc = subprocess.run([kiln, "info", "--json"], capture_output=True, text=True, timeout=60)
        info = json.loads(proc.stdout)
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return None, []
    devices = info.get("devices") or []
    return info.get("kiln_version"), [d.get("device_name", "?") for d in devices if isinstance(d, dict)]


def pick_device_name(device_names, kiln_args):
    """The device kiln will use: --device N or NAME among the extra args, else
    the first non-CPU device (Kiln's default prefers a discrete GPU)."""
    if "--device" in kiln_args:
        i = kiln_args.index("--device")
        if i + 1 < len(kiln_args):
            want = kiln_args[i + 1]
            if want.isdigit() and int(want) < len(device_names):
                return device_names[int(want)]
            for name in device_names:
                if want.lower() in name.lower():
                    return name
    gpus = [n for n in device_names if "llvmpipe" not in n.lower() and "lavapipe" not in n.lower()]
    return (gpus or device_names or [None])[0]


def engine_name(backend, storage):
    return "kiln-reference" if backend == "reference" else f"kiln-vulkan-{storage}"


def build_command(args, model_dir, precision, storage, stats_path, output_path):
    input_spec = "input=" + os.path.join(model_dir, "input.npy")
    cmd = [args.kiln, "run", os.path.join(model_dir, "model.onnx"), "--backend", args.backend]
    if args.backend == "vulkan":
        cmd += ["--precision", precision, "--storage", storage]
    cmd += list(args.kiln_arg)
    cmd += ["--stats", stats_path, "--input", input_spec, "--output", "output=" + output_path]
    for _ in range(args.warmup + args.iters - 1):
        cmd += ["--then", "--input", input_spec]
    return cmd


def portable_command(cmd, models_dir, work_dir):
    """The command as the report quotes it: the first run's part (the --then
    repetitions add nothing to read) with $MODELS and $WORK for the paths."""
    first = cmd[:cmd.index("--then")] if "--then" in cmd else cmd
    text = " ".join(shlex.quote(a) for a in ["kiln"] + first[1:])
    text = text.replace(os.path.abspath(models_dir), "$MODELS").replace(os.path.abspath(work_dir), "$WORK")
    repeats = cmd.count("--then")
    return text + (f" --then --input input=... (x{repeats})" if repeats else "")


def run_times(stats, stdout):
    """Per-run wall times (ms) and GPU times (ms, may be empty), in run order."""
    runs = stats.get("runs") if isinstance(stats, dict) else None
    if isinstance(runs, list) and runs and all(isinstance(r, dict) and isinstance(r.get("run_ms"), (int, float))
                                               for r in runs):
        wall = [float(r["run_ms"]) for r in runs]
        gpu = [float(r["gpu_ms"]) for r in runs if isinstance(r.get("gpu_ms"), (int, float))]
        return wall, (gpu if len(gpu) == len(runs) else [])
    # Older or partial stats: the lines `kiln run` prints for every run.
    return [float(m.group(2)) for m in RUN_LINE.finditer(stdout)], []


def scalar_stats(stats):
    """The stats document's top-level numbers and strings (compile times,
    dispatch counts, memory, device...), whatever this kiln writes."""
    if not isinstance(stats, dict):
        return {}
    return {k: v for k, v in stats.items() if isinstance(v, (int, float, str, bool)) and k != "model"}


def check_output(output_path, reference_path, precision):
    import numpy as np

    if not os.path.exists(reference_path):
        return {"reference": reference_path, "ok": None, "error": "no reference output.npy"}
    if not os.path.exists(output_path):
        return {"reference": reference_path, "ok": False, "error": "kiln wrote no output"}
    actual = np.load(output_path).astype(np.float64)
    expected = np.load(reference_path).astype(np.float64)
    if actual.shape != expected.shape:
        return {"reference": reference_path, "ok": False, "error": f"shape {actual.shape} vs {expected.shape}"}
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    err = float(np.max(np.abs(actual - expected))) if expected.size else 0.0
    bound = TOLERANCE[precision] * scale
    ok = bool(err <= bound)  # NaN compares False: never passes
    return {"reference": "export output.npy (PyTorch CPU fp32)", "max_abs_diff": err, "bound": bound, "ok": ok}


def measure(args, model, precision, storage, record, work_dir):
    model_dir = os.path.join(os.path.abspath(args.models_dir), model)
    for f in ("model.onnx", "input.npy"):
        if not os.path.exists(os.path.join(model_dir, f)):
            raise RuntimeError(f"{os.path.join(model_dir, f)} is missing (run export_models.py --out {args.models_dir})")
    tag = f"{model}-{precision}-{storage or args.backend}"
    stats_path = os.path.join(work_dir, tag + ".stats.json")
    output_path = os.path.join(work_dir, tag + ".output.npy")
    for path in (stats_path, output_path):
        if os.path.exists(path):
            os.remove(path)
    cmd = build_command(args, model_dir, precision, storage, stats_path, output_path)
    record["command"] = portable_command(cmd, args.models_dir, work_dir)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout_s)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"kiln did not finish within {args.timeout_s:.0f} s") from None
    record["process_s"] = round(time.monotonic() - start, 3)
    if args.keep_dir:
        with open(os.path.join(work_dir, tag + ".log"), "w") as f:
            f.write(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-5:]
        raise RuntimeError(f"kiln exited with {proc.returncode}: " + " | ".join(tail))
    stats = {}
    if os.path.exists(stats_path):
        try:
            with open(stats_path) as f:
                stats = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            record["stats_error"] = f"unreadable --stats file: {e}"
    wall, gpu = run_times(stats, proc.stdout)
    expected = args.warmup + args.iters
    if len(wall) != expected:
        raise RuntimeError(f"found {len(wall)} run times, expected {expected} (neither --stats runs[].run_ms "
                           "nor 'run N: X ms' lines were complete)")
    record.update(bench_common.summarize(wall[args.warmup:]))
    record["warmup"] = args.warmup
    record["first_run_ms"] = wall[0]
    if gpu:
        record["gpu"] = bench_common.summarize(gpu[args.warmup:])
    record["kiln_stats"] = scalar_stats(stats)
    if isinstance(stats.get("device"), str):
        record["device"] = stats["device"]
    record["check"] = check_output(output_path, os.path.join(model_dir, "output.npy"), precision)


def plan(args):
    """(model, precision, storage) in priority order: fp32 before fp16, buffer
    before image, models in the given order; a budget cuts from the end."""
    if args.backend == "reference":
        return [(m, p, None) for p in args.precisions for m in args.models]
    return [(m, p, s) for p in args.precisions for s in args.storages for m in args.models]


def main():
    args = parse_args()
    version, devices = kiln_info(args.kiln)
    device = "cpu" if args.backend == "reference" else pick_device_name(devices, args.kiln_arg)
    doc = bench_common.new_document("kiln_runner.py")
    doc["host"].update(kiln_version=version, kiln_binary=os.path.abspath(args.kiln), vulkan_devices=devices)
    if args.keep_dir:
        os.makedirs(args.keep_dir, exist_ok=True)
        return run_all(args, doc, device, version, args.keep_dir)
    with tempfile.TemporaryDirectory(prefix="kiln-bench-") as work_dir:
        return run_all(args, doc, device, version, work_dir)


def run_all(args, doc, device, version, work_dir):
    start = time.monotonic()
    failures = 0
    for model, precision, storage in plan(args):
        record = bench_common.new_record(engine_name(args.backend, storage), model, precision, device)
        record.update(batch=1, storage=storage, backend=args.backend, kiln_version=version)
        elapsed = time.monotonic() - start
        if args.budget_s > 0 and elapsed >= args.budget_s:
            bench_common.fail_record(record, "skipped", f"budget: {elapsed:.0f} s of {args.budget_s:.0f} s used")
        elif args.backend == "reference" and precision != "fp32":
            bench_common.fail_record(record, "skipped", "the reference backend runs fp32 only")
        else:
            try:
                measure(args, model, precision, storage, record, work_dir)
            except (RuntimeError, OSError, ValueError) as e:
                failures += 1
                bench_common.fail_record(record, "error", str(e)[:2000])
        doc["records"].append(record)
        bench_common.write_document(args.json, doc)
        label = f"{record['engine']:20s} {model:14s} {precision}"
        if record["status"] == "ok":
            check = record.get("check") or {}
            verdict = {True: "output ok", False: "OUTPUT MISMATCH", None: "output unchecked"}[check.get("ok")]
            print(f"{label}: median {record['median_ms']:8.3f} ms  p10 {record['p10_ms']:8.3f}  "
                  f"p90 {record['p90_ms']:8.3f}  ({record['iters']} iters, process {record['process_s']:.1f} s, "
                  f"{verdict})", flush=True)
        else:
            print(f"{label}: {record['status'].upper()}: {record['error'][:300]}", flush=True)
    print(f"kiln_runner: {len(doc['records'])} records in {time.monotonic() - start:.0f} s -> {args.json}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
