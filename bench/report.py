#!/usr/bin/env python3
"""Turns kiln-bench-v1 JSON files into the Markdown of bench/RESULTS.md.

For each precision: a latency table (median ms, p10-p90 in brackets) with one
column per engine, and a ratio table with ratio = kiln median / peer median
for every Kiln engine against every peer engine (below 1: Kiln is faster).
Ratios are taken only between records of the same model and precision
measured on the same device; anything else is left out with a note. Then the
configurations that failed or were skipped, whether Kiln's outputs matched
PyTorch, the environment, and the commands that produced the numbers.

Usage: report.py FILE.json... [--out RESULTS.md] [--invocation "how the run was started"]
Exit status: 0, or 2 when a file is not a valid kiln-bench-v1 document.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402

# Known engines in display order; others follow alphabetically.
ENGINE_ORDER = ["torch-eager", "torch-compile", "torch-compile-reduce-overhead", "kiln-vulkan-buffer",
                "kiln-vulkan-image", "kiln-reference"]
NOISY_SPREAD = 0.25  # (p90 - p10) / median above this marks a latency as noisy


def is_kiln(engine):
    return engine.startswith("kiln-")


def engine_key(engine):
    return (ENGINE_ORDER.index(engine), "") if engine in ENGINE_ORDER else (len(ENGINE_ORDER), engine)


def model_key(model):
    models = bench_common.BENCH_MODELS
    return (models.index(model), "") if model in models else (len(models), model)


def same_device(a, b):
    """Whether two engines' device names mean one device: CUDA and Vulkan
    may spell it differently ("NVIDIA H100 80GB HBM3" / "H100 80GB HBM3")."""
    if not a or not b:
        return False
    a, b = (" ".join(x.lower().replace("nvidia", "").split()) for x in (a, b))
    return a == b or (min(len(a), len(b)) >= 4 and (a in b or b in a))


def fmt_ms(v):
    return f"{v:.3f}" if v < 10 else f"{v:.2f}" if v < 100 else f"{v:.1f}"


def latency_cell(r):
    if r is None:
        return "—"
    if r["status"] != "ok":
        return r["status"]
    cell = f"{fmt_ms(r['median_ms'])} ({fmt_ms(r['p10_ms'])}–{fmt_ms(r['p90_ms'])})"
    if r["median_ms"] > 0 and (r["p90_ms"] - r["p10_ms"]) / r["median_ms"] > NOISY_SPREAD:
        cell += " ~"
    if (r.get("check") or {}).get("ok") is False:
        cell += " ✗"
    return cell


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def collect(docs):
    """(engine, model, precision) -> record; a later file overrides an earlier one."""
    records = {}
    for _, doc in docs:
        for r in doc["records"]:
            records[(r["engine"], r["model"], r["precision"])] = r
    return records


def precision_section(precision, records, notes):
    keys = [k for k in records if k[2] == precision]
    engines = sorted({k[0] for k in keys}, key=engine_key)
    models = sorted({k[1] for k in keys}, key=model_key)
    kiln = [e for e in engines if is_kiln(e)]
    peers = [e for e in engines if not is_kiln(e)]
    out = [f"## {precision}", "", "Median latency in ms, batch 1 (p10–p90 in brackets).", ""]
    out += table(["model"] + engines,
                 [[m] + [latency_cell(records.get((e, m, precision))) for e in engines] for m in models])
    if kiln and peers:
        out += ["", f"Ratio Kiln / peer (kiln median ÷ peer median; below 1 means Kiln is faster), {precision}.", ""]
        rows = []
        for m in models:
            for k in kiln:
                kr = records.get((k, m, precision))
                if not kr or kr["status"] != "ok":
                    continue  # the failures table says why
                cells = []
                for p in peers:
                    pr = records.get((p, m, precision))
                    if not pr or pr["status"] != "ok":
                        cells.append("—")
                    elif not same_device(kr["device"], pr["device"]):
                        cells.append("—")
                        notes.append(f"{m} {precision}: {k} ran on {kr['device']!r}, {p} on {pr['device']!r}; "
                                     "no ratio across devices")
                    else:
                        cells.append(f"{kr['median_ms'] / pr['median_ms']:.2f}×")
                rows.append([m, k] + cells)
        if rows:
            out += table(["model", "kiln engine"] + [f"vs {p}" for p in peers], rows)
        else:
            out.append("No ratios: no Kiln configuration of this precision ran.")
    out.append("")
    return out


def problems_section(records):
    rows = []
    for (engine, model, precision), r in sorted(records.items(), key=lambda kv: (engine_key(kv[0][0]),
                                                                              model_key(kv[0][1]), kv[0][2])):
        check = r.get("check") or {}
        if r["status"] != "ok":
            rows.append([engine, model, precision, r["status"], (r.get("error") or "").splitlines()[0][:200]
                         if r.get("error") else ""])
        elif check.get("ok") is False:
            detail = check.get("error") or f"max|Δ| {check.get('max_abs_diff'):.3g} > bound {check.get('bound'):.3g}"
            rows.append([engine, model, precision, "output mismatch", detail])
    if not rows:
        return ["## Failures", "", "None: every configuration ran" +
                (" and every checked Kiln output matched PyTorch." if any(is_kiln(k[0]) for k in records) else "."),
                ""]
    safe = [[c.replace("|", "\\|") for c in row] for row in rows]
    return ["## Failures, skips and mismatches", ""] + table(["engine", "model", "precision", "status", "detail"],
                                                             safe) + [""]


def environment_section(docs, records, invocation):
    out = ["## How these numbers were made", ""]
    if invocation:
        out += ["Run: `" + invocation + "`", ""]
    for path, doc in docs:
        host = doc.get("host", {})
        devices = sorted({r["device"] for r in doc["records"] if r.get("device")})
        facts = [f"created {doc.get('created_utc', '?')}", "device " + (", ".join(devices) or "?")]
        for key in ("torch_version", "cuda_version", "kiln_version"):
            if host.get(key):
                facts.append(f"{key.replace('_version', '')} {host[key]}")
        out += [f"* `{os.path.basename(path)}` ({doc.get('tool', '?')}): " + "; ".join(facts),
                f"  `{doc.get('command', '?')}`"]
    settings = next((r.get("settings") for r in records.values() if r.get("settings")), None)
    if settings:
        out.append("* PyTorch settings: " + ", ".join(f"{k}={v}" for k, v in sorted(settings.items())))
    examples = {}
    for (engine, _, precision), r in sorted(records.items()):
        if is_kiln(engine) and r.get("command") and (engine, precision) not in examples:
            examples[(engine, precision)] = r["command"]
    for (engine, precision), command in sorted(examples.items()):
        out.append(f"* {engine} {precision}, per model: `{command}`")
    out += ["", "Legend: `~` spread (p90 − p10) over a quarter of the median; `✗` Kiln's output did not match "
            "PyTorch's within the tolerance (fp32 1e-3, fp16 2e-2, times max(1, max|ref|)).", ""]
    return out


def render(docs, invocation=None):
    records = collect(docs)
    notes = []
    out = ["# Kiln vs PyTorch, batch 1", ""]
    precisions = [p for p in bench_common.PRECISIONS if any(k[2] == p for k in records)]
    precisions += sorted({k[2] for k in records} - set(precisions))
    for precision in precisions:
        out += precision_section(precision, records, notes)
    if notes:
        out += ["Notes:", ""] + [f"* {n}" for n in notes] + [""]
    out += problems_section(records)
    out += environment_section(docs, records, invocation)
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", help="kiln-bench-v1 JSON files")
    p.add_argument("--out", help="write the Markdown here too (e.g. bench/RESULTS.md)")
    p.add_argument("--invocation", help="the command that started the whole run, quoted in the report")
    args = p.parse_args()
    docs = []
    for path in args.files:
        try:
            docs.append((path, bench_common.load_document(path)))
        except ValueError as e:
            print(f"report: {e}", file=sys.stderr)
            return 2
    text = render(docs, args.invocation)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
