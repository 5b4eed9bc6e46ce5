#!/usr/bin/python3
"""Regenerates bench/RESULTS.md from the JSON files under bench/results/.

    /usr/bin/python3 bench/results.py [--kiln build/tools/kiln/kiln] [--out bench/RESULTS.md] [RUN_DIR ...]

The runs (default: the directories listed in bench/results/runs.txt, newest
first) each become one section, in this order:
  * the run's NOTES.md, hand-written: the machine, what the run was for, what
    its numbers mean (the only prose; everything else is generated);
  * its kiln-bench-cli-v1 documents — `kiln bench` runs and peers in the same
    schema (bench/ort/ort_peer.mjs, bench/torch_peer.py --cli-json-dir),
    found anywhere under the run directory — through `kiln bench compare`,
    which writes compare.md and compare.svg into the run directory (the chart
    is linked from the report), then per Kiln document the cold start, the
    five most expensive kernels of each model and the --ablation tables;
  * its kiln-bench-v1 documents (bench/kiln_runner.py, torch_peer.py --json)
    through report.py's tables.
Only the standard library is used (and the kiln binary for the charts).
"""
import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_common  # noqa: E402
import report  # noqa: E402

RESULTS = os.path.join(HERE, "results")


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def documents(run_dir):
    """([(path, cli-v1 doc)], [(path, v1 doc)]) of a run directory, sorted by path."""
    cli, v1 = [], []
    for path in sorted(glob.glob(os.path.join(run_dir, "**", "*.json"), recursive=True)):
        doc = load_json(path)
        if not isinstance(doc, dict):
            continue
        if doc.get("schema") == "kiln-bench-cli-v1":
            cli.append((path, doc))
        elif doc.get("schema") == bench_common.SCHEMA:
            v1.append((path, bench_common.load_document(path)))
    return cli, v1


def comparable(docs):
    """Whether `kiln bench compare` has something to put side by side: a
    model measured successfully in at least two of the documents (per-model
    runs, one file each, have none)."""
    seen = {}
    for doc in docs:
        for m in {m["model"] for m in doc.get("models", []) if m.get("status") == "ok"}:
            seen[m] = seen.get(m, 0) + 1
    return any(n >= 2 for n in seen.values())


def fmt(v, digits=3):
    if v is None:
        return "–"
    return f"{v:.{digits}f}" if abs(v) < 100 else f"{v:.1f}"


def kiln_sections(path, doc, rel):
    """Cold start, top kernels and ablation tables of one `kiln bench` document."""
    env = doc["environment"]
    device = (env.get("device") or {}).get("name") or env.get("backend")
    out = [f"#### `{rel}`: {device}, {env.get('precision') or ''} {env.get('storage') or ''}".rstrip(), ""]
    ok = [m for m in doc["models"] if m["status"] == "ok"]
    if ok:
        out += ["Cold start (ms): import, passes, compile with an empty kernel cache and with the cache it filled, "
                "first run; shader compiles in the cold compile.", "",
                "| model | import | passes | compile cold | compile warm | first run | shaders compiled | "
                "max\\|Δ\\| vs output.npy |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for m in ok:
            cs = m["cold_start"]
            cold, warm = cs.get("compile_cold") or {}, cs.get("compile_warm") or {}
            diff = m.get("reference_max_abs_diff")
            out.append(f"| {m['model']} | {fmt(cs.get('import_ms'), 1)} | {fmt(cs.get('passes_ms'), 1)} | "
                       f"{fmt(cold.get('wall_ms'), 1)} | {fmt(warm.get('wall_ms'), 1)} | "
                       f"{fmt(cs.get('first_run_ms'), 1)} | {cold.get('shader_compiles', '–')} | "
                       f"{'–' if diff is None else f'{diff:.2e}'} |")
        out.append("")
    for m in ok:
        kernels = sorted(m.get("kernels") or [], key=lambda k: -k["gpu_ms"])
        total = m.get("kernels_gpu_ms") or 0
        if kernels and total > 0:
            out += [f"Top kernels of {m['model']} ({len(m['kernels'])} dispatches, {fmt(total)} GPU ms in all):", "",
                    "| kernel | node | GPU ms | share | GB/s | GFLOP/s | roofline |", "|---|---|---:|---:|---:|---:|---:|"]
            for k in kernels[:5]:
                roof = k.get("roofline")
                out.append(f"| `{k['kernel']}` | {k['node']} | {fmt(k['gpu_ms'])} | {100 * k['gpu_ms'] / total:.1f}% | "
                           f"{fmt(k.get('gbps'), 1)} | {fmt(k.get('gflops'), 1)} | "
                           f"{'–' if roof is None else f'{100 * roof:.0f}%'} |")
            out.append("")
        rows = m.get("ablation") or []
        if rows:
            out += [f"Ablation of {m['model']} (median ms per pass-pipeline prefix; speed-up = previous ÷ this):", "",
                    "| passes | dispatches | median ms | speed-up | vs none |", "|---|---:|---:|---:|---:|"]
            for a in rows:
                label = "none" if a["added"] is None else "+" + a["added"]
                if a["status"] != "ok":
                    out.append(f"| {label} | – | failed: {a['error']} | | |")
                    continue
                sp, vs = a.get("speedup"), a.get("speedup_vs_none")
                out.append(f"| {label} | {a['dispatches']} | {fmt(a['median_ms'])} | "
                           f"{'–' if sp is None else f'{sp:.2f}×'} | {'–' if vs is None else f'{vs:.2f}×'} |")
            out.append("")
    failed = [m for m in doc["models"] if m["status"] != "ok"]
    if failed:
        out += ["Failed: " + "; ".join(f"{m['model']}: {m['error']}" for m in failed), ""]
    return out


def compare_section(kiln, run_dir, cli_paths, rel_dir):
    """Runs `kiln bench compare` into the run directory; returns its Markdown
    (headings pushed down two levels) and the chart link."""
    cmd = [kiln, "bench", "compare", *cli_paths, "--out", run_dir]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
    with open(os.path.join(run_dir, "compare.md")) as f:
        md = f.read()
    # compare.md links its chart relative to itself; the report links it above.
    md = "\n".join(("##" + line) if line.startswith("#") else line for line in md.splitlines()
                   if not line.startswith("!["))
    return [f"![median latency per model and series]({rel_dir}/compare.svg)", "", md, ""]


def run_section(kiln, run_dir, out_dir):
    rel_dir = os.path.relpath(run_dir, out_dir)
    name = os.path.relpath(run_dir, RESULTS) if run_dir.startswith(RESULTS) else rel_dir
    out = [f"## {name}", ""]
    notes = os.path.join(run_dir, "NOTES.md")
    if os.path.exists(notes):
        with open(notes) as f:
            out += [f.read().rstrip(), ""]
    cli, v1 = documents(run_dir)
    # --ablation documents time many pipelines: their tables below, not a series.
    series = [p for p, doc in cli if doc["environment"].get("ablation") is not True]
    if comparable([doc for _, doc in cli if doc["environment"].get("ablation") is not True]):
        out += ["### Side by side (`kiln bench compare`)", ""] + compare_section(kiln, run_dir, series, rel_dir)
    if cli:
        for path, doc in cli:
            if doc.get("tool") == "kiln bench":
                out += kiln_sections(path, doc, os.path.relpath(path, out_dir))
    if v1:
        body = report.render(v1)
        out += ["### Kiln vs PyTorch (`bench/report.py`, kiln-bench-v1 files)", ""]
        out += [("##" + line) if line.startswith("#") else line for line in body.splitlines()] + [""]
    if not cli and not v1:
        out += ["(no benchmark documents in this directory)", ""]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", help="run directories (default: bench/results/runs.txt)")
    ap.add_argument("--kiln", default=os.path.join(bench_common.REPO_ROOT, "build", "tools", "kiln", "kiln"),
                    help="the kiln binary, for `kiln bench compare` (default: %(default)s)")
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    a = ap.parse_args()
    runs = a.runs
    if not runs:
        with open(os.path.join(RESULTS, "runs.txt")) as f:
            runs = [os.path.join(RESULTS, line.strip()) for line in f if line.strip() and not line.startswith("#")]
    missing = [r for r in runs if not os.path.isdir(r)]
    if missing:
        print(f"results: no such run directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    if not os.access(a.kiln, os.X_OK):
        print(f"results: {a.kiln} is not an executable kiln binary (build kiln_cli or pass --kiln)", file=sys.stderr)
        return 2
    out_dir = os.path.dirname(os.path.abspath(a.out))
    lines = ["# Benchmark results", "",
             "Generated by `/usr/bin/python3 bench/results.py` from the JSON files of the runs in "
             "`bench/results/runs.txt` (newest first); each run's prose is its `NOTES.md`. Do not edit this file: "
             "edit a NOTES.md and regenerate. Speeds are ratios between engines measured in the same run.", ""]
    for run in runs:
        try:
            lines += run_section(a.kiln, os.path.abspath(run), out_dir)
        except (RuntimeError, ValueError, KeyError) as e:
            print(f"results: {run}: {e}", file=sys.stderr)
            return 1
    with open(a.out, "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    print(f"results: wrote {a.out} ({len(runs)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
