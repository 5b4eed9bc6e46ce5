#!/usr/bin/env python3
"""Validates a `kiln bench --json` document against the kiln-bench-cli-v1
schema documented in bench/README.md ("JSON schema kiln-bench-cli-v1").

usage: check_bench_json.py FILE.json [--csv FILE.csv] [--models N] [--ok N]

Exits 0 and prints "ok" when valid; otherwise prints every problem found
(one per line, with the JSON path) and exits 1. --models/--ok also check how
many model records there are and how many have status "ok"; --csv checks the
CSV written by the same run (header and one row per model record).
"""
import argparse
import csv
import json
import re
import sys

SCHEMA = "kiln-bench-cli-v1"
NUM = (int, float)

TOP = {"schema": str, "tool": str, "created_utc": str, "command": list, "environment": dict, "models": list}
ENVIRONMENT = {
    "kiln_version": str, "git_commit": (str, type(None)), "hostname": str, "backend": str,
    "device": (dict, type(None)), "precision": (str, type(None)), "storage": (str, type(None)),
    "coopmat": (str, type(None)), "pipeline": str, "disabled_passes": list, "plugins": list, "seed": int,
    "warmup": int, "iters": (int, type(None)), "min_time_s": (float, int, type(None)),
}
DEVICE = {"name": str, "vendor_id": str, "device_id": str, "driver_name": str, "driver_info": str,
          "driver_version": int, "api_version": str}
MODEL = {
    "model": str, "path": str, "sha256": (str, type(None)), "status": str, "error": (str, type(None)),
    "input_shapes": dict, "nodes": (int, type(None)), "dispatches": int, "fallbacks": int, "passes": list,
    "cold_start": dict, "wall": (dict, type(None)), "gpu": (dict, type(None)), "noisy": bool,
    "kernels_gpu_ms": (float, int, type(None)), "kernels": list,
}
COLD_START = {"import_ms": (float, int, type(None)), "passes_ms": (float, int, type(None)),
              "compile_cold": (dict, type(None)), "compile_warm": (dict, type(None)),
              "first_run_ms": (float, int, type(None))}
COMPILE_VULKAN = {"wall_ms": NUM, "plan_ms": NUM, "kernels_ms": NUM, "upload_ms": NUM, "pipelines": int,
                  "shader_compiles": int, "shader_disk_hits": int, "shader_memory_hits": int,
                  "pipelines_created": int, "pipeline_cache_bytes_loaded": int, "weight_bytes": int}
SUMMARY = {"count": int, "median_ms": NUM, "p10_ms": NUM, "p90_ms": NUM, "min_ms": NUM, "max_ms": NUM,
           "mean_ms": NUM, "noisy": bool}
KERNEL = {"kernel": str, "node": str, "gpu_ms": NUM}
# Optional fields added to v1 (absent in older documents; checked when present).
NUM_OR_NULL = (float, int, type(None))
KERNEL_OPTIONAL = {"bytes": int, "flops": (int, type(None)), "gbps": NUM_OR_NULL, "gflops": NUM_OR_NULL,
                   "roofline": NUM_OR_NULL, "bytes_read": int, "bytes_written": int}
# The compile's shader and pipeline batches and the threads they ran on.
COMPILE_VULKAN_OPTIONAL = {"shaders_ms": NUM, "pipelines_ms": NUM, "compile_threads": int, "slowest_shader": str,
                           "slowest_shader_ms": NUM, "slowest_pipeline": str, "slowest_pipeline_ms": NUM}
# A Kiln Vulkan model's device memory after its first run (null elsewhere);
# the plan's fused kernels and the global memory one run's dispatches moved.
MODEL_OPTIONAL = {"memory": (dict, type(None)), "fused_dispatches": int, "bytes_read": int, "bytes_written": int,
                  # static QDQ as integer kernels or the float graph: {"integer", "reason", "rewritten"}
                  "int8_kernels": (dict, type(None))}
MEMORY = {"device_bytes": int, "activation_bytes": int, "arena_bytes": int, "live_lower_bound": int,
          "no_reuse_bytes": int}
# inplace: in-place elementwise writes; int8_dot: integer GEMMs on packed int8
# dot products and static QDQ as integer kernels ("auto"/"on"/"off"; each
# absent in documents from before its option).
ENVIRONMENT_OPTIONAL = {"peak_gbps": NUM_OR_NULL, "peak_gflops": NUM_OR_NULL, "ablation": bool,
                        "inplace": (str, type(None)), "int8_dot": (str, type(None))}
ABLATION = {"added": (str, type(None)), "passes": list, "status": str, "error": (str, type(None)),
            "nodes": (int, type(None)), "dispatches": int, "wall": (dict, type(None)), "gpu": (dict, type(None)),
            "median_ms": NUM_OR_NULL, "speedup": NUM_OR_NULL, "speedup_vs_none": NUM_OR_NULL}
PASS = {"name": str, "ms": NUM, "committed": bool, "skipped": bool, "statistics": dict}
# Peers (bench/README.md "Peers"): other engines' scripts writing this schema.
ENGINE = {"name": str, "version": str}
CSV_HEADER = ("model,status,backend,device,precision,storage,import_ms,passes_ms,compile_cold_ms,compile_warm_ms,"
              "first_run_ms,wall_median_ms,wall_p10_ms,wall_p90_ms,wall_min_ms,wall_max_ms,wall_mean_ms,"
              "gpu_median_ms,gpu_p10_ms,gpu_p90_ms,iters,noisy,sha256,path,error").split(",")


def check_fields(obj, spec, where, problems):
    if not isinstance(obj, dict):
        problems.append(f"{where}: expected an object, got {type(obj).__name__}")
        return False
    for key, types in spec.items():
        if key not in obj:
            problems.append(f"{where}.{key}: missing")
        elif isinstance(obj[key], bool) and bool not in (types if isinstance(types, tuple) else (types,)):
            problems.append(f"{where}.{key}: expected {types}, got a boolean")
        elif not isinstance(obj[key], types):
            problems.append(f"{where}.{key}: expected {types}, got {type(obj[key]).__name__}")
    return True


def check_summary(s, where, problems):
    if s is None or not check_fields(s, SUMMARY, where, problems):
        return
    try:
        if not (s["min_ms"] <= s["p10_ms"] <= s["median_ms"] <= s["p90_ms"] <= s["max_ms"]):
            problems.append(f"{where}: expected min <= p10 <= median <= p90 <= max, got {s}")
        if s["count"] < 1:
            problems.append(f"{where}.count: expected >= 1")
        noisy = s["median_ms"] > 0 and (s["p90_ms"] - s["p10_ms"]) / s["median_ms"] > 0.25
        if noisy != s["noisy"]:
            problems.append(f"{where}.noisy: {s['noisy']} disagrees with (p90 - p10) / median")
    except (TypeError, KeyError):
        pass  # a missing or mistyped field, already reported


def check_optional(obj, spec, where, problems):
    """check_fields for the optional fields `obj` has."""
    present = {k: t for k, t in spec.items() if isinstance(obj, dict) and k in obj}
    check_fields(obj, present, where, problems)


def close(a, b):
    return abs(a - b) <= 1e-3 * max(abs(a), abs(b), 1e-9)


def check_kernel_rates(k, where, env, problems):
    check_optional(k, KERNEL_OPTIONAL, where, problems)
    try:
        if "bytes" in k and k["bytes"] < 0:
            problems.append(f"{where}.bytes: expected >= 0")
        if k.get("flops") is not None and k["flops"] <= 0:
            problems.append(f"{where}.flops: expected > 0 or null")
        if "gbps" in k and k["gpu_ms"] > 0 and k["gbps"] is not None and \
                not close(k["gbps"], k["bytes"] / (k["gpu_ms"] * 1e6)):
            problems.append(f"{where}.gbps: {k['gbps']} is not bytes / gpu_ms")
        if k.get("gflops") is not None and not close(k["gflops"], k["flops"] / (k["gpu_ms"] * 1e6)):
            problems.append(f"{where}.gflops: {k['gflops']} is not flops / gpu_ms")
        if "roofline" in k:
            has_peak = env.get("peak_gbps") is not None or env.get("peak_gflops") is not None
            if k["roofline"] is not None and not has_peak:
                problems.append(f"{where}.roofline: set without --peak-gbps/--peak-gflops")
            if k["roofline"] is not None and k["roofline"] < 0:
                problems.append(f"{where}.roofline: expected >= 0")
    except (TypeError, KeyError):
        pass  # a missing or mistyped field, already reported


def check_ablation(rows, where, problems):
    if rows is None:
        return
    if not isinstance(rows, list):
        problems.append(f"{where}: expected a list or null")
        return
    for i, a in enumerate(rows):
        w = f"{where}[{i}]"
        if not check_fields(a, ABLATION, w, problems):
            continue
        try:
            if len(a["passes"]) != i:
                problems.append(f"{w}.passes: row {i} must hold a prefix of {i} passes, got {len(a['passes'])}")
            if i and (a["passes"][:-1] != rows[i - 1]["passes"] or a["added"] != a["passes"][-1]):
                problems.append(f"{w}: expected the previous row's passes plus `added`")
            if i == 0 and a["added"] is not None:
                problems.append(f"{w}.added: the first row has no passes, expected null")
            if a["status"] not in ("ok", "error") or (a["status"] == "error") != (a["error"] is not None):
                problems.append(f"{w}: status {a['status']!r} disagrees with error {a['error']!r}")
            if a["status"] == "ok":
                check_summary(a["wall"], f"{w}.wall", problems)
                check_summary(a["gpu"], f"{w}.gpu", problems)
                basis = (a["gpu"] or a["wall"] or {}).get("median_ms")
                if a["median_ms"] is None or basis is None or not close(a["median_ms"], basis):
                    problems.append(f"{w}.median_ms: expected the gpu median, else the wall median")
            prev = rows[i - 1].get("median_ms") if i else None
            if i and a["median_ms"] and prev and (a["speedup"] is None or not close(a["speedup"],
                                                                                      prev / a["median_ms"])):
                problems.append(f"{w}.speedup: expected the previous median / this median")
            if i == 0 and a["speedup"] is not None:
                problems.append(f"{w}.speedup: expected null on the first row")
        except (TypeError, KeyError, IndexError):
            pass  # a missing or mistyped field, already reported


def check_model(m, where, backend, problems, env=None, peer=False):
    if not check_fields(m, MODEL, where, problems):
        return
    if m["status"] not in ("ok", "error"):
        problems.append(f"{where}.status: expected ok or error, got {m['status']!r}")
    if m["status"] == "error":
        if not m["error"]:
            problems.append(f"{where}.error: a failed model must say why")
        return
    if m["error"] is not None:
        problems.append(f"{where}.error: expected null for an ok model")
    # A peer that builds its model in process (PyTorch) has no file to hash.
    if not (peer and m["sha256"] is None) and \
            not (isinstance(m["sha256"], str) and re.fullmatch(r"[0-9a-f]{64}", m["sha256"])):
        problems.append(f"{where}.sha256: expected 64 hex digits, got {m['sha256']!r}")
    for name, shape in m["input_shapes"].items():
        if not (isinstance(shape, str) and re.fullmatch(r"\[(\d+(,\d+)*)?\]", shape)):
            problems.append(f"{where}.input_shapes.{name}: expected '[A,B,...]', got {shape!r}")
    for i, p in enumerate(m["passes"]):
        check_fields(p, PASS, f"{where}.passes[{i}]", problems)
    cs = m["cold_start"]
    if check_fields(cs, COLD_START, f"{where}.cold_start", problems):
        # A peer times what its engine exposes: at least the first run.
        for key in ("first_run_ms",) if peer else ("import_ms", "passes_ms", "first_run_ms"):
            if not isinstance(cs.get(key), NUM) or cs[key] < 0:
                problems.append(f"{where}.cold_start.{key}: expected a time >= 0 for an ok model")
        if backend == "vulkan":
            for key in ("compile_cold", "compile_warm"):
                check_fields(cs.get(key), COMPILE_VULKAN, f"{where}.cold_start.{key}", problems)
                check_optional(cs.get(key), COMPILE_VULKAN_OPTIONAL, f"{where}.cold_start.{key}", problems)
        elif not peer and (not isinstance(cs.get("compile_cold"), dict) or "wall_ms" not in cs["compile_cold"]):
            problems.append(f"{where}.cold_start.compile_cold.wall_ms: missing")
    if m["wall"] is None:
        problems.append(f"{where}.wall: required for an ok model")
    check_summary(m["wall"], f"{where}.wall", problems)
    check_summary(m["gpu"], f"{where}.gpu", problems)
    if "host_overhead" in m:  # added in v1, optional: null exactly where gpu is
        if (m["host_overhead"] is None) != (m["gpu"] is None):
            problems.append(f"{where}.host_overhead: expected a summary exactly where gpu has one")
        check_summary(m["host_overhead"], f"{where}.host_overhead", problems)
    noisy = bool((m["wall"] or {}).get("noisy")) or bool((m["gpu"] or {}).get("noisy"))
    if isinstance(m["noisy"], bool) and m["noisy"] != noisy:
        problems.append(f"{where}.noisy: expected wall.noisy or gpu.noisy ({noisy})")
    check_optional(m, MODEL_OPTIONAL, where, problems)
    if isinstance(m.get("memory"), dict) and check_fields(m["memory"], MEMORY, f"{where}.memory", problems):
        mem = m["memory"]
        if not mem["live_lower_bound"] <= mem["arena_bytes"] <= mem["no_reuse_bytes"]:
            problems.append(f"{where}.memory: expected live_lower_bound <= arena_bytes <= no_reuse_bytes, got {mem}")
        if not mem["arena_bytes"] <= mem["activation_bytes"] <= mem["device_bytes"]:
            problems.append(f"{where}.memory: expected arena_bytes <= activation_bytes <= device_bytes, got {mem}")
    for i, k in enumerate(m["kernels"]):
        if check_fields(k, KERNEL, f"{where}.kernels[{i}]", problems):
            check_kernel_rates(k, f"{where}.kernels[{i}]", env or {}, problems)
    if "ablation" in m:
        check_ablation(m["ablation"], f"{where}.ablation", problems)
        if (env or {}).get("ablation") is True and m["ablation"] is None:
            problems.append(f"{where}.ablation: --ablation was given, expected rows")
        elif isinstance(m["ablation"], list) and len(m["ablation"]) != len(m["passes"]) + 1:
            problems.append(f"{where}.ablation: expected {len(m['passes']) + 1} rows (passes + 1), "
                            f"got {len(m['ablation'])}")
    if backend == "vulkan" and m["dispatches"] > 0 and not m["kernels"]:
        problems.append(f"{where}.kernels: a Vulkan model with dispatches must have a per-kernel profile")


def check_document(doc, problems):
    if not check_fields(doc, TOP, "$", problems):
        return
    if doc["schema"] != SCHEMA:
        problems.append(f"$.schema: expected {SCHEMA!r}, got {doc['schema']!r}")
    peer = doc["tool"] != "kiln bench"
    if peer and not doc["tool"].startswith("bench/"):
        problems.append(f"$.tool: expected 'kiln bench' or a peer script under bench/, got {doc['tool']!r}")
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(doc["created_utc"])):
        problems.append(f"$.created_utc: expected YYYY-MM-DDTHH:MM:SSZ, got {doc['created_utc']!r}")
    if not peer and doc["command"][:2] != ["kiln", "bench"]:
        problems.append("$.command: expected the argv, starting with 'kiln', 'bench'")
    if peer and not any(doc["tool"] in str(a) for a in doc["command"][:2]):
        problems.append(f"$.command: expected the argv of {doc['tool']}")
    env = doc["environment"]
    backend = env.get("backend")
    if check_fields(env, ENVIRONMENT, "$.environment", problems):
        if peer:
            check_fields(env.get("engine"), ENGINE, "$.environment.engine", problems)
            if backend in ("vulkan", "reference", "opencl"):
                problems.append(f"$.environment.backend: a peer names its own engine, got {backend!r}")
        elif backend not in ("vulkan", "reference", "opencl"):
            problems.append(f"$.environment.backend: expected vulkan, reference or opencl, got {backend!r}")
        if backend == "vulkan":
            check_fields(env["device"], DEVICE, "$.environment.device", problems)
            if not re.fullmatch(r"\d+\.\d+\.\d+", str((env["device"] or {}).get("api_version"))):
                problems.append("$.environment.device.api_version: expected MAJOR.MINOR.PATCH")
        if (env["iters"] is None) == (env["min_time_s"] is None):
            problems.append("$.environment: exactly one of iters and min_time_s is set")
        check_optional(env, ENVIRONMENT_OPTIONAL, "$.environment", problems)
        for key in ("peak_gbps", "peak_gflops"):
            if isinstance(env.get(key), NUM) and env[key] <= 0:
                problems.append(f"$.environment.{key}: expected > 0 or null")
    for i, m in enumerate(doc["models"]):
        check_model(m, f"$.models[{i}]", backend, problems, env if isinstance(env, dict) else {}, peer)


def check_csv(path, doc, problems):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != CSV_HEADER:
        problems.append(f"{path}: header is not {','.join(CSV_HEADER)}")
        return
    models = doc.get("models", [])
    if len(rows) - 1 != len(models):
        problems.append(f"{path}: {len(rows) - 1} rows for {len(models)} models")
        return
    for row, m in zip(rows[1:], models):
        rec = dict(zip(CSV_HEADER, row))
        if len(row) != len(CSV_HEADER) or rec["model"] != m.get("model") or rec["status"] != m.get("status"):
            problems.append(f"{path}: row {row} does not match model {m.get('model')!r}")
        elif m.get("status") == "ok" and abs(float(rec["wall_median_ms"]) - m["wall"]["median_ms"]) > \
                1e-3 * max(1.0, m["wall"]["median_ms"]):
            problems.append(f"{path}: wall_median_ms of {m['model']} differs from the JSON")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json_file")
    ap.add_argument("--csv")
    ap.add_argument("--models", type=int, help="expected number of model records")
    ap.add_argument("--ok", type=int, help="expected number of records with status ok")
    a = ap.parse_args()
    problems = []
    try:
        with open(a.json_file) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{a.json_file}: {e}")
        return 1
    check_document(doc, problems)
    models = doc.get("models", []) if isinstance(doc, dict) else []
    if a.models is not None and len(models) != a.models:
        problems.append(f"$.models: expected {a.models} records, got {len(models)}")
    n_ok = sum(1 for m in models if isinstance(m, dict) and m.get("status") == "ok")
    if a.ok is not None and n_ok != a.ok:
        problems.append(f"$.models: expected {a.ok} with status ok, got {n_ok}")
    if a.csv:
        check_csv(a.csv, doc, problems)
    for p in problems:
        print(p)
    if not problems:
        print("ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
