"""Shared pieces of the bench/ scripts: the kiln-bench-v1 JSON document,
latency statistics, and access to the model zoo's exporter.

Every script writes the same document (bench/README.md documents it):

    {"schema": "kiln-bench-v1", "tool": ..., "created_utc": ..., "command": ...,
     "host": {...}, "records": [{"engine", "model", "precision", "device",
     "median_ms", "p10_ms", "p90_ms", "min_ms", "iters", "torch_version", ...}]}

Only the standard library is used here, so report.py runs anywhere.
"""
import datetime
import json
import os
import platform
import shlex
import socket
import sys

SCHEMA = "kiln-bench-v1"

# The models of issue 3's speed comparison, in priority order: when a time
# budget runs out, the models at the end are the ones skipped.
BENCH_MODELS = ["mobilenet_v2", "resnet50", "swin_t", "vit_b_16", "convnext_tiny"]
PRECISIONS = ["fp32", "fp16"]

# Fields every record has (None where a failed or skipped config has no value).
REQUIRED_FIELDS = ["engine", "model", "precision", "device", "status", "median_ms", "p10_ms", "p90_ms", "min_ms",
                   "iters", "torch_version"]
STATUSES = ("ok", "error", "skipped")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def export_zoo():
    """The zoo exporter module (tests/models/export_zoo.py): the benchmark
    builds its models exactly as the whole-model tests do."""
    path = os.path.join(REPO_ROOT, "tests", "models")
    if path not in sys.path:
        sys.path.insert(0, path)
    import export_zoo as module
    return module


def known_models():
    """Model names the peers can build: the test zoo's, every torchvision
    classification model, and bench/zoo's encoder lengths (bert_base_s<L>)."""
    zoo = export_zoo()
    names = list(zoo.ALL_MODELS) + ["bert_base"]
    try:
        import torchvision.models as models

        names += [m for m in models.list_models(module=models) if m not in names]
    except (ImportError, AttributeError):
        pass

    class Known(list):
        def __contains__(self, name):
            return list.__contains__(self, name) or zoo.split_length(name)[1] is not None

    return Known(names)


def kiln_version():
    """The project version from the top CMakeLists.txt (peers' documents
    carry it: they are made by this checkout's scripts)."""
    import re

    with open(os.path.join(REPO_ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*kiln[^)]*VERSION\s+([\d.]+)", f.read(), re.IGNORECASE)
    return m.group(1) if m else "unknown"


def git_commit():
    import subprocess

    try:
        return subprocess.run(["git", "-C", REPO_ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def cli_documents(doc, tool):
    """kiln-bench-v1 records -> kiln-bench-cli-v1 documents (the schema of
    `kiln bench`, bench/README.md "Peers"), one per (engine, precision),
    keyed "<engine>-<precision>". Skipped records are left out."""
    out = {}
    for r in doc["records"]:
        if r["status"] == "skipped":
            continue
        key = f"{r['engine']}-{r['precision']}"
        if key not in out:
            host = doc.get("host", {})
            out[key] = {
                "schema": "kiln-bench-cli-v1", "tool": tool, "created_utc": doc["created_utc"],
                "command": ["python3", tool] + shlex.split(doc["command"])[1:],
                "environment": {
                    "kiln_version": kiln_version(), "git_commit": git_commit(), "hostname": host.get("hostname", ""),
                    "backend": r["engine"], "device": {"name": r["device"]} if r["device"] else None,
                    "precision": r["precision"], "storage": None, "coopmat": None, "pipeline": r["engine"],
                    "disabled_passes": [], "plugins": [], "seed": 0, "warmup": r.get("warmup") or 0,
                    "iters": r.get("iters") or 1, "min_time_s": None,
                    "engine": {"name": "pytorch", "version": r.get("torch_version") or "unknown",
                               "cuda": host.get("cuda_version"), "settings": r.get("settings")},
                },
                "models": [],
            }
        ok = r["status"] == "ok"
        wall = None
        if ok:
            median, p10, p90 = r["median_ms"], r["p10_ms"], r["p90_ms"]
            wall = {"count": r["iters"], "median_ms": median, "p10_ms": p10, "p90_ms": p90, "min_ms": r["min_ms"],
                    "max_ms": r.get("max_ms", p90), "mean_ms": r.get("mean_ms", median),
                    "noisy": median > 0 and (p90 - p10) / median > 0.25}
        check = r.get("check") or {}
        base = export_zoo().split_length(r["model"])
        out[key]["models"].append({
            "model": r["model"], "path": "torchvision:" + base[0] if base[0] != "bert_base" else "in-process:" + base[0],
            "sha256": None, "status": "ok" if ok else "error", "error": None if ok else (r.get("error") or "failed"),
            "input_shapes": {}, "nodes": None, "dispatches": 0, "fallbacks": 0, "passes": [],
            "cold_start": {"import_ms": None, "passes_ms": None, "compile_cold": None, "compile_warm": None,
                           "first_run_ms": r.get("first_run_ms") if ok else None},
            "wall": wall, "gpu": None, "noisy": bool(wall and wall["noisy"]), "kernels_gpu_ms": None, "kernels": [],
            "ablation": None, "reference_max_abs_diff": check.get("max_abs_diff"),
        })
    return out


def split_list(text, known, what):
    """"a,b" -> ["a", "b"], each checked against `known`; raises ValueError
    naming the first unknown entry."""
    items = [s.strip() for s in text.split(",") if s.strip()]
    if not items:
        raise ValueError(f"empty {what} list")
    for item in items:
        if item not in known:
            raise ValueError(f"unknown {what} '{item}' (known: {', '.join(known)})")
    return items


def percentile(sorted_values, q):
    """Linear interpolation between closest ranks (numpy's default method)."""
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(times_ms):
    """Latency statistics of the timed iterations (milliseconds)."""
    s = sorted(times_ms)
    return {
        "median_ms": percentile(s, 50),
        "p10_ms": percentile(s, 10),
        "p90_ms": percentile(s, 90),
        "min_ms": s[0] if s else None,
        "max_ms": s[-1] if s else None,
        "mean_ms": sum(s) / len(s) if s else None,
        "iters": len(s),
    }


def new_record(engine, model, precision, device, torch_version=None):
    """A record with every required field present; the caller fills in the
    statistics (summarize) and sets status, or marks it failed."""
    record = {field: None for field in REQUIRED_FIELDS}
    record.update(engine=engine, model=model, precision=precision, device=device, status="ok", error=None,
                  torch_version=torch_version, iters=0)
    return record


def fail_record(record, status, message):
    record["status"] = status
    record["error"] = message
    return record


def new_document(tool):
    return {
        "schema": SCHEMA,
        "tool": tool,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join(shlex.quote(a) for a in [os.path.basename(sys.argv[0])] + sys.argv[1:]),
        "host": {"hostname": socket.gethostname(), "platform": platform.platform(),
                 "python": platform.python_version()},
        "records": [],
    }


def write_document(path, doc):
    """Writes atomically, so a run killed mid-way leaves the last complete
    document (the scripts rewrite it after every record)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def load_document(path):
    """Reads and validates a kiln-bench-v1 document; raises ValueError naming
    the file and the first problem."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: cannot read JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: top level is not an object")
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema is {doc.get('schema')!r}, expected {SCHEMA!r}")
    records = doc.get("records")
    if not isinstance(records, list):
        raise ValueError(f"{path}: 'records' is missing or not a list")
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            raise ValueError(f"{path}: record {i} is not an object")
        missing = [k for k in REQUIRED_FIELDS if k not in r]
        if missing:
            raise ValueError(f"{path}: record {i} lacks {', '.join(missing)}")
        if r["status"] not in STATUSES:
            raise ValueError(f"{path}: record {i} has status {r['status']!r} (expected one of {STATUSES})")
        if r["status"] == "ok" and not isinstance(r["median_ms"], (int, float)):
            raise ValueError(f"{path}: record {i} ({r['engine']} {r['model']} {r['precision']}) is ok "
                             "but has no numeric median_ms")
    return doc
