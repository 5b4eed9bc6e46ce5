#!/usr/bin/env python3
"""PyTorch peers for Kiln's benchmark: eager, torch.compile and
torch.compile(mode="reduce-overhead"), batch 1, fp32 and fp16.

Builds each model the way tests/models/export_zoo.py does (torchvision,
weights=None, torch.manual_seed(0), BatchNorm calibrated; nothing is
downloaded), so PyTorch and Kiln run the same networks. Each configuration
(engine, model, precision) is timed on its own: the first call (which
compiles) separately, then warm-up calls, then timed calls, each followed by
a device synchronization, so a time is one whole inference as a caller sees
it. The input stays on the device unless --io host. A configuration that
fails is recorded with its error and the run goes on; the document is
rewritten after every record, so a run killed by an outer timeout still
leaves every finished result.

Order, so that a --budget-s that runs out cuts the least useful part: all
eager configurations first (cheap), then per precision (fp32 first) and model
the reduce-overhead and default compiles.

Writes a kiln-bench-v1 document (bench/README.md) and, with --cli-json-dir,
the same records as kiln-bench-cli-v1 documents (the schema of `kiln bench`,
one per engine and precision). Engines are named torch-eager, torch-compile
and torch-compile-reduce-overhead. Models: the zoo's (tests/models and
bench/zoo names, e.g. bert_base_s128: the encoder at sequence length 128).

Usage: torch_peer.py --json OUT.json [--models a,b] [--precisions fp32,fp16]
                     [--engines eager,compile,compile-reduce-overhead]
                     [--device cuda|cpu] [--iters N] [--warmup N] [--budget-s S]
"""
import argparse
import copy
import gc
import os
import sys
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402

ENGINES = {"eager": "torch-eager", "compile": "torch-compile",
           "compile-reduce-overhead": "torch-compile-reduce-overhead"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True, help="output kiln-bench-v1 file")
    p.add_argument("--cli-json-dir", help="also write one kiln-bench-cli-v1 document per engine and precision "
                                          "(DIR/<engine>-<precision>.json), the schema of `kiln bench`")
    p.add_argument("--models", default=",".join(bench_common.BENCH_MODELS))
    p.add_argument("--precisions", default="fp32,fp16")
    p.add_argument("--engines", default=",".join(ENGINES), help="subset of: " + ", ".join(ENGINES))
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu: a smoke test of the script itself (its times mean nothing for the comparison)")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls after the first (default %(default)s)")
    p.add_argument("--iters", type=int, default=100, help="timed calls (default %(default)s)")
    p.add_argument("--max-config-s", type=float, default=20.0,
                   help="stop timing a configuration after this long (with at least 10 calls)")
    p.add_argument("--budget-s", type=float, default=0.0,
                   help="whole-run budget; configurations that would start after it are recorded as skipped (0: none)")
    p.add_argument("--min-compile-s", type=float, default=60.0,
                   help="skip a compile configuration when less budget than this is left (a compile cannot be "
                        "interrupted)")
    p.add_argument("--io", default="device", choices=["device", "host"],
                   help="device: input resident on the device, output left there (default); host: each call "
                        "copies the input from pinned host memory and the output back")
    p.add_argument("--tf32", default="default", choices=["default", "on", "off"],
                   help="fp32 matmul/convolution TF32 (default: leave PyTorch's defaults; recorded either way)")
    p.add_argument("--no-cudnn-benchmark", action="store_true",
                   help="leave cudnn.benchmark off (on by default: fixed shapes, the usual deployment setting)")
    args = p.parse_args()
    try:
        args.models = bench_common.split_list(args.models, bench_common.known_models(), "model")
        args.precisions = bench_common.split_list(args.precisions, bench_common.PRECISIONS, "precision")
        args.engines = bench_common.split_list(args.engines, list(ENGINES), "engine")
    except ValueError as e:
        p.error(str(e))
    if args.iters < 1 or args.warmup < 0:
        p.error("--iters must be >= 1 and --warmup >= 0")
    return args


def read_setting(obj, dotted):
    """getattr along a dotted path; None where this torch lacks it (the TF32
    switches were renamed in torch 2.9 and the old names are deprecated)."""
    try:
        for part in dotted.split("."):
            obj = getattr(obj, part)
        return obj() if callable(obj) else obj
    except Exception:  # noqa: BLE001 - a missing or refusing switch is just not recorded
        return None


def tf32_settings(torch):
    names = ["backends.cuda.matmul.allow_tf32", "backends.cudnn.allow_tf32", "get_float32_matmul_precision",
             "backends.cuda.matmul.fp32_precision", "backends.cudnn.conv.fp32_precision"]
    values = {name: read_setting(torch, name) for name in names}
    return {k: (v if isinstance(v, (bool, str)) else str(v)) for k, v in values.items() if v is not None}


def set_tf32(torch, on):
    torch.set_float32_matmul_precision("high" if on else "highest")
    torch.backends.cudnn.allow_tf32 = on


class Peer:
    """Holds the torch module, the device and the CPU models built so far."""

    def __init__(self, args):
        import torch

        self.torch = torch
        self.args = args
        if args.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("--device cuda: torch.cuda.is_available() is False (use --device cpu for a smoke test)")
        self.device = torch.device(args.device)
        self.device_name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
        if args.device == "cuda":
            if args.tf32 != "default":
                set_tf32(torch, args.tf32 == "on")
            torch.backends.cudnn.benchmark = not args.no_cudnn_benchmark
        self.settings = {"io": args.io, "cudnn_benchmark": bool(torch.backends.cudnn.benchmark)}
        self.settings.update(tf32_settings(torch))
        self.zoo = bench_common.export_zoo()
        self.cpu_models = {}
        self.references = {}  # model -> fp32 eager output (CPU, float64) for the sanity check

    def sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def cpu_model(self, name):
        """The fp32 CPU model and its input, built once per model as export_zoo builds it."""
        if name not in self.cpu_models:
            base, length = self.zoo.split_length(name)  # bench/zoo's bert_base_s<L>
            model, example, _ = self.zoo.build(base)
            self.zoo.initialize_zero_heads(model)
            self.zoo.calibrate_batchnorm(model, example)
            model.eval()
            x = self.zoo.encoder_input(length, example.shape[2]) if length else self.zoo.reference_input(base, example)
            self.cpu_models[name] = (model, x)
        return self.cpu_models[name]

    def make_step(self, engine, name, precision):
        """Returns (step, model): step() runs one inference and returns the
        output tensor (on the device for --io device)."""
        torch = self.torch
        cpu_model, cpu_input = self.cpu_model(name)
        dtype = torch.float16 if precision == "fp16" else torch.float32
        model = copy.deepcopy(cpu_model).to(device=self.device, dtype=dtype)
        if engine == "compile":
            fn = torch.compile(model)
        elif engine == "compile-reduce-overhead":
            fn = torch.compile(model, mode="reduce-overhead")
        else:
            fn = model
        # CUDA-graph replays overwrite their outputs; marking each call a new
        # step is what the docs ask of a loop that does not train.
        mark_step = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
        mark = mark_step if engine == "compile-reduce-overhead" and mark_step else (lambda: None)
        if self.args.io == "host":
            host_input = cpu_input.to(dtype)
            if self.device.type == "cuda":
                host_input = host_input.pin_memory()

            def step():
                mark()
                x = host_input.to(self.device, non_blocking=True)
                return fn(x).to("cpu")
        else:
            device_input = cpu_input.to(device=self.device, dtype=dtype)

            def step():
                mark()
                return fn(device_input)
        return step, model

    def measure(self, engine, name, precision, record):
        torch = self.torch
        args = self.args
        step, model = self.make_step(engine, name, precision)
        with torch.no_grad():
            t0 = time.perf_counter()
            out = step()
            self.sync()
            record["first_run_ms"] = (time.perf_counter() - t0) * 1e3
            del out  # no output is kept alive across calls (CUDA-graph replays reuse their memory)
            for _ in range(args.warmup):
                step()
                self.sync()
            # The sanity check reads the output of a warmed-up call, copied out
            # before the next replay can overwrite it.
            record["check"] = self.check(name, step().detach().to("cpu", torch.float64))
            self.sync()
            times = []
            begin = time.perf_counter()
            while len(times) < args.iters:
                t0 = time.perf_counter()
                step()
                self.sync()
                t1 = time.perf_counter()
                times.append((t1 - t0) * 1e3)
                if t1 - begin > args.max_config_s and len(times) >= 10:
                    break
        record.update(bench_common.summarize(times))
        record["warmup"] = args.warmup
        del model, step

    def check(self, name, out):
        """Max |Δ| against this process's fp32 eager output (informational:
        a fast configuration that computes something else shows up here)."""
        ref = self.references.get(name)
        if ref is None:
            return None
        err = float((out - ref).abs().max()) if out.shape == ref.shape else None
        return {"reference": "torch-eager fp32, same process", "max_abs_diff": err,
                "ref_max_abs": float(ref.abs().max())}

    def reference(self, name):
        torch = self.torch
        if name in self.references:
            return
        step, model = self.make_step("eager", name, "fp32")
        with torch.no_grad():
            self.references[name] = step().detach().to("cpu", torch.float64)
        del step, model

    def release(self):
        torch = self.torch
        if hasattr(torch, "_dynamo"):
            torch._dynamo.reset()
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()


def plan(args):
    """(engine, model, precision) in run order: eager first, then compiles."""
    configs = []
    if "eager" in args.engines:
        configs += [("eager", m, p) for m in args.models for p in args.precisions]
    compiled = [e for e in ("compile-reduce-overhead", "compile") if e in args.engines]
    configs += [(e, m, p) for p in args.precisions for m in args.models for e in compiled]
    return configs


def main():
    args = parse_args()
    warnings.simplefilter("ignore")
    doc = bench_common.new_document("torch_peer.py")
    try:
        peer = Peer(args)
    except Exception as e:
        print(f"torch_peer: {e}", file=sys.stderr)
        return 2
    torch = peer.torch
    doc["host"]["torch_version"] = torch.__version__
    doc["host"]["cuda_version"] = torch.version.cuda
    doc["host"]["device"] = peer.device_name
    start = time.monotonic()
    failures = 0
    for engine, name, precision in plan(args):
        record = bench_common.new_record(ENGINES[engine], name, precision, peer.device_name, torch.__version__)
        record.update(batch=1, io=args.io, settings=peer.settings)
        elapsed = time.monotonic() - start
        left = args.budget_s - elapsed if args.budget_s > 0 else float("inf")
        if left <= 0 or (engine != "eager" and left < args.min_compile_s):
            bench_common.fail_record(record, "skipped", f"budget: {elapsed:.0f} s of {args.budget_s:.0f} s used")
        else:
            try:
                peer.reference(name)
                peer.measure(engine, name, precision, record)
            except Exception as e:  # record it and go on with the next configuration
                failures += 1
                message = f"{type(e).__name__}: {e}".strip()
                bench_common.fail_record(record, "error", message[:2000])
                traceback.print_exc(limit=3, file=sys.stderr)
            finally:
                peer.release()
        doc["records"].append(record)
        bench_common.write_document(args.json, doc)
        if args.cli_json_dir:
            for key, cli_doc in bench_common.cli_documents(doc, "bench/torch_peer.py").items():
                bench_common.write_document(os.path.join(args.cli_json_dir, key + ".json"), cli_doc)
        if record["status"] == "ok":
            print(f"{record['engine']:31s} {name:14s} {precision}: median {record['median_ms']:8.3f} ms  "
                  f"p10 {record['p10_ms']:8.3f}  p90 {record['p90_ms']:8.3f}  ({record['iters']} iters, "
                  f"first call {record['first_run_ms'] / 1e3:.1f} s)", flush=True)
        else:
            print(f"{record['engine']:31s} {name:14s} {precision}: {record['status'].upper()}: "
                  f"{record['error'].splitlines()[0][:200]}", flush=True)
    print(f"torch_peer: {len(doc['records'])} records in {time.monotonic() - start:.0f} s -> {args.json}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
