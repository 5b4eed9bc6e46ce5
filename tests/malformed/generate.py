#!/usr/bin/env python3
"""Writes Kiln's malformed-model corpus: one small model (or input file) per
way a model can be wrong, each with the outcome it must have.

Models that are truncated, bit-flipped, sent with wrong wire types, with
huge/negative/overflowing dims, mismatched ranks and types, dangling or
cyclic graphs, duplicate names, unknown ops and opsets, missing, oversized
or escaping external data, NaN/Inf constants, out-of-range indices, abused
attributes, deep If/Loop nesting, huge trip counts, and inputs that are not
regular files. Generated at test time (not committed as blobs) so every case
is readable here, next to what it must give.

Usage: generate.py OUT_DIR
Writes OUT_DIR/<case>/model.onnx (plus any side files) and OUT_DIR/cases.json:
a list of {"name", "class", "model", "args", "expect": {tool: outcome},
"xfail": {tool: reason}}. Tools: "graph" (kiln graph), "reference"
(kiln run --backend reference), "vulkan" (kiln run --backend vulkan). An
outcome is "runs" (exit 0), a substring the error output must contain, or
"clean" (either, as long as it is no signal and no hang: randomly mutated
bytes, whose right answer depends on where the flips land).
An xfail says what fixes it ("Loop trip cap"): the case is known to
break that expectation today; the runner fails when it starts to pass, so
the fix flips it.
"""
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
TOOLS = ("graph", "reference", "vulkan")

cases = []


def model_bytes(nodes, inputs, outputs, initializers=(), opset=OPSET, ir_version=8):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version
    return m.SerializeToString()


def vinfo(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


def relu_model():
    return model_bytes([helper.make_node("Relu", ["x"], ["y"])], [vinfo("x", [2, 3])], [vinfo("y", [2, 3])])


def add(name, cls, data, expect, xfail=None, args=(), files=None, model=None):
    """Records a case. `expect` is one outcome for every tool or a dict per tool."""
    if isinstance(expect, str):
        expect = {t: expect for t in TOOLS}
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    model = model or os.path.join(d, "model.onnx")
    if data is not None:
        with open(model, "wb") as f:
            f.write(data)
    for rel, content in (files or {}).items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(content)
    cases.append({"name": name, "class": cls, "model": model, "args": [a.replace("{dir}", d) for a in args],
                  "expect": expect, "xfail": xfail or {}})
    return d


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def with_raw_field(message, field_number, wire_type, payload):
    """`message` re-parsed with one extra raw field appended (protobuf keeps
    fields it cannot place as unknown fields, which is the point)."""
    raw = message.SerializeToString() + varint(field_number << 3 | wire_type) + payload
    out = type(message)()
    out.ParseFromString(raw)
    return out


def conv_model(pads_attr):
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3])
    node.attribute.append(pads_attr)
    w = numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")
    return model_bytes([node], [vinfo("x", [1, 1, 5, 5])], [vinfo("y", None)], [w])


def npy_bytes(header_dict, data=b""):
    header = repr(header_dict).encode()
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data


def external_model(location, offset=0, length=None):
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset))) + ((("length", str(length)),) if length else ()):
        e = w.external_data.add()
        e.key, e.value = k, v
    return model_bytes([helper.make_node("Add", ["x", "w"], ["y"])], [vinfo("x", [2, 3])], [vinfo("y", [2, 3])], [w])


def nested_if(depth):
    """`depth` Ifs, each in the then-branch of the one above (built inside
    out, so a deep nest needs no deep Python recursion)."""
    def if_node(out, then_graph):
        else_graph = helper.make_graph([helper.make_node("Identity", ["x"], [out + "_e"])], out + "_else", [],
                                       [vinfo(out + "_e", [2, 3])])
        return helper.make_node("If", ["cond"], [out], then_branch=then_graph, else_branch=else_graph)

    inner = helper.make_graph([helper.make_node("Identity", ["x"], ["o0"])], "b0", [], [vinfo("o0", [2, 3])])
    for level in range(1, depth):
        inner = helper.make_graph([if_node(f"o{level}", inner)], f"b{level}", [], [vinfo(f"o{level}", [2, 3])])
    cond = helper.make_tensor("c", TensorProto.BOOL, [], [True])
    return model_bytes([helper.make_node("Constant", [], ["cond"], value=cond), if_node("y", inner)],
                       [vinfo("x", [2, 3])], [vinfo("y", [2, 3])])


def loop_model(trip_count, cond_stays_true=True):
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "body", [vinfo("i", [], TensorProto.INT64), vinfo("cond_in", [], TensorProto.BOOL), vinfo("v_in", [1])],
        [vinfo("cond_out", [], TensorProto.BOOL), vinfo("v_out", [1])],
        initializer=[numpy_helper.from_array(np.ones(1, np.float32), "one")])
    consts = [numpy_helper.from_array(np.array(trip_count, np.int64), "M"),
              numpy_helper.from_array(np.array(cond_stays_true), "cond")]
    return model_bytes([helper.make_node("Loop", ["M", "cond", "x"], ["y"], body=body)], [vinfo("x", [1])],
                       [vinfo("y", [1])], consts)


def main():
    good = relu_model()

    # -- truncated and bit-flipped protobufs --------------------------------
    add("truncated_half", "truncated", good[: len(good) // 2], "truncated or corrupt protobuf")
    add("truncated_one_byte", "truncated", good[:-1], "truncated or corrupt protobuf")
    add("empty_file", "truncated", b"", "the model has no graph")
    flipped = bytearray(good)
    flipped[0] ^= 0x07  # ir_version's tag (field 1, varint) becomes wire type 7, which does not exist
    add("bitflip_tag_wire_type", "bit-flipped", bytes(flipped), "truncated or corrupt protobuf")
    flipped = bytearray(good)
    flipped[good.index(b"Relu")] ^= 0x20  # "Relu" -> "relu": an op no opset has
    add("bitflip_op_name", "bit-flipped", bytes(flipped), "relu")

    # Random flips (seeded, so the corpus is the same every run) land
    # anywhere: what they must give is only a clean outcome -- a run or a
    # named error, never a signal or a hang.
    rng = np.random.default_rng(21)
    conv = conv_model(helper.make_attribute("pads", [1, 1, 1, 1]))
    for i in range(6):
        flipped = bytearray(conv)
        for at in rng.integers(0, len(conv), size=3):
            flipped[at] ^= 1 << int(rng.integers(0, 8))
        add(f"bitflip_random_{i}", "bit-flipped", bytes(flipped), "clean")

    # -- wrong wire types and out-of-range enums ----------------------------
    m = onnx.load_from_string(good)
    m.graph.node[0].CopyFrom(with_raw_field(m.graph.node[0], 1, 0, varint(5)))  # input (string) as a varint
    add("wire_type_node_input_varint", "wire types", m.SerializeToString(), "was sent with wire type varint")
    attr = helper.make_attribute("alpha", 0.5)
    attr.ClearField("type")
    attr = with_raw_field(attr, 20, 0, varint(99))  # AttributeType 99
    node = helper.make_node("LeakyRelu", ["x"], ["y"])
    node.attribute.append(attr)
    add("enum_attribute_type_99", "wire types",
        model_bytes([node], [vinfo("x", [2, 3])], [vinfo("y", [2, 3])]), "has value 99, which is not a valid")
    m = onnx.load_from_string(good)
    m.graph.input[0].type.tensor_type.elem_type = 1000
    add("elem_type_1000", "wire types", m.SerializeToString(), "1000")

    # -- huge, negative and overflowing dims ---------------------------------
    add("input_dim_2_pow_40", "huge dims",
        model_bytes([helper.make_node("Relu", ["x"], ["y"])], [vinfo("x", [1 << 40, 3])], [vinfo("y", None)]),
        "KILN_MAX_TENSOR_BYTES")
    add("input_dim_negative", "huge dims",
        model_bytes([helper.make_node("Relu", ["x"], ["y"])], [vinfo("x", [-5, 3])], [vinfo("y", None)]), "-5")
    big = numpy_helper.from_array(np.zeros(1, np.float32), "w")
    del big.dims[:]
    big.dims.extend([1 << 40, 1 << 40])
    add("initializer_dims_overflow", "huge dims",
        model_bytes([helper.make_node("Add", ["x", "w"], ["y"])], [vinfo("x", [1])], [vinfo("y", None)], [big]),
        "overflows")
    shape = numpy_helper.from_array(np.array([1 << 62, 4], np.int64), "s")
    add("reshape_to_overflowing_shape", "huge dims",
        model_bytes([helper.make_node("Expand", ["x", "s"], ["y"])], [vinfo("x", [1, 1])], [vinfo("y", None)], [shape]),
        "too large")
    pads = numpy_helper.from_array(np.array([0, 1 << 62, 0, 1 << 62], np.int64), "p")
    add("pad_overflowing", "huge dims",
        model_bytes([helper.make_node("Pad", ["x", "p"], ["y"])], [vinfo("x", [2, 3])], [vinfo("y", None)], [pads]),
        "node 'Pad_0' (Pad): pads")
    add("shape_flag_huge", "huge dims",
        model_bytes([helper.make_node("Relu", ["x"], ["y"])], [vinfo("x", ["n", 3])], [vinfo("y", None)]),
        {"graph": "runs", "reference": "'x'", "vulkan": "'x'"}, args=["--shape", "x=1099511627776x3"])

    # -- rank and type mismatches --------------------------------------------
    add("matmul_inner_mismatch", "rank/type mismatch",
        model_bytes([helper.make_node("MatMul", ["a", "b"], ["y"])], [vinfo("a", [2, 3]), vinfo("b", [4, 5])],
                    [vinfo("y", None)]), "MatMul")
    add("add_float_int", "rank/type mismatch",
        model_bytes([helper.make_node("Add", ["a", "b"], ["y"])],
                    [vinfo("a", [2]), vinfo("b", [2], TensorProto.INT64)], [vinfo("y", None)]), "Add")
    w2 = numpy_helper.from_array(np.ones((3, 3), np.float32), "w")
    add("conv_weight_rank", "rank/type mismatch",
        model_bytes([helper.make_node("Conv", ["x", "w"], ["y"])], [vinfo("x", [1, 1, 5, 5])], [vinfo("y", None)], [w2]),
        "Conv")

    # -- dangling and cyclic graphs, duplicate names -------------------------
    add("dangling_input", "dangling/cyclic",
        model_bytes([helper.make_node("Relu", ["nowhere"], ["y"])], [vinfo("x", [2])], [vinfo("y", [2])]),
        "is not produced by any node")
    add("dangling_output", "dangling/cyclic",
        model_bytes([helper.make_node("Relu", ["x"], ["y"])], [vinfo("x", [2])], [vinfo("z", [2])]), "'z'")
    add("cycle", "dangling/cyclic",
        model_bytes([helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])],
                    [vinfo("x", [2])], [vinfo("b", [2])]), "cycle")
    add("duplicate_node_outputs", "duplicate names",
        model_bytes([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])],
                    [vinfo("x", [2])], [vinfo("y", [2])]), "is already produced by node")
    one = numpy_helper.from_array(np.ones(2, np.float32), "w")
    add("duplicate_initializers", "duplicate names",
        model_bytes([helper.make_node("Add", ["x", "w"], ["y"])], [vinfo("x", [2])], [vinfo("y", [2])], [one, one]),
        "'w'")

    # -- unknown ops and opsets ----------------------------------------------
    add("unknown_op", "unknown ops/opsets",
        model_bytes([helper.make_node("Frobnicate", ["x"], ["y"])], [vinfo("x", [2])], [vinfo("y", [2])]), "Frobnicate")
    add("opset_99", "unknown ops/opsets", relu_model_opset(99), "opset")
    add("opset_0", "unknown ops/opsets", relu_model_opset(0), "opset")
    add("unknown_domain", "unknown ops/opsets",
        model_bytes([helper.make_node("Relu", ["x"], ["y"], domain="com.example")], [vinfo("x", [2])],
                    [vinfo("y", [2])]), "com.example")

    # -- external data: missing, oversized, escaping -------------------------
    weights = np.ones((2, 3), np.float32).tobytes()
    add("external_ok", "external data", external_model("w.bin"), "runs", files={"w.bin": weights})
    add("external_missing", "external data", external_model("missing.bin"), "does not exist")
    add("external_too_short", "external data", external_model("w.bin", offset=16), "too short",
        files={"w.bin": weights})
    add("external_length_oversized", "external data", external_model("w.bin", length=1 << 40), "'length' is",
        files={"w.bin": weights})
    add("external_dotdot", "path escape", external_model("../../../../etc/passwd"), "'..'")
    add("external_absolute", "path escape", external_model("/etc/passwd"), "absolute")
    d = add("external_symlink", "path escape", external_model("link.bin"), "symlink")
    os.symlink("/etc/hostname", os.path.join(d, "link.bin"))
    d = add("external_hard_link", "path escape", external_model("hard.bin"), "is a hard link")
    shutil.copyfile(os.path.join(OUT, "external_ok", "w.bin"), os.path.join(d, "orig.bin"))
    os.link(os.path.join(d, "orig.bin"), os.path.join(d, "hard.bin"))
    d = add("external_fifo", "special files", external_model("w.bin"), "is a FIFO")
    os.mkfifo(os.path.join(d, "w.bin"))

    # -- special files as model and input ------------------------------------
    d = add("model_is_fifo", "special files", None, "is a FIFO")
    os.mkfifo(os.path.join(d, "model.onnx"))
    add("model_is_dev_zero", "special files", None, "is a character device", model="/dev/zero")
    d = add("model_is_directory", "special files", None, "is a directory")
    os.mkdir(os.path.join(d, "model.onnx"))
    inputs_expect = {"graph": "runs", "reference": "not a regular file", "vulkan": "not a regular file"}
    add("input_dev_zero", "special files", good, inputs_expect, args=["--input", "x=/dev/zero"])
    d = add("input_fifo", "special files", good, inputs_expect, args=["--input", "x={dir}/x.npy"])
    os.mkfifo(os.path.join(d, "x.npy"))
    d = add("input_pb_fifo", "special files", good, inputs_expect, args=["--input", "x={dir}/x.pb"])
    os.mkfifo(os.path.join(d, "x.pb"))
    add("input_is_directory", "special files", good, inputs_expect, args=["--input", "x={dir}"])
    d = add("plugin_fifo", "special files", good,
            {"graph": "runs", "reference": "is a FIFO", "vulkan": "is a FIFO"}, args=["--plugin", "{dir}/p.so"])
    os.mkfifo(os.path.join(d, "p.so"))
    add("input_npy_claims_4gb", "special files", good,
        {"graph": "runs", "reference": "needs 4294967296 bytes", "vulkan": "needs 4294967296 bytes"},
        args=["--input", "x={dir}/x.npy"],
        files={"x.npy": npy_bytes({"descr": "<f4", "fortran_order": False, "shape": (1 << 30,)}, b"\0" * 24)})
    weight_npy = npy_bytes({"descr": "<f4", "fortran_order": False, "shape": (2,)}, b"\0" * 8)
    add("input_names_a_weight", "special files",
        model_bytes([helper.make_node("Add", ["x", "w"], ["y"])], [vinfo("x", [2])], [vinfo("y", [2])], [one]),
        {"graph": "runs", "reference": "no input named 'w'", "vulkan": "no input named 'w'"},
        args=["--input", "w={dir}/w.npy"], files={"w.npy": weight_npy})
    # IR < 4 lists initializers among the graph inputs too.
    add("input_names_a_listed_weight", "special files",
        model_bytes([helper.make_node("Add", ["x", "w"], ["y"])], [vinfo("x", [2]), vinfo("w", [2])],
                    [vinfo("y", [2])], [one], ir_version=3),
        {"graph": "runs", "reference": "no input named 'w'", "vulkan": "no input named 'w'"},
        args=["--input", "w={dir}/w.npy"],
        files={"w.npy": weight_npy})

    # -- NaN/Inf constants (valid: they run) ---------------------------------
    nan_inf = numpy_helper.from_array(np.array([np.nan, np.inf, -np.inf], np.float32), "c")
    add("nan_inf_constants", "NaN/Inf",
        model_bytes([helper.make_node("Add", ["x", "c"], ["y"])], [vinfo("x", [3])], [vinfo("y", [3])], [nan_inf]),
        "runs")

    # -- out-of-range indices -------------------------------------------------
    idx = numpy_helper.from_array(np.array([0, 7], np.int64), "i")
    add("gather_index_out_of_range", "indices",
        model_bytes([helper.make_node("Gather", ["x", "i"], ["y"])], [vinfo("x", [3, 2])], [vinfo("y", None)], [idx]),
        "out of range")
    add("softmax_axis_out_of_range", "indices",
        model_bytes([helper.make_node("Softmax", ["x"], ["y"], axis=5)], [vinfo("x", [2, 3])], [vinfo("y", None)]),
        "axis")

    # -- abused attributes ----------------------------------------------------
    add("pads_as_string", "attributes", conv_model(helper.make_attribute("pads", "1,1,1,1")),
        "attribute 'pads' must be INTS")
    add("pads_as_float", "attributes", conv_model(helper.make_attribute("pads", 1.0)), "attribute 'pads' must be INTS")
    add("softmax_axis_as_floats", "attributes",
        model_bytes([helper.make_node("Softmax", ["x"], ["y"], axis=[1.0, 2.0])], [vinfo("x", [2, 3])],
                    [vinfo("y", None)]), "attribute 'axis' must be INT")
    add("relu_too_many_inputs", "attributes",
        model_bytes([helper.make_node("Relu", ["x", "x"], ["y"])], [vinfo("x", [2])], [vinfo("y", [2])]),
        "has 2 inputs, but Relu (opset 17) takes 1")
    add("conv_stride_zero", "attributes",
        model_bytes([helper.make_node("Conv", ["x", "w"], ["y"], strides=[0, 0])], [vinfo("x", [1, 1, 5, 5])],
                    [vinfo("y", None)], [numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")]),
        "strides")

    # -- deep If nesting, huge trip counts ------------------------------------
    add("if_nesting_8", "nesting", nested_if(8), "runs")
    add("if_nesting_40", "nesting", nested_if(40), "nested deeper than 100 levels")
    add("if_nesting_200", "nesting", nested_if(200), "nested deeper than 100 levels")
    add("loop_trip_count_huge", "trip counts", loop_model(1 << 62),
        {"graph": "runs", "reference": "KILN_MAX_LOOP_ITERATIONS", "vulkan": "KILN_MAX_LOOP_ITERATIONS"})
    add("loop_trip_count_negative", "trip counts", loop_model(-3), "runs")

    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
    print(f"wrote {len(cases)} malformed-model cases to {OUT}")


def relu_model_opset(opset):
    return model_bytes([helper.make_node("Relu", ["x"], ["y"])], [vinfo("x", [2])], [vinfo("y", [2])], opset=opset)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    OUT = os.path.abspath(sys.argv[1])
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    main()
