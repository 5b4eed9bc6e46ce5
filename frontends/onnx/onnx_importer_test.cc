// Tests for the ONNX importer: models are built in C++ with the protobuf API,
// imported, checked structurally and (where the point is semantics, e.g. an
// opset upgrade) run on the reference executor. Hostile input — garbage
// bytes, truncation, escaping external-data paths — must fail cleanly.
#include "frontends/onnx/onnx_importer.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/base/limits.h"
#include "engine/base/scoped_env.h"
#include "engine/runtime/reference_executor.h"

namespace kiln::onnx {
namespace {

namespace pb = ::onnx;
namespace fs = std::filesystem;

// Dims: a number → dim_value, "?" → no value, anything else → dim_param.
using Dims = std::vector<std::string>;

void set_type(pb::ValueInfoProto* vi, const std::string& name, int elem, const Dims& dims, bool with_shape = true) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  if (!with_shape) return;
  auto* shape = tt->mutable_shape();
  for (const std::string& d : dims) {
    auto* dim = shape->add_dim();
    if (d == "?") continue;
    if (std::isdigit(static_cast<unsigned char>(d[0])) || d[0] == '-') dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
}

void add_int(pb::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INT);
  a->set_i(v);
}
void add_ints(pb::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void add_float(pb::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::FLOAT);
  a->set_f(v);
}
void add_floats(pb::NodeProto* n, const std::string& name, const std::vector<float>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
void add_string(pb::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::STRING);
  a->set_s(v);
}

pb::NodeProto* add_node(pb::GraphProto* g, const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

void fill_f32(pb::TensorProto* t, const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<float>& values, bool raw = true) {
  t->set_name(name);
  t->set_data_type(pb::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  if (raw) t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  else
    for (float v : values) t->add_float_data(v);
}

struct Model {
  pb::ModelProto proto;
  pb::GraphProto* g;
  explicit Model(int64_t opset = 17) {
    proto.set_ir_version(8);
    proto.set_producer_name("kiln-test");
    auto* op = proto.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    g = proto.mutable_graph();
    g->set_name("test_graph");
  }
  void input(const std::string& name, int elem, const Dims& dims) { set_type(g->add_input(), name, elem, dims); }
  void output(const std::string& name, int elem, const Dims& dims) { set_type(g->add_output(), name, elem, dims); }
  pb::TensorProto* init_f32(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v,
                            bool raw = true) {
    auto* t = g->add_initializer();
    fill_f32(t, name, dims, v, raw);
    return t;
  }
  std::string bytes() const { return proto.SerializeAsString(); }
  StatusOr<std::unique_ptr<ir::Graph>> import(const std::string& base_dir = "") const {
    const std::string b = bytes();
    return import_model_bytes(b.data(), b.size(), base_dir);
  }
};

Tensor f32(Shape shape, std::vector<float> v) { return Tensor::from_vector<float>(std::move(shape), v); }

StatusOr<std::vector<Tensor>> run(const ir::Graph& g, const std::vector<Tensor>& inputs) {
  runtime::ReferenceExecutor exec(g);
  return exec.run(inputs);
}

void expect_values(const Tensor& t, const std::vector<float>& expected, double tol = 1e-6) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(t.get_f64(static_cast<int64_t>(i)), expected[i], tol) << "element " << i;
}

const ir::Node* find_node(const ir::Graph& g, const std::string& op) {
  for (size_t i = 0; i < g.num_nodes(); ++i)
    if (!g.node(static_cast<ir::NodeId>(i)).erased && g.node(static_cast<ir::NodeId>(i)).op == op)
      return &g.node(static_cast<ir::NodeId>(i));
  return nullptr;
}

// A small valid model: z = Relu(x + w), x: [N,3], w an initializer.
Model small_model() {
  Model m;
  m.input("x", pb::TensorProto::FLOAT, {"N", "3"});
  m.init_f32("w", {3}, {1.0f, -2.0f, 0.5f});
  add_node(m.g, "Add", {"x", "w"}, {"y"}, "add");
  add_node(m.g, "Relu", {"y"}, {"z"});
  m.output("z", pb::TensorProto::FLOAT, {"N", "3"});
  return m;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kiln_onnx_test_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  void write(const std::string& rel, const std::string& bytes) const {
    fs::create_directories(fs::path(path_ / fs::path(rel)).parent_path());
    std::ofstream(fs::path(path_) / rel, std::ios::binary) << bytes;
  }

 private:
  std::string path_;
};

std::string f32_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST(OnnxImporter, SmallModelConvertsAndRuns) {
  auto g = small_model().import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const ir::Graph& graph = **g;
  EXPECT_EQ(graph.opset, 17);
  EXPECT_EQ(graph.producer, "kiln-test");
  ASSERT_EQ(graph.main().inputs.size(), 1u);
  EXPECT_EQ(graph.value(graph.main().inputs[0]).name, "x");
  EXPECT_EQ(graph.value(graph.main().inputs[0]).shape.to_string(), "[N,3]");
  ASSERT_EQ(graph.main().nodes.size(), 2u);
  EXPECT_EQ(graph.node(graph.main().nodes[0]).name, "add");
  EXPECT_EQ(graph.node(graph.main().nodes[1]).name, "Relu_1");  // synthesized from op and index
  ASSERT_EQ(graph.main().outputs.size(), 1u);
  const ir::Value& z = graph.value(graph.main().outputs[0]);
  EXPECT_EQ(z.name, "z");
  EXPECT_EQ(z.dtype, DType::kFloat32);
  EXPECT_EQ(z.shape.to_string(), "[N,3]");
  ASSERT_EQ(graph.constants().size(), 1u);

  auto out = run(graph, {f32({2, 3}, {1, 1, 1, -5, 3, 0})});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_values((*out)[0], {2, 0, 1.5, 0, 1, 0.5});
}

TEST(OnnxImporter, InputWithoutDimsGetsFreshSymbolsAndInitializerInputIsConstant) {
  Model m;
  m.input("x", pb::TensorProto::FLOAT, {"?", "3"});
  m.input("w", pb::TensorProto::FLOAT, {"3"});  // also an initializer: a constant, not an input
  m.init_f32("w", {3}, {1, 2, 3}, /*raw=*/false);
  add_node(m.g, "Add", {"x", "w"}, {"y"});
  m.output("y", pb::TensorProto::FLOAT, {"?", "?"});
  auto g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_EQ((*g)->main().inputs.size(), 1u);
  EXPECT_EQ((*g)->value((*g)->main().inputs[0]).shape.to_string(), "[x_d0,3]");
  EXPECT_EQ((*g)->value((*g)->main().outputs[0]).shape.to_string(), "[x_d0,3]");
}

TEST(OnnxImporter, DeclaredShapesFillWhatInferenceLeavesOpen) {
  Model m;
  m.input("x", pb::TensorProto::FLOAT, {"N", "3"});
  add_node(m.g, "Relu", {"x"}, {"y"});
  add_node(m.g, "Relu", {"y"}, {"z"});
  set_type(m.g->add_value_info(), "y", pb::TensorProto::FLOAT, {"4", "3"});
  m.output("z", pb::TensorProto::FLOAT, {"?", "3"});
  auto g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  // The declared constant 4 is more specific than the symbol N.
  EXPECT_EQ((*g)->value((*g)->find_value("y")).shape.to_string(), "[4,3]");
  EXPECT_EQ((*g)->value((*g)->find_value("z")).shape.to_string(), "[4,3]");

  Model bad;
  bad.input("x", pb::TensorProto::FLOAT, {"2", "3"});
  add_node(bad.g, "Relu", {"x"}, {"y"});
  bad.output("y", pb::TensorProto::FLOAT, {"2", "4"});
  auto r = bad.import();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("value 'y'"), std::string::npos) << r.status().to_string();
}

TEST(OnnxImporter, ConstantNodesBecomeConstants) {
  Model m;
  m.input("x", pb::TensorProto::FLOAT, {"2"});
  auto* c = add_node(m.g, "Constant", {}, {"c"}, "const");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(pb::AttributeProto::TENSOR);
  fill_f32(a->mutable_t(), "", {2}, {10, 20});
  auto* c2 = add_node(m.g, "Constant", {}, {"k"});
  add_float(c2, "value_float", 0.5f);
  add_node(m.g, "Add", {"x", "c"}, {"y"});
  add_node(m.g, "Mul", {"y", "k"}, {"z"});
  m.output("z", pb::TensorProto::FLOAT, {"2"});
  auto g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ((*g)->main().nodes.size(), 2u);
  EXPECT_TRUE((*g)->value((*g)->find_value("c")).is_constant());
  auto out = run(**g, {f32({2}, {1, 2})});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_values((*out)[0], {5.5f, 11});
}

TEST(OnnxImporter, AllInitializerDtypesAndFields) {
  Model m;
  m.input("x", pb::TensorProto::FLOAT, {"1"});
  add_node(m.g, "Identity", {"x"}, {"y"});
  m.output("y", pb::TensorProto::FLOAT, {"1"});
  auto add = [&](const std::string& name, int type) {
    auto* t = m.g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    t->add_dims(2);
    return t;
  };
  add("i8", pb::TensorProto::INT8)->mutable_int32_data()->Add(-3), m.g->mutable_initializer(0)->add_int32_data(4);
  auto* u8 = add("u8", pb::TensorProto::UINT8);
  u8->add_int32_data(200);
  u8->add_int32_data(7);
  auto* b = add("b", pb::TensorProto::BOOL);
  b->add_int32_data(1);
  b->add_int32_data(0);
  auto* h = add("h", pb::TensorProto::FLOAT16);
  h->add_int32_data(0x3C00);  // 1.0
  h->add_int32_data(0xC000);  // -2.0
  auto* i16 = add("i16", pb::TensorProto::INT16);
  i16->add_int32_data(-300);
  i16->add_int32_data(300);
  auto* i64 = add("i64", pb::TensorProto::INT64);
  i64->add_int64_data(-(int64_t{1} << 40));
  i64->add_int64_data(5);
  auto* d = add("d", pb::TensorProto::DOUBLE);
  d->add_double_data(0.25);
  d->add_double_data(-1e300);
  auto* u64 = add("u64", pb::TensorProto::UINT64);
  u64->add_uint64_data(~uint64_t{0});
  u64->add_uint64_data(1);
  auto* u32 = add("u32", pb::TensorProto::UINT32);
  u32->add_uint64_data(4000000000u);
  u32->add_uint64_data(2);
  auto* i32raw = add("i32raw", pb::TensorProto::INT32);
  const int32_t raw[2] = {-7, 123456};
  i32raw->set_raw_data(std::string(reinterpret_cast<const char*>(raw), sizeof(raw)));

  auto g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto value = [&](const std::string& name) -> const Tensor& { return (*g)->value((*g)->find_value(name)).constant; };
  EXPECT_EQ(value("i8").dtype(), DType::kInt8);
  EXPECT_EQ(value("i8").get_i64(0), -3);
  EXPECT_EQ(value("u8").get_i64(0), 200);
  EXPECT_EQ(value("b").dtype(), DType::kBool);
  EXPECT_EQ(value("b").get_i64(0), 1);
  EXPECT_EQ(value("b").get_i64(1), 0);
  EXPECT_EQ(value("h").get_f64(0), 1.0);
  EXPECT_EQ(value("h").get_f64(1), -2.0);
  EXPECT_EQ(value("i16").get_i64(0), -300);
  EXPECT_EQ(value("i64").get_i64(0), -(int64_t{1} << 40));
  EXPECT_EQ(value("d").get_f64(1), -1e300);
  EXPECT_EQ(value("u64").data<uint64_t>()[0], ~uint64_t{0});
  EXPECT_EQ(value("u32").data<uint32_t>()[0], 4000000000u);
  EXPECT_EQ(value("i32raw").get_i64(1), 123456);
}

TEST(OnnxImporter, BadInitializerSizeNamesTheTensor) {
  Model m = small_model();
  m.g->mutable_initializer(0)->set_raw_data(f32_bytes({1, 2}));  // shape says 3
  auto g = m.import();
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("initializer 'w'"), std::string::npos) << g.status().to_string();
  EXPECT_NE(g.status().message().find("raw_data has 8 bytes"), std::string::npos) << g.status().to_string();

  Model typed = small_model();
  auto* t = typed.g->mutable_initializer(0);
  t->clear_raw_data();
  t->add_float_data(1);
  g = typed.import();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("initializer 'w': float_data has 1 values"), std::string::npos)
      << g.status().to_string();

  Model negative = small_model();
  negative.g->mutable_initializer(0)->set_dims(0, -3);
  g = negative.import();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("initializer 'w' has negative dim -3"), std::string::npos)
      << g.status().to_string();

  Model huge = small_model();  // a hostile shape with no data behind it must not allocate
  huge.g->mutable_initializer(0)->set_dims(0, int64_t{1} << 40);
  g = huge.import();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("initializer 'w'"), std::string::npos) << g.status().to_string();
}

TEST(OnnxImporter, UnknownAndUnsupportedDtypes) {
  Model m = small_model();
  m.g->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(99);
  auto g = m.import();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("graph input 'x' has unknown element type 99"), std::string::npos)
      << g.status().to_string();

  Model s = small_model();
  s.g->mutable_initializer(0)->set_data_type(pb::TensorProto::BFLOAT16);
  g = s.import();
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(g.status().message().find("initializer 'w' has element type bfloat16"), std::string::npos);

  Model q = small_model();  // int4 (ONNX 22), as a quantizer's weights would be
  q.g->mutable_initializer(0)->set_data_type(22);
  g = q.import();
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(g.status().message().find("initializer 'w' has element type int4"), std::string::npos)
      << g.status().to_string();
}

TEST(OnnxImporter, UnknownOpsAreAllListed) {
  Model m;
  m.input("x", pb::TensorProto::FLOAT, {"2"});
  add_node(m.g, "FrobnicateA", {"x"}, {"a"}, "fa");
  add_node(m.g, "FrobnicateA", {"a"}, {"b"}, "fa2");
  auto* custom = add_node(m.g, "Thing", {"b"}, {"c"}, "t");
  custom->set_domain("com.example");
  m.output("c", pb::TensorProto::FLOAT, {"2"});
  auto g = m.import();
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
  const std::string& msg = g.status().message();
  EXPECT_NE(msg.find("node 'fa' (FrobnicateA): op is not supported (and 1 more FrobnicateA nodes)"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("node 't' (com.example.Thing): op is not supported"), std::string::npos) << msg;
}

TEST(OnnxImporter, DanglingInputAndDuplicateOutputs) {
  Model m;
  m.input("x", pb::TensorProto::FLOAT, {"2"});
  add_node(m.g, "Add", {"x", "foo"}, {"y"}, "x");
  m.output("y", pb::TensorProto::FLOAT, {"2"});
  auto g = m.import();
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            "node 'x' (Add): input 1 'foo' is not produced by any node, initializer or graph input");

  Model dup;
  dup.input("x", pb::TensorProto::FLOAT, {"2"});
  add_node(dup.g, "Relu", {"x"}, {"y"}, "r1");
  add_node(dup.g, "Neg", {"x"}, {"y"}, "r2");
  dup.output("y", pb::TensorProto::FLOAT, {"2"});
  g = dup.import();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("node 'r2' (Neg): output 0 'y' is already produced by node 'r1' (Relu)"),
            std::string::npos)
      << g.status().to_string();

  Model shadow;
  shadow.input("x", pb::TensorProto::FLOAT, {"2"});
  add_node(shadow.g, "Relu", {"x"}, {"x"}, "r");
  shadow.output("x", pb::TensorProto::FLOAT, {"2"});
  g = shadow.import();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("node 'r' (Relu): output 0 'x' is already defined"), std::string::npos)
      << g.status().to_string();

  Model missing_out;
  missing_out.input("x", pb::TensorProto::FLOAT, {"2"});
  add_node(missing_out.g, "Relu", {"x"}, {"y"});
  missing_out.output("nope", pb::TensorProto::FLOAT, {"2"});
  g = missing_out.import();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("graph output 'nope' is not produced"), std::string::npos);
}

TEST(OnnxImporter, UnsortedNodesAreSortedAndCyclesRejected) {
  Model m;
  m.input("x", pb::TensorProto::FLOAT, {"2"});
  add_node(m.g, "Neg", {"y"}, {"z"}, "second");
  add_node(m.g, "Relu", {"x"}, {"y"}, "first");
  m.output("z", pb::TensorProto::FLOAT, {"2"});
  auto g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ((*g)->node((*g)->main().nodes[0]).name, "first");
  auto out = run(**g, {f32({2}, {-1, 2})});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_values((*out)[0], {0, -2});

  Model cyc;
  cyc.input("x", pb::TensorProto::FLOAT, {"2"});
  add_node(cyc.g, "Add", {"x", "b"}, {"a"}, "n1");
  add_node(cyc.g, "Relu", {"a"}, {"b"}, "n2");
  cyc.output("b", pb::TensorProto::FLOAT, {"2"});
  g = cyc.import();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("cycle through node 'n1' (Add)"), std::string::npos) << g.status().to_string();
}

TEST(OnnxImporter, OpsetRange) {
  for (int64_t opset : {0, 6, 22}) {
    Model m = small_model();
    m.proto.mutable_opset_import(0)->set_version(opset);
    auto g = m.import();
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(g.status().message().find("opset " + std::to_string(opset) + "; Kiln imports opsets 7 to 21"),
              std::string::npos)
        << g.status().to_string();
  }
  // Opsets 1-6 import when every op kept its meaning since (and drop the
  // old 'consumed_inputs' hint).
  Model old(6);
  old.input("x", pb::TensorProto::FLOAT, {"2"});
  add_ints(add_node(old.g, "Relu", {"x"}, {"y"}), "consumed_inputs", {0});
  old.output("y", pb::TensorProto::FLOAT, {"2"});
  auto imported = old.import();
  ASSERT_TRUE(imported.ok()) << imported.status().to_string();
  EXPECT_EQ(find_node(**imported, "Relu")->attr("consumed_inputs"), nullptr);
  Model old_add(6);
  old_add.input("x", pb::TensorProto::FLOAT, {"2"});
  add_node(old_add.g, "Relu", {"x"}, {"y"});
  add_int(add_node(old_add.g, "Add", {"x", "y"}, {"z"}, "add"), "broadcast", 1);
  old_add.output("z", pb::TensorProto::FLOAT, {"2"});
  imported = old_add.import();
  ASSERT_FALSE(imported.ok());
  EXPECT_NE(imported.status().message().find("node 'add' (Add) did not"), std::string::npos)
      << imported.status().to_string();

  Model ai = small_model();
  ai.proto.mutable_opset_import(0)->set_domain("ai.onnx");
  EXPECT_TRUE(ai.import().ok());
  Model none = small_model();
  none.proto.clear_opset_import();
  auto g = none.import();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("opset_import is missing"), std::string::npos);
}

// Opset-11 forms: attributes that later became inputs.
TEST(OnnxImporter, Opset11AttributeFormsBecomeInputs) {
  Model m(11);
  m.input("x", pb::TensorProto::FLOAT, {"1", "4", "2"});
  auto* sq = add_node(m.g, "Squeeze", {"x"}, {"s"}, "sq");  // [4,2]
  add_ints(sq, "axes", {0});
  auto* sp = add_node(m.g, "Split", {"s"}, {"a", "b"}, "sp");  // [1,2] and [3,2]
  add_int(sp, "axis", 0);
  add_ints(sp, "split", {1, 3});
  auto* rs = add_node(m.g, "ReduceSum", {"b"}, {"r"}, "rs");  // [1,2]
  add_ints(rs, "axes", {0});
  auto* un = add_node(m.g, "Unsqueeze", {"a"}, {"u"}, "un");  // [1,1,2]
  add_ints(un, "axes", {0});
  auto* rm = add_node(m.g, "ReduceMean", {"u"}, {"mean"}, "rm");  // [1,1,1]
  add_ints(rm, "axes", {2});
  m.output("r", pb::TensorProto::FLOAT, {"1", "2"});
  m.output("mean", pb::TensorProto::FLOAT, {"1", "1", "1"});
  auto g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const ir::Graph& graph = **g;
  const ir::Node* split = find_node(graph, "Split");
  ASSERT_NE(split, nullptr);
  ASSERT_EQ(split->inputs.size(), 2u);
  EXPECT_EQ(split->attr("split"), nullptr);
  EXPECT_EQ(graph.value(split->inputs[1]).constant.to_i64_vector(), (std::vector<int64_t>{1, 3}));
  const ir::Node* squeeze = find_node(graph, "Squeeze");
  ASSERT_EQ(squeeze->inputs.size(), 2u);
  EXPECT_EQ(graph.value(squeeze->inputs[1]).constant.to_i64_vector(), (std::vector<int64_t>{0}));
  EXPECT_EQ(find_node(graph, "ReduceMean")->inputs.size(), 2u);
  EXPECT_EQ(graph.value(graph.main().outputs[0]).shape.to_string(), "[1,2]");

  auto out = run(graph, {f32({1, 4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_values((*out)[0], {3 + 5 + 7, 4 + 6 + 8});
  expect_values((*out)[1], {1.5f});
}

TEST(OnnxImporter, OldSliceClipPadForms) {
  Model m(9);
  m.input("x", pb::TensorProto::FLOAT, {"2", "4"});
  auto* sl = add_node(m.g, "Slice", {"x"}, {"s"}, "sl");  // x[:, 1:3] -> [2,2]
  add_ints(sl, "starts", {1});
  add_ints(sl, "ends", {3});
  add_ints(sl, "axes", {1});
  auto* cl = add_node(m.g, "Clip", {"s"}, {"c"}, "cl");
  add_float(cl, "min", 2.5f);
  add_float(cl, "max", 6.0f);
  auto* pd = add_node(m.g, "Pad", {"c"}, {"p"}, "pd");  // [2,2] -> [2,3], pad right with 9
  add_ints(pd, "pads", {0, 0, 0, 1});
  add_float(pd, "value", 9.0f);
  m.output("p", pb::TensorProto::FLOAT, {"2", "3"});
  auto g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(find_node(**g, "Slice")->inputs.size(), 4u);
  EXPECT_EQ(find_node(**g, "Clip")->inputs.size(), 3u);
  const ir::Node* pad = find_node(**g, "Pad");
  ASSERT_EQ(pad->inputs.size(), 3u);
  EXPECT_EQ((*g)->value(pad->inputs[2]).constant.dtype(), DType::kFloat32);
  auto out = run(**g, {f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_values((*out)[0], {2.5f, 3, 9, 6, 6, 9});
}

TEST(OnnxImporter, Opset11SoftmaxKeepsItsFlattenSemantics) {
  Model m(11);
  m.input("x", pb::TensorProto::FLOAT, {"2", "2", "2"});
  auto* sm = add_node(m.g, "Softmax", {"x"}, {"y"}, "sm");
  add_int(sm, "axis", 1);  // normalizes over the last two axes together
  m.output("y", pb::TensorProto::FLOAT, {"2", "2", "2"});
  auto g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_NE(find_node(**g, "Flatten"), nullptr);
  EXPECT_EQ((*g)->value((*g)->main().outputs[0]).shape.to_string(), "[2,2,2]");
  std::vector<float> x = {0, 1, 2, 3, -1, 0, 1, 5};
  auto out = run(**g, {f32({2, 2, 2}, x)});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  std::vector<float> expected;
  for (int b = 0; b < 2; ++b) {
    double sum = 0;
    for (int i = 0; i < 4; ++i) sum += std::exp(x[b * 4 + i]);
    for (int i = 0; i < 4; ++i) expected.push_back(static_cast<float>(std::exp(x[b * 4 + i]) / sum));
  }
  expect_values((*out)[0], expected, 1e-6);

  Model last(11);  // axis = last: the new op as is, no Flatten
  last.input("x", pb::TensorProto::FLOAT, {"2", "3"});
  add_node(last.g, "Softmax", {"x"}, {"y"});
  last.output("y", pb::TensorProto::FLOAT, {"2", "3"});
  g = last.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(find_node(**g, "Flatten"), nullptr);
  EXPECT_EQ(find_node(**g, "Softmax")->attr_int("axis", 0), -1);
}

TEST(OnnxImporter, TrainingDropoutWithZeroRatioIsInferenceDropout) {
  for (float ratio : {0.0f, 0.5f}) {
    Model m(13);
    m.input("x", pb::TensorProto::FLOAT, {"3"});
    m.init_f32("ratio", {}, {ratio});
    auto* t = m.g->add_initializer();
    t->set_name("training");
    t->set_data_type(pb::TensorProto::BOOL);
    t->add_int32_data(1);
    add_node(m.g, "Dropout", {"x", "ratio", "training"}, {"y"});
    m.output("y", pb::TensorProto::FLOAT, {"3"});
    auto g = m.import();
    if (ratio != 0.0f) {
      // Only a zero ratio makes training mode a no-op; otherwise it stays and
      // the (inference-only) op rejects it.
      ASSERT_FALSE(g.ok());
      EXPECT_NE(g.status().message().find("training_mode"), std::string::npos) << g.status().to_string();
      continue;
    }
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    EXPECT_EQ(find_node(**g, "Dropout")->inputs.size(), 2u);
    auto out = run(**g, {f32({3}, {1, -2, 3})});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_values((*out)[0], {1, -2, 3});
  }
}

TEST(OnnxImporter, UpsampleBecomesResize) {
  Model m(7);
  m.input("x", pb::TensorProto::FLOAT, {"1", "1", "2", "2"});
  auto* up = add_node(m.g, "Upsample", {"x"}, {"y"}, "up");
  add_floats(up, "scales", {1, 1, 2, 2});
  add_string(up, "mode", "nearest");
  m.output("y", pb::TensorProto::FLOAT, {"1", "1", "4", "4"});
  auto g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const ir::Node* resize = find_node(**g, "Resize");
  ASSERT_NE(resize, nullptr);
  EXPECT_EQ(resize->attr_string("coordinate_transformation_mode", ""), "asymmetric");
  EXPECT_EQ(resize->attr_string("nearest_mode", ""), "floor");
  auto out = run(**g, {f32({1, 1, 2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_values((*out)[0], {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}

TEST(OnnxImporter, IfSubgraphsSeeOuterValues) {
  Model m;
  m.input("cond", pb::TensorProto::BOOL, {});
  m.input("x", pb::TensorProto::FLOAT, {"2"});
  m.init_f32("one", {1}, {1.0f});
  auto* node = add_node(m.g, "If", {"cond"}, {"y"}, "if");
  auto* then_attr = node->add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(pb::AttributeProto::GRAPH);
  pb::GraphProto* then_g = then_attr->mutable_g();
  then_g->set_name("then");
  add_node(then_g, "Add", {"x", "one"}, {"t"});  // both from the outer scope
  set_type(then_g->add_output(), "t", pb::TensorProto::FLOAT, {"2"});
  auto* else_attr = node->add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(pb::AttributeProto::GRAPH);
  pb::GraphProto* else_g = else_attr->mutable_g();
  else_g->set_name("else");
  fill_f32(else_g->add_initializer(), "two", {1}, {2.0f});
  add_node(else_g, "Mul", {"x", "two"}, {"e"});
  set_type(else_g->add_output(), "e", pb::TensorProto::FLOAT, {"2"});
  m.output("y", pb::TensorProto::FLOAT, {"2"});

  auto g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const ir::Node* if_node = find_node(**g, "If");
  ASSERT_NE(if_node, nullptr);
  const ir::Attribute* then_region = if_node->attr("then_branch");
  ASSERT_NE(then_region, nullptr);
  ASSERT_EQ(then_region->kind, ir::AttrKind::kGraph);
  EXPECT_EQ((*g)->region(then_region->region).parent, ir::kMainRegion);
  EXPECT_EQ((*g)->region(then_region->region).nodes.size(), 1u);
  EXPECT_EQ((*g)->value((*g)->main().outputs[0]).dtype, DType::kFloat32);

  Tensor yes = Tensor::from_vector<bool>({}, {true});
  Tensor no = Tensor::from_vector<bool>({}, {false});
  auto a = run(**g, {yes, f32({2}, {1, 2})});
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  expect_values((*a)[0], {2, 3});
  auto b = run(**g, {no, f32({2}, {1, 2})});
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  expect_values((*b)[0], {2, 4});

  // A dangling name inside the branch is reported with the branch's context.
  else_g->mutable_node(0)->set_input(1, "three");
  g = m.import();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("attribute 'else_branch'"), std::string::npos) << g.status().to_string();
  EXPECT_NE(g.status().message().find("input 1 'three' is not produced"), std::string::npos) << g.status().to_string();
}

// An If nested `depth` deep: each then-branch holds the next If, the
// innermost returns x; every else-branch returns x.
Model nested_ifs(int depth) {
  Model m;
  m.input("cond", pb::TensorProto::BOOL, {});
  m.input("x", pb::TensorProto::FLOAT, {"2"});
  pb::GraphProto* g = m.g;
  std::string out = "y";
  for (int level = 0; level < depth; ++level) {
    auto* node = add_node(g, "If", {"cond"}, {out}, "if" + std::to_string(level));
    auto* then_attr = node->add_attribute();
    then_attr->set_name("then_branch");
    then_attr->set_type(pb::AttributeProto::GRAPH);
    auto* else_attr = node->add_attribute();
    else_attr->set_name("else_branch");
    else_attr->set_type(pb::AttributeProto::GRAPH);
    pb::GraphProto* else_g = else_attr->mutable_g();
    add_node(else_g, "Identity", {"x"}, {"e" + std::to_string(level)});
    set_type(else_g->add_output(), "e" + std::to_string(level), pb::TensorProto::FLOAT, {"2"});
    g = then_attr->mutable_g();
    out = "t" + std::to_string(level);
    set_type(g->add_output(), out, pb::TensorProto::FLOAT, {"2"});
  }
  add_node(g, "Identity", {"x"}, {out});
  m.output("y", pb::TensorProto::FLOAT, {"2"});
  return m;
}

TEST(OnnxImporter, SubgraphNestingDepthIsLimited) {
  kiln::testing::ScopedEnv limit(std::string(kMaxSubgraphDepthEnv), "4");
  auto ok = nested_ifs(4).import();
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  auto r = run(**ok, {Tensor::from_vector<bool>({}, {true}), f32({2}, {1, 2})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  expect_values((*r)[0], {1, 2});
  auto deep = nested_ifs(5).import();
  ASSERT_FALSE(deep.ok());
  const std::string& msg = deep.status().message();
  EXPECT_NE(msg.find("node 'if4' (If): attribute 'then_branch' nests sub-graphs 5 deep, beyond the limit of 4"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("KILN_MAX_SUBGRAPH_DEPTH"), std::string::npos) << msg;
}

TEST(OnnxImporter, LoopBodyInputsWithoutTypesTakeThemFromTheNode) {
  Model m;
  m.input("trip", pb::TensorProto::INT64, {});
  m.input("cond", pb::TensorProto::BOOL, {});
  m.input("init", pb::TensorProto::FLOAT, {"2"});
  m.input("x", pb::TensorProto::FLOAT, {"2"});
  auto* loop = add_node(m.g, "Loop", {"trip", "cond", "init"}, {"final"}, "loop");
  auto* body_attr = loop->add_attribute();
  body_attr->set_name("body");
  body_attr->set_type(pb::AttributeProto::GRAPH);
  pb::GraphProto* body = body_attr->mutable_g();
  body->set_name("body");
  for (const char* name : {"i", "c_in", "acc_in"}) body->add_input()->set_name(name);  // no types at all
  add_node(body, "Identity", {"c_in"}, {"c_out"});
  add_node(body, "Add", {"acc_in", "x"}, {"acc_out"});  // x from the outer scope
  for (const char* name : {"c_out", "acc_out"}) body->add_output()->set_name(name);
  m.output("final", pb::TensorProto::FLOAT, {"2"});
  auto g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const ir::Attribute* body_region = find_node(**g, "Loop")->attr("body");
  ASSERT_NE(body_region, nullptr);
  const ir::Region& r = (*g)->region(body_region->region);
  ASSERT_EQ(r.inputs.size(), 3u);
  EXPECT_EQ((*g)->value(r.inputs[0]).dtype, DType::kInt64);
  EXPECT_EQ((*g)->value(r.inputs[1]).dtype, DType::kBool);
  EXPECT_EQ((*g)->value(r.inputs[2]).dtype, DType::kFloat32);
  EXPECT_EQ((*g)->value(r.outputs[1]).dtype, DType::kFloat32);
  auto out = run(**g, {Tensor::scalar_i64(3), Tensor::from_vector<bool>({}, {true}), f32({2}, {1, 2}), f32({2}, {10, 20})});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_values((*out)[0], {31, 62});
}

TEST(OnnxImporter, ExternalDataIsConfinedToTheModelDirectory) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  dir.write("weights/w.bin", std::string(8, 'x') + f32_bytes({1.0f, -2.0f, 0.5f}));
  auto model_with_location = [&](const std::string& location, int64_t offset, const std::string& length) {
    Model m = small_model();
    auto* t = m.g->mutable_initializer(0);
    t->clear_raw_data();
    t->set_data_location(pb::TensorProto::EXTERNAL);
    auto* e = t->add_external_data();
    e->set_key("location");
    e->set_value(location);
    e = t->add_external_data();
    e->set_key("offset");
    e->set_value(std::to_string(offset));
    if (!length.empty()) {
      e = t->add_external_data();
      e->set_key("length");
      e->set_value(length);
    }
    return m;
  };
  auto write_model = [&](const Model& m) {
    dir.write("model.onnx", m.bytes());
    return import_model_file(dir.path() + "/model.onnx");
  };

  auto g = write_model(model_with_location("weights/w.bin", 8, "12"));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ((*g)->value((*g)->find_value("w")).constant.to_f32_vector(), (std::vector<float>{1.0f, -2.0f, 0.5f}));
  ASSERT_TRUE(write_model(model_with_location("./weights//w.bin", 8, "")).ok());

  // Bytes without a directory cannot use external data.
  g = model_with_location("weights/w.bin", 8, "12").import("");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("without a directory"), std::string::npos);
  ImportOptions no_external;
  no_external.allow_external_data = false;
  const std::string bytes = model_with_location("weights/w.bin", 8, "12").bytes();
  g = import_model_bytes(bytes.data(), bytes.size(), dir.path(), no_external);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kPermissionDenied);

  g = write_model(model_with_location("weights/../weights/w.bin", 8, "12"));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(g.status().message().find("initializer 'w'"), std::string::npos);
  EXPECT_NE(g.status().message().find("'..'"), std::string::npos) << g.status().to_string();

  g = write_model(model_with_location(dir.path() + "/weights/w.bin", 8, "12"));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(g.status().message().find("absolute"), std::string::npos) << g.status().to_string();

  ASSERT_EQ(::symlink((dir.path() + "/weights/w.bin").c_str(), (dir.path() + "/link.bin").c_str()), 0);
  g = write_model(model_with_location("link.bin", 8, "12"));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(g.status().message().find("symlink 'link.bin'"), std::string::npos) << g.status().to_string();

  ASSERT_EQ(::symlink((dir.path() + "/weights").c_str(), (dir.path() + "/linkdir").c_str()), 0);
  g = write_model(model_with_location("linkdir/w.bin", 8, "12"));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(g.status().message().find("symlink 'linkdir'"), std::string::npos) << g.status().to_string();

  g = write_model(model_with_location("weights/w.bin", 12, ""));  // 8 bytes left, 12 needed
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(g.status().message().find("initializer 'w'"), std::string::npos);
  EXPECT_NE(g.status().message().find("'weights/w.bin'"), std::string::npos);
  EXPECT_NE(g.status().message().find("too short"), std::string::npos) << g.status().to_string();

  g = write_model(model_with_location("weights/w.bin", 8, "16"));  // length disagrees with the shape
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'length' is 16 bytes"), std::string::npos) << g.status().to_string();

  g = write_model(model_with_location("weights/missing.bin", 0, ""));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kNotFound);

  g = write_model(model_with_location("weights", 0, ""));  // a directory
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("not a regular file"), std::string::npos) << g.status().to_string();

  // A FIFO is refused before it is opened (an open would block), and a hard
  // link may be a file outside the directory.
  ASSERT_EQ(::mkfifo((dir.path() + "/weights/fifo.bin").c_str(), 0600), 0);
  g = write_model(model_with_location("weights/fifo.bin", 0, ""));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("is a FIFO, not a regular file"), std::string::npos) << g.status().to_string();
  ASSERT_EQ(::link((dir.path() + "/weights/w.bin").c_str(), (dir.path() + "/hard.bin").c_str()), 0);
  g = write_model(model_with_location("hard.bin", 8, "12"));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(g.status().message().find("'hard.bin' is a hard link (2 links)"), std::string::npos)
      << g.status().to_string();

  g = write_model(model_with_location("weights/w.bin", 8, "-1"));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("not a non-negative integer"), std::string::npos) << g.status().to_string();
}

TEST(OnnxImporter, SupportReportListsOpsAndTypes) {
  TempDir dir;
  Model m(9);
  m.input("s", pb::TensorProto::STRING, {"2"});
  m.input("x", pb::TensorProto::FLOAT, {"2"});
  add_node(m.g, "Frobnicate", {"x"}, {"y"});
  add_node(m.g, "Upsample", {"y", "scales"}, {"z"});  // upgraded to Resize, which exists
  set_type(m.g->add_output(), "z", pb::TensorProto::BFLOAT16, {"2"});
  m.g->add_output()->set_name("seq");
  m.g->mutable_output(1)->mutable_type()->mutable_sequence_type();
  dir.write("m.onnx", m.bytes());
  auto report = check_model_support(dir.path() + "/m.onnx");
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->ops, (std::vector<std::string>{"Frobnicate"}));
  EXPECT_EQ(report->types, (std::vector<std::string>{"bfloat16", "sequence", "string"}));
  EXPECT_FALSE(report->supported());

  dir.write("ok.onnx", small_model().bytes());
  report = check_model_support(dir.path() + "/ok.onnx");
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_TRUE(report->supported());
}

TEST(OnnxImporter, FilesAndTensorProtoFiles) {
  TempDir dir;
  auto missing = import_model_file(dir.path() + "/nope.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  pb::TensorProto t;
  fill_f32(&t, "input_0", {2, 2}, {1, 2, 3, 4});
  dir.write("input_0.pb", t.SerializeAsString());
  auto loaded = load_tensor_proto_file(dir.path() + "/input_0.pb");
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(shape_to_string(loaded->shape()), "[2,2]");
  EXPECT_EQ(loaded->to_f32_vector(), (std::vector<float>{1, 2, 3, 4}));

  // Files that are not regular files are refused without reading (a FIFO
  // would block the open, /dev/zero never ends).
  ASSERT_EQ(::mkfifo((dir.path() + "/fifo.onnx").c_str(), 0600), 0);
  for (const std::string& path : {dir.path() + "/fifo.onnx", std::string("/dev/zero"), dir.path()}) {
    auto special = import_model_file(path);
    ASSERT_FALSE(special.ok()) << path;
    EXPECT_NE(special.status().message().find("not a regular file"), std::string::npos) << special.status().to_string();
    auto tensor = load_tensor_proto_file(path);
    ASSERT_FALSE(tensor.ok()) << path;
    EXPECT_NE(tensor.status().message().find("not a regular file"), std::string::npos) << tensor.status().to_string();
  }

  dir.write("garbage.pb", std::string("\xff\xff\xff\xff\x0f garbage", 14));
  auto bad = load_tensor_proto_file(dir.path() + "/garbage.pb");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
}

TEST(OnnxImporter, TruncatedBytesFailCleanly) {
  const std::string bytes = small_model().bytes();
  int failures = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto g = import_model_bytes(bytes.data(), len, "");
    if (!g.ok()) {
      ++failures;
    } else {
      EXPECT_FALSE((*g)->main().outputs.empty());
    }
  }
  // Most prefixes cut a field in half or lose the outputs.
  EXPECT_GT(failures, static_cast<int>(bytes.size() * 9 / 10));
  EXPECT_TRUE(import_model_bytes(bytes.data(), bytes.size(), "").ok());
  EXPECT_FALSE(import_model_bytes(nullptr, 10, "").ok());
}

TEST(OnnxImporter, MutatedBytesNeverCrash) {
  Model m = small_model();
  // Give the mutations more structure to hit: an opset-11 form and a sub-graph.
  auto* sq = add_node(m.g, "Unsqueeze", {"z"}, {"u"}, "u");
  add_ints(sq, "axes", {0});
  m.output("u", pb::TensorProto::FLOAT, {"1", "N", "3"});
  m.proto.mutable_opset_import(0)->set_version(11);
  const std::string bytes = m.bytes();
  ASSERT_TRUE(import_model_bytes(bytes.data(), bytes.size(), "").ok());
  std::mt19937 rng(1234);
  int ok_count = 0;
  for (int iter = 0; iter < 600; ++iter) {
    std::string mutated = bytes;
    const int kind = iter % 4;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % mutated.size();
      if (kind == 0) mutated[pos] = static_cast<char>(rng());
      else if (kind == 1) mutated[pos] = static_cast<char>(mutated[pos] ^ (1 << (rng() % 8)));
      else if (kind == 2) mutated.insert(pos, 1, static_cast<char>(rng()));
      else mutated.erase(pos, 1 + rng() % 8);
      if (mutated.empty()) break;
    }
    if (iter % 7 == 0) mutated.resize(rng() % (mutated.size() + 1));
    auto g = import_model_bytes(mutated.data(), mutated.size(), "");
    if (g.ok()) {
      ++ok_count;
      EXPECT_FALSE((*g)->main().outputs.empty());
    } else {
      EXPECT_FALSE(g.status().message().empty());
    }
  }
  // Pure random bytes too.
  for (int iter = 0; iter < 200; ++iter) {
    std::string noise(rng() % 512, '\0');
    for (char& c : noise) c = static_cast<char>(rng());
    auto g = import_model_bytes(noise.data(), noise.size(), "");
    if (!g.ok()) {
      EXPECT_FALSE(g.status().message().empty());
    }
  }
  EXPECT_LT(ok_count, 600);
}

}  // namespace
}  // namespace kiln::onnx
