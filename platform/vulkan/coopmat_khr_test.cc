// The NV -> KHR cooperative-matrix rewrite on small GLSL kernels: what it
// makes (read back word by word here, independently of the pass's own
// check) and the modules it must refuse with a clear error. The real
// tensor-core kernels are rewritten in planner/gemm_coopmat_test.cc and
// fusion_attention_test.cc. spirv-val of the installed SPIRV-Tools rejects
// the KHR capability, so it cannot judge the output; a device with
// VK_KHR_cooperative_matrix does (GemmCoopMatKhrDevice*).
#include "platform/vulkan/coopmat_khr.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "platform/vulkan/shader_compiler.h"

namespace kiln::vk {
namespace {

// A module's instructions as (opcode, words), for reading results back.
struct Inst {
  uint32_t op;
  std::vector<uint32_t> w;
};
std::vector<Inst> instructions(const std::vector<uint32_t>& spirv) {
  std::vector<Inst> out;
  for (size_t i = 5; i < spirv.size();) {
    const uint32_t n = spirv[i] >> 16;
    EXPECT_GT(n, 0u);
    if (n == 0) break;
    out.push_back({spirv[i] & 0xffffu, std::vector<uint32_t>(spirv.begin() + i, spirv.begin() + i + n)});
    i += n;
  }
  return out;
}

std::vector<uint32_t> compile(const std::string& body, uint32_t vulkan_version = VK_API_VERSION_1_3) {
  auto compiler = ShaderCompiler::create();
  EXPECT_TRUE(compiler.ok());
  const std::string glsl =
      "#version 450\n"
      "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
      "#extension GL_KHR_memory_scope_semantics : require\n"
      "#extension GL_NV_cooperative_matrix : require\n"
      "layout(local_size_x = 32) in;\n"
      "layout(binding = 0) buffer X { float16_t x[]; };\n"
      "layout(binding = 1) buffer Y { float y[]; };\n"
      "layout(binding = 2) buffer H { float16_t h[]; };\n"
      "shared uvec4 tile[256];\n"
      "#define M16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>\n"
      "#define M32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>\n" +
      body;
  CompileOptions options;
  options.vulkan_version = vulkan_version;
  auto spirv = (*compiler)->compile(glsl, options);
  EXPECT_TRUE(spirv.ok()) << spirv.status().to_string();
  return spirv.ok() ? *spirv : std::vector<uint32_t>{};
}

// What a rewritten module holds, read back from its words.
struct KhrModule {
  std::map<uint32_t, uint32_t> constants;  // OpConstant id -> value
  std::map<uint32_t, uint32_t> type_of;
  struct Matrix {
    uint32_t component, rows, cols, use;
  };
  std::map<uint32_t, Matrix> matrices;  // OpTypeCooperativeMatrixKHR id -> its operands (constants resolved)
  std::vector<std::vector<uint32_t>> muladds, loads, stores;
  std::set<uint32_t> opcodes, capabilities;
  uint32_t max_result_id = 0;
};

KhrModule read(const std::vector<uint32_t>& spirv) {
  KhrModule k;
  std::map<uint32_t, std::vector<uint32_t>> matrix_words;
  for (const Inst& i : instructions(spirv)) {
    k.opcodes.insert(i.op);
    if (i.op == 17) k.capabilities.insert(i.w[1]);                          // OpCapability
    if (i.op == 43) k.constants[i.w[2]] = i.w[3], k.type_of[i.w[2]] = i.w[1];  // OpConstant
    if (i.op == 4456) {
      matrix_words[i.w[1]] = i.w;
      k.max_result_id = std::max(k.max_result_id, i.w[1]);
    }
    if (i.op == 4457) k.loads.push_back(i.w);
    if (i.op == 4458) k.stores.push_back(i.w);
    if (i.op == 4459) k.muladds.push_back(i.w);
    // Values with a result type among the instructions this test looks at.
    if (i.op == 4457 || i.op == 4459 || i.op == 61 /*OpLoad*/ || i.op == 59 /*OpVariable*/ ||
        i.op == 44 /*OpConstantComposite*/ || i.op == 80 /*OpCompositeConstruct*/ || i.op == 115 /*OpFConvert*/) {
      k.type_of[i.w[2]] = i.w[1];
      k.max_result_id = std::max(k.max_result_id, i.w[2]);
    }
  }
  for (const auto& [id, w] : matrix_words) k.matrices[id] = {w[2], k.constants[w[4]], k.constants[w[5]], k.constants[w[6]]};
  return k;
}

uint32_t use_of_value(const KhrModule& k, uint32_t value) {
  auto t = k.type_of.find(value);
  if (t == k.type_of.end()) return 99;
  auto m = k.matrices.find(t->second);
  return m == k.matrices.end() ? 99 : m->second.use;
}

// Every MulAdd's A, B, C and result of Uses 0, 1, 2, 2; every layout a constant 0 or 1.
void expect_khr_structure(const std::vector<uint32_t>& spirv) {
  EXPECT_TRUE(check_khr_cooperative_matrix(spirv).ok()) << check_khr_cooperative_matrix(spirv).to_string();
  const KhrModule k = read(spirv);
  EXPECT_TRUE(k.capabilities.count(6022));   // CooperativeMatrixKHR
  EXPECT_FALSE(k.capabilities.count(5357));  // CooperativeMatrixNV
  for (uint32_t nv = 5358; nv <= 5362; ++nv) EXPECT_FALSE(k.opcodes.count(nv)) << "NV opcode " << nv << " left";
  EXPECT_LT(k.max_result_id, spirv[3]);
  ASSERT_FALSE(k.muladds.empty());
  for (const auto& w : k.muladds) {
    EXPECT_EQ(use_of_value(k, w[3]), 0u);
    EXPECT_EQ(use_of_value(k, w[4]), 1u);
    EXPECT_EQ(use_of_value(k, w[5]), 2u);
    EXPECT_EQ(use_of_value(k, w[2]), 2u);
    EXPECT_EQ(w.size(), 6u);  // no Cooperative Matrix Operands for floats
  }
  for (const auto& w : k.loads) {
    ASSERT_TRUE(k.constants.count(w[4])) << "load layout is not an OpConstant";
    EXPECT_LE(k.constants.at(w[4]), 1u);
  }
  for (const auto& w : k.stores) {
    ASSERT_TRUE(k.constants.count(w[3])) << "store layout is not an OpConstant";
    EXPECT_LE(k.constants.at(w[3]), 1u);
  }
}

// `body` compiled, rewritten and its KHR structure checked; empty when a step fails.
std::vector<uint32_t> rewritten(const std::string& body) {
  const std::vector<uint32_t> nv = compile(body);
  if (nv.empty()) return {};
  auto khr = nv_to_khr_cooperative_matrix(nv);
  EXPECT_TRUE(khr.ok()) << khr.status().to_string();
  if (!khr.ok()) return {};
  expect_khr_structure(*khr);
  return *khr;
}

// The Use of every cooperative-matrix type of a KHR module.
std::multiset<uint32_t> matrix_uses(const std::vector<uint32_t>& khr) {
  std::multiset<uint32_t> uses;
  for (const auto& [id, m] : read(khr).matrices) uses.insert(m.use);
  return uses;
}

// The rewrite's error for `body`, which must compile and must not rewrite.
std::string rewrite_error(const std::string& body) {
  const std::vector<uint32_t> nv = compile(body);
  if (nv.empty()) return "(does not compile)";
  auto khr = nv_to_khr_cooperative_matrix(nv);
  EXPECT_FALSE(khr.ok());
  return khr.ok() ? "(rewrote)" : khr.status().to_string();
}

const char* kMulAdd =
    "void main() {\n"
    "  M16 a; M16 b;\n"
    "  coopMatLoadNV(a, x, 0, 16, false);\n"
    "  coopMatLoadNV(b, tile, 0, 2, true);\n"
    "  M32 c = M32(0.0);\n"
    "  c = coopMatMulAddNV(a, b, c);\n"
    "  coopMatStoreNV(c, y, 0, 16, false);\n"
    "}\n";

TEST(CoopMatKhr, SplitsATypeUsedAsAAndB) {
  for (uint32_t version : {VK_API_VERSION_1_1, VK_API_VERSION_1_3}) {
    const std::vector<uint32_t> nv = compile(kMulAdd, version);
    ASSERT_FALSE(nv.empty());
    EXPECT_TRUE(uses_nv_cooperative_matrix(nv));
    auto khr = nv_to_khr_cooperative_matrix(nv);
    ASSERT_TRUE(khr.ok()) << khr.status().to_string();
    expect_khr_structure(*khr);
    EXPECT_FALSE(uses_nv_cooperative_matrix(*khr));
    EXPECT_GT((*khr)[3], nv[3]);  // new ids: constants and the second fp16 type
    const KhrModule k = read(*khr);
    // fp16 16x16 as A and as B, fp32 16x16 as the accumulator.
    std::multiset<uint32_t> uses;
    for (const auto& [id, m] : k.matrices) {
      EXPECT_EQ(m.rows, 16u);
      EXPECT_EQ(m.cols, 16u);
      uses.insert(m.use);
    }
    EXPECT_EQ(uses, (std::multiset<uint32_t>{0, 1, 2}));
    // Loads: row-major from the buffer, column-major from shared memory, stride kept.
    ASSERT_EQ(k.loads.size(), 2u);
    EXPECT_EQ(k.constants.at(k.loads[0][4]), 0u);
    EXPECT_EQ(k.constants.at(k.loads[0][5]), 16u);
    EXPECT_EQ(k.constants.at(k.loads[1][4]), 1u);
    EXPECT_EQ(k.constants.at(k.loads[1][5]), 2u);
    ASSERT_EQ(k.stores.size(), 1u);
    EXPECT_EQ(k.constants.at(k.stores[0][3]), 0u);
    EXPECT_EQ(k.constants.at(k.stores[0][4]), 16u);
    // The runtime reflects every module it creates a pipeline from: the
    // same bindings and workgroup as the NV module's.
    auto reflection = reflect(*khr);
    ASSERT_TRUE(reflection.ok()) << reflection.status().to_string();
    auto nv_reflection = reflect(nv);
    ASSERT_TRUE(nv_reflection.ok());
    EXPECT_EQ(reflection->bindings.size(), nv_reflection->bindings.size());
    EXPECT_EQ(reflection->local_size, nv_reflection->local_size);
  }
}

TEST(CoopMatKhr, Fp16AccumulatorsThroughArraysAndArithmetic) {
  // One fp16 16x16 type as A, B and accumulator; accumulators in an array
  // through a loop, one scaled (OpMatrixTimesScalar) before its store.
  // (Adding two matrices crashes this SPIRV-Tools' optimizer; no Kiln
  // kernel does.)
  const std::vector<uint32_t> khr = rewritten(
      "void main() {\n"
      "  M16 acc[2];\n"
      "  for (int i = 0; i < 2; ++i) acc[i] = M16(float16_t(0.0));\n"
      "  for (int k = 0; k < int(gl_WorkGroupID.x); ++k) {\n"
      "    M16 a; M16 b;\n"
      "    coopMatLoadNV(a, x, 256 * k, 16, false);\n"
      "    coopMatLoadNV(b, h, 256 * k, 16, false);\n"
      "    for (int i = 0; i < 2; ++i) acc[i] = coopMatMulAddNV(a, b, acc[i]);\n"
      "  }\n"
      "  M16 scaled = acc[0] * float16_t(0.5);\n"
      "  coopMatStoreNV(scaled, h, 0, 16, false);\n"
      "  coopMatStoreNV(acc[1], h, 256, 16, false);\n"
      "}\n");
  ASSERT_FALSE(khr.empty());
  EXPECT_EQ(matrix_uses(khr), (std::multiset<uint32_t>{0, 1, 2}));
}

TEST(CoopMatKhr, AConstantReadAsAAndAsAccumulatorIsCopied) {
  // One fp16 zero (one OpConstantComposite) starts both an A operand and an
  // accumulator, and is a multiply-add's C directly: each read gets a
  // constant of its reader's Use.
  const std::vector<uint32_t> khr = rewritten(
      "void main() {\n"
      "  M16 a = M16(float16_t(0.0));\n"
      "  M16 acc = M16(float16_t(0.0));\n"
      "  M16 b;\n"
      "  if (gl_WorkGroupID.x > 0) coopMatLoadNV(a, x, 0, 16, false);\n"
      "  coopMatLoadNV(b, h, 256, 16, true);\n"
      "  acc = coopMatMulAddNV(a, b, acc);\n"
      "  acc = coopMatMulAddNV(a, b, M16(float16_t(0.0)));\n"
      "  coopMatStoreNV(acc, h, 0, 16, false);\n"
      "}\n");
  ASSERT_FALSE(khr.empty());
  EXPECT_EQ(matrix_uses(khr), (std::multiset<uint32_t>{0, 1, 2}));
  // Two fp16 zero matrices now: the accumulator's and the A operand's.
  size_t zeros = 0;
  for (const Inst& i : instructions(khr)) zeros += i.op == 44 && read(khr).matrices.count(i.w[1]);
  EXPECT_EQ(zeros, 2u);
}

TEST(CoopMatKhr, LeavesOtherModulesAlone) {
  auto compiler = ShaderCompiler::create();
  ASSERT_TRUE(compiler.ok());
  auto spirv = (*compiler)->compile(
      "#version 450\nlayout(local_size_x = 8) in;\nlayout(binding = 0) buffer B { float v[]; };\n"
      "void main() { v[gl_GlobalInvocationID.x] *= 2.0; }\n");
  ASSERT_TRUE(spirv.ok());
  EXPECT_FALSE(uses_nv_cooperative_matrix(*spirv));
  auto same = nv_to_khr_cooperative_matrix(*spirv);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, *spirv);
  EXPECT_FALSE(check_khr_cooperative_matrix(*spirv).ok());  // no KHR capability
  EXPECT_FALSE(nv_to_khr_cooperative_matrix(std::vector<uint32_t>{1, 2, 3}).ok());
}

TEST(CoopMatKhr, AnAccumulatorConvertedIntoAnAOperandStaysNV) {
  const std::string error = rewrite_error(
      "void main() {\n"
      "  M16 a; M16 b;\n"
      "  coopMatLoadNV(a, x, 0, 16, false);\n"
      "  coopMatLoadNV(b, x, 256, 16, false);\n"
      "  M32 c = coopMatMulAddNV(a, b, M32(0.0));\n"
      "  M16 p = M16(c);\n"  // fp32 accumulator -> fp16 A operand (OpFConvert)
      "  M32 d = coopMatMulAddNV(p, b, M32(0.0));\n"
      "  coopMatStoreNV(d, y, 0, 16, false);\n"
      "}\n");
  EXPECT_NE(error.find("would need two Uses"), std::string::npos) << error;
  EXPECT_NE(error.find("MatrixAKHR"), std::string::npos) << error;
  EXPECT_NE(error.find("MatrixAccumulatorKHR"), std::string::npos) << error;
}

TEST(CoopMatKhr, ANonConstantLayoutIsAnError) {
  // A specialization constant as the column-major flag: KHR's MemoryLayout
  // must be a constant instruction the pass can map to 0 or 1.
  const std::string error = rewrite_error(
      "layout(constant_id = 0) const bool kColumnMajor = false;\n"
      "void main() {\n"
      "  M16 a; M16 b;\n"
      "  coopMatLoadNV(a, x, 0, 16, kColumnMajor);\n"
      "  coopMatLoadNV(b, x, 256, 16, false);\n"
      "  M32 c = coopMatMulAddNV(a, b, M32(0.0));\n"
      "  coopMatStoreNV(c, y, 0, 16, false);\n"
      "}\n");
  EXPECT_NE(error.find("is not a constant"), std::string::npos) << error;
  EXPECT_NE(error.find("OpCooperativeMatrixLoadNV"), std::string::npos) << error;
}

TEST(CoopMatKhr, TheCheckCatchesWrongUses) {
  const std::vector<uint32_t> nv = compile(kMulAdd);
  ASSERT_FALSE(nv.empty());
  EXPECT_FALSE(check_khr_cooperative_matrix(nv).ok());  // still NV
  auto khr = nv_to_khr_cooperative_matrix(nv);
  ASSERT_TRUE(khr.ok()) << khr.status().to_string();
  // Swap the MulAdd's A and B operands: Uses B, A, Accumulator.
  std::vector<uint32_t> bad = *khr;
  for (size_t i = 5; i < bad.size(); i += bad[i] >> 16)
    if ((bad[i] & 0xffffu) == 4459) std::swap(bad[i + 3], bad[i + 4]);
  const Status st = check_khr_cooperative_matrix(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Uses"), std::string::npos) << st.to_string();
}

}  // namespace
}  // namespace kiln::vk
