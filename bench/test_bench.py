#!/usr/bin/python3
"""Tests of the bench/ scripts' logic that needs no GPU, no torch and no kiln:
statistics, the kiln-bench-v1 validation, the report's ratios, and how
kiln_runner.py reads run times. Run: /usr/bin/python3 bench/test_bench.py"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402
import kiln_runner  # noqa: E402
import report  # noqa: E402
import results  # noqa: E402
import check_bench_json  # noqa: E402
import dwpw_bytes  # noqa: E402
import dwpw_timing  # noqa: E402
import node_times  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels"))
import steady_models  # noqa: E402


def record(engine, model, precision, median, device="GPU X", status="ok", **extra):
    r = bench_common.new_record(engine, model, precision, device)
    if status == "ok":
        r.update(median_ms=median, p10_ms=median * 0.95, p90_ms=median * 1.05, min_ms=median * 0.9, iters=10)
    else:
        bench_common.fail_record(r, status, "boom")
    r.update(extra)
    return r


def document(records):
    doc = bench_common.new_document("test")
    doc["records"] = records
    return doc


class StatisticsTest(unittest.TestCase):
    def test_percentiles_match_linear_interpolation(self):
        values = [5.0, 1.0, 4.0, 2.0, 3.0]
        s = bench_common.summarize(values)
        self.assertEqual(s["median_ms"], 3.0)
        self.assertAlmostEqual(s["p10_ms"], 1.4)  # numpy.percentile([1..5], 10)
        self.assertAlmostEqual(s["p90_ms"], 4.6)
        self.assertEqual((s["min_ms"], s["max_ms"], s["iters"]), (1.0, 5.0, 5))

    def test_empty(self):
        self.assertIsNone(bench_common.summarize([])["median_ms"])

    def test_split_list_names_the_unknown_entry(self):
        with self.assertRaisesRegex(ValueError, "unknown model 'nope'"):
            bench_common.split_list("resnet50,nope", bench_common.BENCH_MODELS, "model")


class DocumentTest(unittest.TestCase):
    def write(self, doc):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(doc, f)
        f.close()
        self.addCleanup(os.remove, f.name)
        return f.name

    def test_round_trip(self):
        doc = document([record("torch-eager", "resnet50", "fp32", 2.0)])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sub", "x.json")
            bench_common.write_document(path, doc)
            self.assertEqual(bench_common.load_document(path)["records"], doc["records"])

    def test_rejects_other_schema(self):
        doc = document([])
        doc["schema"] = "kiln-bench-v0"
        with self.assertRaisesRegex(ValueError, "schema is 'kiln-bench-v0'"):
            bench_common.load_document(self.write(doc))

    def test_rejects_missing_field(self):
        r = record("torch-eager", "resnet50", "fp32", 2.0)
        del r["p90_ms"]
        with self.assertRaisesRegex(ValueError, "record 0 lacks p90_ms"):
            bench_common.load_document(self.write(document([r])))

    def test_rejects_ok_record_without_median(self):
        r = record("torch-eager", "resnet50", "fp32", 2.0)
        r["median_ms"] = None
        with self.assertRaisesRegex(ValueError, "no numeric median_ms"):
            bench_common.load_document(self.write(document([r])))

    def test_rejects_non_json(self):
        path = self.write({})
        with open(path, "w") as f:
            f.write("{not json")
        with self.assertRaisesRegex(ValueError, "cannot read JSON"):
            bench_common.load_document(path)


class ReportTest(unittest.TestCase):
    def render(self, records):
        return report.render([("a.json", document(records))])

    def test_ratio_is_kiln_over_peer(self):
        text = self.render([record("torch-compile-reduce-overhead", "resnet50", "fp32", 2.0),
                            record("kiln-vulkan-buffer", "resnet50", "fp32", 3.0)])
        self.assertIn("| resnet50 | kiln-vulkan-buffer | 1.50× |", text)

    def test_no_ratio_across_devices(self):
        text = self.render([record("torch-eager", "resnet50", "fp32", 2.0, device="GPU A"),
                            record("kiln-vulkan-image", "resnet50", "fp32", 3.0, device="GPU B")])
        self.assertIn("| resnet50 | kiln-vulkan-image | — |", text)
        self.assertIn("no ratio across devices", text)

    def test_device_names_spelled_differently_still_match(self):
        self.assertTrue(report.same_device("NVIDIA H100 80GB HBM3", "H100 80GB HBM3"))
        self.assertFalse(report.same_device("NVIDIA H100 80GB HBM3", "NVIDIA H200"))
        self.assertFalse(report.same_device(None, "cpu"))
        text = self.render([record("torch-eager", "resnet50", "fp32", 2.0, device="NVIDIA H100 80GB HBM3"),
                            record("kiln-vulkan-image", "resnet50", "fp32", 1.0, device="H100 80GB HBM3")])
        self.assertIn("| resnet50 | kiln-vulkan-image | 0.50× |", text)

    def test_failures_and_mismatches_are_listed(self):
        text = self.render([record("torch-compile", "swin_t", "fp16", None, status="error"),
                            record("kiln-vulkan-buffer", "vit_b_16", "fp16", 5.0,
                                   check={"ok": False, "max_abs_diff": 0.5, "bound": 0.02})])
        self.assertIn("| torch-compile | swin_t | fp16 | error | boom |", text)
        self.assertIn("output mismatch", text)
        self.assertIn("5.000 (4.750–5.250) ✗", text)


class KilnRunnerTest(unittest.TestCase):
    def test_times_from_stats(self):
        wall, gpu = kiln_runner.run_times({"runs": [{"run_ms": 1.5, "gpu_ms": 1.0}, {"run_ms": 2.5, "gpu_ms": 2.0}]},
                                          "")
        self.assertEqual((wall, gpu), ([1.5, 2.5], [1.0, 2.0]))

    def test_times_from_stdout_when_stats_lack_them(self):
        wall, gpu = kiln_runner.run_times({"runs": []}, "run 1: 3.5 ms (vulkan backend)\nx\nrun 2: 4 ms (v)\n")
        self.assertEqual((wall, gpu), ([3.5, 4.0], []))

    def test_partial_gpu_times_are_dropped(self):
        _, gpu = kiln_runner.run_times({"runs": [{"run_ms": 1.0, "gpu_ms": 0.5}, {"run_ms": 1.0}]}, "")
        self.assertEqual(gpu, [])

    def test_device_choice_prefers_a_gpu(self):
        names = ["llvmpipe (LLVM 15)", "NVIDIA H100 80GB HBM3"]
        self.assertEqual(kiln_runner.pick_device_name(names, []), "NVIDIA H100 80GB HBM3")
        self.assertEqual(kiln_runner.pick_device_name(names, ["--device", "0"]), "llvmpipe (LLVM 15)")
        self.assertEqual(kiln_runner.pick_device_name(names, ["--device", "nvidia"]), "NVIDIA H100 80GB HBM3")


class PeerDocumentTest(unittest.TestCase):
    """torch_peer.py's records in kiln-bench-cli-v1 (the schema of `kiln bench`)."""

    def cli_docs(self, records):
        doc = document(records)
        doc["command"] = "torch_peer.py --json x.json --models resnet50"
        return bench_common.cli_documents(doc, "bench/torch_peer.py")

    def problems(self, doc):
        problems = []
        check_bench_json.check_document(doc, problems)
        return problems

    def test_one_document_per_engine_and_precision(self):
        docs = self.cli_docs([record("torch-eager", "resnet50", "fp32", 2.0, max_ms=2.2, mean_ms=2.0, first_run_ms=9.0),
                              record("torch-eager", "mobilenet_v2", "fp32", 1.0, max_ms=1.1, mean_ms=1.0, first_run_ms=9.0),
                              record("torch-compile", "resnet50", "fp32", 0.8, max_ms=0.9, mean_ms=0.8, first_run_ms=9.0),
                              record("torch-eager", "resnet50", "fp16", 1.5, status="error"),
                              record("torch-compile", "resnet50", "fp16", 0.5, status="skipped")])
        self.assertEqual(sorted(docs), ["torch-compile-fp32", "torch-eager-fp16", "torch-eager-fp32"])
        eager = docs["torch-eager-fp32"]
        self.assertEqual([m["model"] for m in eager["models"]], ["resnet50", "mobilenet_v2"])
        self.assertEqual(eager["environment"]["backend"], "torch-eager")
        self.assertEqual(eager["models"][0]["wall"]["median_ms"], 2.0)
        self.assertEqual(docs["torch-eager-fp16"]["models"][0]["status"], "error")
        for doc in docs.values():
            self.assertEqual(self.problems(doc), [])

    def test_checker_rejects_a_peer_without_engine(self):
        doc = self.cli_docs([record("torch-eager", "resnet50", "fp32", 2.0, max_ms=2.2, mean_ms=2.0, first_run_ms=9.0)])
        doc = doc["torch-eager-fp32"]
        del doc["environment"]["engine"]
        self.assertTrue(any("engine" in p for p in self.problems(doc)))

    def test_checker_rejects_a_peer_posing_as_kiln(self):
        doc = self.cli_docs([record("torch-eager", "resnet50", "fp32", 2.0, max_ms=2.2, mean_ms=2.0, first_run_ms=9.0)])
        doc = doc["torch-eager-fp32"]
        doc["environment"]["backend"] = "vulkan"
        self.assertTrue(any("names its own engine" in p for p in self.problems(doc)))

    def test_checker_checks_host_overhead_when_present(self):
        doc = self.cli_docs([record("torch-eager", "resnet50", "fp32", 2.0, max_ms=2.2, mean_ms=2.0, first_run_ms=9.0)])
        model = doc["torch-eager-fp32"]["models"][0]
        model["host_overhead"] = None  # gpu is null for this peer too
        self.assertEqual(self.problems(doc["torch-eager-fp32"]), [])
        model["host_overhead"] = dict(model["wall"])  # a summary where gpu has none
        self.assertTrue(any("host_overhead" in p for p in self.problems(doc["torch-eager-fp32"])))

    def test_checker_checks_memory_when_present(self):
        doc = self.cli_docs([record("torch-eager", "resnet50", "fp32", 2.0, max_ms=2.2, mean_ms=2.0, first_run_ms=9.0)])
        doc = doc["torch-eager-fp32"]
        model = doc["models"][0]
        model["memory"] = {"device_bytes": 900, "activation_bytes": 500, "arena_bytes": 400,
                           "live_lower_bound": 400, "no_reuse_bytes": 1000}
        self.assertEqual(self.problems(doc), [])
        model["memory"]["arena_bytes"] = 300  # below the live-set bound: impossible
        self.assertTrue(any("live_lower_bound <= arena_bytes" in p for p in self.problems(doc)))
        del model["memory"]["no_reuse_bytes"]
        self.assertTrue(any("memory.no_reuse_bytes" in p for p in self.problems(doc)))

    def test_encoder_lengths_are_known_models(self):
        known = bench_common.known_models()
        self.assertIn("bert_base_s128", known)
        self.assertIn("resnet50", known)
        self.assertNotIn("bert_base_s0", known)
        self.assertNotIn("nope_s12", known)


class DwPwBytesTest(unittest.TestCase):
    KIR = """  %a = Conv(%x, %w) #{kiln.fusion_group = "fg0"} : f32[1] loc("dw")
  %b = Clip(%a) #{kiln.fusion_group = "fg0"} : f32[1] loc("clip")
  %c = Conv(%b, %v) #{kiln.fusion_group = "fg0"} : f32[1] loc("pw")
  %d = Conv(%c, %u) #{kiln.fusion_group = "fg1"} : f32[1] loc("other")
  %e = Relu(%d) #{kiln.fusion_group = "fg1"} : f32[1] loc("relu")
"""

    def run_script(self, fused, unfused):
        with tempfile.TemporaryDirectory() as d:
            paths = [os.path.join(d, n) for n in ("g.kir", "on.json", "off.json")]
            with open(paths[0], "w") as f:
                f.write(self.KIR)
            for path, ks in zip(paths[1:], (fused, unfused)):
                with open(path, "w") as f:
                    json.dump({"runs": [{"kernels": ks}]}, f)
            out_path = os.path.join(d, "out.txt")
            saved = sys.stdout
            with open(out_path, "w") as sys.stdout:
                rc = dwpw_bytes.main(["dwpw_bytes.py"] + paths)
            sys.stdout = saved
            with open(out_path) as f:
                return rc, f.read()

    def test_a_split_group_counts_both_kernels_against_its_members_only(self):
        fused = [{"kernel": "dwpw_splitk_tile64x64", "node": "pw", "bytes": 30},
                 {"kernel": "dwpw_splitk_reduce", "node": "pw", "bytes": 10},
                 {"kernel": "conv_tile64x64+relu", "node": "relu", "bytes": 500}]
        unfused = [{"kernel": "conv_depthwise", "node": "dw", "bytes": 40},
                   {"kernel": "clip", "node": "clip", "bytes": 20},
                   {"kernel": "conv_tile64x64", "node": "pw", "bytes": 40},
                   {"kernel": "conv_tile64x64", "node": "other", "bytes": 900}]
        rc, out = self.run_script(fused, unfused)
        self.assertEqual(rc, 0)
        self.assertIn("| pw | dwpw_splitk_tile64x64 + dwpw_splitk_reduce | 40 | 100 (3) | 0.40 |", out)
        self.assertIn("1 DW/PW groups: 40 bytes against 100 unfused (0.40)", out)
        self.assertNotIn("relu", out)


class DwPwTimingTest(unittest.TestCase):
    def test_pairs_time_both_ways_and_count_agreement(self):
        def doc(kernels):
            return {"models": [{"model": "m", "status": "ok", "kernels": kernels}]}
        fuse = doc([{"kernel": "dwpw_tile64x64", "node": "pw1", "gpu_ms": 0.01},
                    {"kernel": "dwpw_splitk_tile64x64+add", "node": "add2", "gpu_ms": 0.02},
                    {"kernel": "dwpw_splitk_reduce+add", "node": "add2", "gpu_ms": 0.01}])
        split = doc([{"kernel": "conv_depthwise+clip", "node": "clip1", "gpu_ms": 0.01},
                     {"kernel": "conv_tile64x64", "node": "pw1", "gpu_ms": 0.01},
                     {"kernel": "conv_depthwise+clip", "node": "clip2", "gpu_ms": 0.01},
                     {"kernel": "conv_tile64x64+add", "node": "add2", "gpu_ms": 0.01}])
        auto = doc([{"kernel": "dwpw_tile64x64", "node": "pw1", "gpu_ms": 0.01},
                    {"kernel": "conv_depthwise+clip", "node": "clip2", "gpu_ms": 0.01},
                    {"kernel": "conv_tile64x64+add", "node": "add2", "gpu_ms": 0.01}])
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for name, content in (("auto", auto), ("fuse", fuse), ("split", split)):
                paths.append(os.path.join(d, name + ".json"))
                with open(paths[-1], "w") as f:
                    json.dump(content, f)
            out_path = os.path.join(d, "out.md")
            saved = sys.stdout
            with open(out_path, "w") as sys.stdout:
                rc = dwpw_timing.main(["dwpw_timing.py"] + paths)
            sys.stdout = saved
            with open(out_path) as f:
                out = f.read()
        self.assertEqual(rc, 0)
        # pw1: fused 0.01 < split 0.02 and fused by the planner; add2: fused
        # 0.03 > split 0.02 and split by the planner.
        self.assertIn("| pw1 | 0.0100 | 0.0200 | fused | fuse | yes |", out)
        self.assertIn("| add2 | 0.0300 | 0.0200 | split | split | yes |", out)
        self.assertIn("agrees with the timed run on 2 of 2 pairs", out)


class SteadyModelsTest(unittest.TestCase):
    def test_shapes_parse_and_bad_ones_are_named(self):
        self.assertEqual(steady_models.parse_shapes("8x4x6, 197x768x3072"), [(8, 4, 6), (197, 768, 3072)])
        for bad in ("8x4", "8x4x0", "axbxc"):
            with self.assertRaises(ValueError) as e:
                steady_models.parse_shapes(bad)
            self.assertIn(bad, str(e.exception))

    def test_operands_stay_on_the_device(self):
        model = steady_models.gemm_model(8, 4, 6)
        g = model.graph
        # One float in, one float out; A [8, 6] and B [6, 4] built in the graph.
        self.assertEqual([i.name for i in g.input], ["x"])
        self.assertEqual([d.dim_value for d in g.input[0].type.tensor_type.shape.dim], [1])
        self.assertEqual(len(g.output[0].type.tensor_type.shape.dim), 0)
        self.assertEqual([n.op_type for n in g.node if n.op_type != "Constant"],
                         ["ConstantOfShape", "ConstantOfShape", "Add", "MatMul", "ReduceSum"])
        dims = {n.output[0]: list(n.attribute[0].t.int64_data) for n in g.node if n.op_type == "Constant"}
        self.assertEqual(dims["a_shape"], [8, 6])
        self.assertEqual(dims["b_shape"], [6, 4])


class NodeTimesTest(unittest.TestCase):
    @staticmethod
    def model(kernels):
        return {"model": "m", "status": "ok",
                "kernels": [{"node": n, "kernel": k, "gpu_ms": ms} for n, k, ms in kernels]}

    def test_sums_a_nodes_kernels_and_finds_the_faster_plan_per_node(self):
        a = self.model([("conv1", "conv_splitk_coopmat64x128", 0.010), ("conv1", "conv_splitk_reduce", 0.006),
                        ("conv2", "conv_coopmat64x64", 0.020)])
        b = self.model([("conv1", "conv_tile64x64", 0.012), ("conv2", "conv_tile64x64", 0.030)])
        rows, first, best = node_times.compare([a, b])
        self.assertAlmostEqual(first, 36.0)
        self.assertAlmostEqual(best, 32.0)  # conv1 from b, conv2 from a
        self.assertEqual([r[0] for r in rows], ["conv1", "conv2"])
        self.assertEqual(rows[0][1][0][1], "conv_splitk_coopmat64x128 + conv_splitk_reduce")

    def test_equal_nodes_are_left_out_unless_all(self):
        a = self.model([("n", "k", 0.010)])
        b = self.model([("n", "k2", 0.0102)])
        self.assertEqual(node_times.compare([a, b])[0], [])
        self.assertEqual(len(node_times.compare([a, b], show_all=True)[0]), 1)

    def test_a_document_without_models_is_named(self):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump({"records": []}, f)
        f.close()
        self.addCleanup(os.remove, f.name)
        with self.assertRaisesRegex(ValueError, "not a kiln bench --json document"):
            node_times.load(f.name)


class ResultsTest(unittest.TestCase):
    def test_side_by_side_needs_a_model_in_two_series(self):
        def series(*models, status="ok"):
            return {"models": [{"model": m, "status": status} for m in models]}
        self.assertFalse(results.comparable([series("resnet50"), series("resnext50_32x4d")]))
        self.assertFalse(results.comparable([series("resnet50"), series("resnet50", status="error")]))
        self.assertTrue(results.comparable([series("resnet50", "vit"), series("vit")]))
        self.assertFalse(results.comparable([]))


if __name__ == "__main__":
    unittest.main()
