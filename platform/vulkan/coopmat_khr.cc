// SPV_NV_cooperative_matrix -> SPV_KHR_cooperative_matrix (see coopmat_khr.h).
#include "platform/vulkan/coopmat_khr.h"

#define SPV_ENABLE_UTILITY_CODE
#include <spirv/unified1/spirv.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <string>
#include <string_view>

namespace kiln::vk {
namespace {

// SPV_KHR_cooperative_matrix's enumerants: newer than this SPIRV-Headers.
constexpr uint32_t kCapabilityCooperativeMatrixKHR = 6022;
constexpr uint32_t kOpTypeCooperativeMatrixKHR = 4456;
constexpr uint32_t kOpCooperativeMatrixLoadKHR = 4457;
constexpr uint32_t kOpCooperativeMatrixStoreKHR = 4458;
constexpr uint32_t kOpCooperativeMatrixMulAddKHR = 4459;
constexpr uint32_t kOpCooperativeMatrixLengthKHR = 4460;
constexpr std::string_view kNvExtension = "SPV_NV_cooperative_matrix";
constexpr std::string_view kKhrExtension = "SPV_KHR_cooperative_matrix";

// Cooperative Matrix Use.
enum MatrixUse : uint32_t { kUseA = 0, kUseB = 1, kUseAccumulator = 2 };
const char* use_name(uint32_t use) {
  return use == kUseA ? "MatrixAKHR" : use == kUseB ? "MatrixBKHR" : "MatrixAccumulatorKHR";
}

std::string id_str(uint32_t id) { return "%" + std::to_string(id); }

// One instruction of a module: its words (the first holds count and opcode).
struct Instruction {
  std::span<const uint32_t> words;
  uint32_t opcode() const { return words[0] & 0xffffu; }
  uint32_t operand(size_t i) const { return words[i]; }
  size_t size() const { return words.size(); }
};

// The module's instructions and, per id, the instruction defining it and
// the type of a value.
struct ParsedModule {
  uint32_t bound = 0;
  std::vector<Instruction> instructions;
  std::vector<int64_t> def;       // id -> instruction index, -1 if none
  std::vector<uint32_t> type_of;  // id -> result type id, 0 for non-values
};

// Whether `opcode` has a result id and a result type; this SPIRV-Headers
// predates the KHR cooperative-matrix instructions, so those are added.
void result_and_type(uint32_t opcode, bool* has_result, bool* has_type) {
  switch (opcode) {
    case kOpTypeCooperativeMatrixKHR:
      *has_result = true, *has_type = false;
      return;
    case kOpCooperativeMatrixLoadKHR:
    case kOpCooperativeMatrixMulAddKHR:
    case kOpCooperativeMatrixLengthKHR:
      *has_result = *has_type = true;
      return;
    case kOpCooperativeMatrixStoreKHR:
      *has_result = *has_type = false;
      return;
    default:
      spv::HasResultAndType(static_cast<spv::Op>(opcode), has_result, has_type);
  }
}

StatusOr<ParsedModule> parse(std::span<const uint32_t> spirv) {
  if (spirv.size() < 5 || spirv[0] != spv::MagicNumber)
    return invalid_argument("not a SPIR-V module (" + std::to_string(spirv.size()) + " words, no magic number)");
  ParsedModule m;
  m.bound = spirv[3];
  if (m.bound == 0 || m.bound > (1u << 24))
    return invalid_argument("SPIR-V module with an implausible id bound of " + std::to_string(m.bound));
  m.def.assign(m.bound, -1);
  m.type_of.assign(m.bound, 0);
  for (size_t i = 5; i < spirv.size();) {
    const uint32_t count = spirv[i] >> 16;
    if (count == 0 || i + count > spirv.size())
      return invalid_argument("malformed SPIR-V: instruction at word " + std::to_string(i) + " has word count " +
                              std::to_string(count));
    Instruction inst{spirv.subspan(i, count)};
    bool has_result = false, has_type = false;
    result_and_type(inst.opcode(), &has_result, &has_type);
    if (has_result) {
      const size_t r = has_type ? 2 : 1;
      if (inst.size() <= r) return invalid_argument("malformed SPIR-V: Op" + std::to_string(inst.opcode()) + " too short");
      const uint32_t id = inst.operand(r);
      if (id == 0 || id >= m.bound)
        return invalid_argument("SPIR-V result id " + id_str(id) + " is not under the bound " + std::to_string(m.bound));
      if (m.def[id] >= 0) return invalid_argument("SPIR-V id " + id_str(id) + " is defined twice");
      m.def[id] = static_cast<int64_t>(m.instructions.size());
      if (has_type) m.type_of[id] = inst.operand(1);
    }
    m.instructions.push_back(inst);
    i += count;
  }
  return m;
}

std::string literal_string(const Instruction& inst, size_t first_word) {
  std::string s;
  for (size_t w = first_word; w < inst.size(); ++w)
    for (int b = 0; b < 4; ++b) {
      const char c = static_cast<char>((inst.operand(w) >> (8 * b)) & 0xff);
      if (c == 0) return s;
      s += c;
    }
  return s;
}

void append_string(std::vector<uint32_t>* out, std::string_view s) {
  for (size_t i = 0; i <= s.size(); i += 4) {
    uint32_t w = 0;
    for (size_t b = 0; b < 4 && i + b < s.size(); ++b) w |= uint32_t{static_cast<unsigned char>(s[i + b])} << (8 * b);
    out->push_back(w);
  }
}

uint32_t op_word(size_t count, uint32_t opcode) { return static_cast<uint32_t>(count << 16) | opcode; }

// The value of an OpConstant of 32-bit integer type, or -1.
int64_t int_constant(const ParsedModule& m, uint32_t id) {
  if (id >= m.bound || m.def[id] < 0) return -1;
  const Instruction& c = m.instructions[static_cast<size_t>(m.def[id])];
  if (c.opcode() != spv::OpConstant || c.size() != 4) return -1;
  return c.operand(3);
}

// Union-find over ids.
class Classes {
 public:
  explicit Classes(uint32_t n) : parent_(n) {
    for (uint32_t i = 0; i < n; ++i) parent_[i] = i;
  }
  uint32_t find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void unite(uint32_t a, uint32_t b) { parent_[find(a)] = find(b); }

 private:
  std::vector<uint32_t> parent_;
};

// What the rewrite knows about the types built on NV matrices.
struct MatrixTypes {
  // id -> the type id it is built on (pointer / array element) or itself
  // for a matrix; 0 for types not built on a matrix.
  std::vector<uint32_t> base;
  std::vector<size_t> base_word;  // the word of `base` in the declaration
  bool is_matrix_based(uint32_t type) const { return type < base.size() && base[type] != 0; }
};

class Rewriter {
 public:
  explicit Rewriter(ParsedModule m) : m_(std::move(m)), classes_(m_.bound) {}

  StatusOr<std::vector<uint32_t>> run(std::span<const uint32_t> spirv) {
    KILN_RETURN_IF_ERROR(find_matrix_types());
    KILN_RETURN_IF_ERROR(unite_values());
    KILN_RETURN_IF_ERROR(seed_uses());
    plan_variants();
    return emit(spirv);
  }

 private:
  bool matrix_value(uint32_t id) const { return id < m_.bound && types_.is_matrix_based(m_.type_of[id]); }
  const Instruction& def(uint32_t id) const { return m_.instructions[static_cast<size_t>(m_.def[id])]; }

  Status find_matrix_types() {
    types_.base.assign(m_.bound, 0);
    types_.base_word.assign(m_.bound, 0);
    for (const Instruction& inst : m_.instructions) {
      switch (inst.opcode()) {
        case spv::OpTypeCooperativeMatrixNV:
          if (inst.size() != 6) return invalid_argument("OpTypeCooperativeMatrixNV " + id_str(inst.operand(1)) + " is malformed");
          types_.base[inst.operand(1)] = inst.operand(1);
          break;
        case spv::OpTypePointer:
          if (inst.size() == 4 && types_.is_matrix_based(inst.operand(3))) set_derived(inst, 3);
          break;
        case spv::OpTypeArray:
        case spv::OpTypeRuntimeArray:
          if (inst.size() >= 3 && types_.is_matrix_based(inst.operand(2))) set_derived(inst, 2);
          break;
        case spv::OpTypeStruct:
        case spv::OpTypeFunction:
          for (size_t w = 2; w < inst.size(); ++w)
            if (types_.is_matrix_based(inst.operand(w)))
              return invalid_argument(std::string(inst.opcode() == spv::OpTypeStruct ? "struct" : "function") + " type " +
                                      id_str(inst.operand(1)) + " holds cooperative-matrix type " +
                                      id_str(inst.operand(w)) + "; the KHR rewrite handles only pointers and arrays of them");
          break;
        default:
          break;
      }
    }
    return ok_status();
  }
  void set_derived(const Instruction& inst, size_t word) {
    types_.base[inst.operand(1)] = inst.operand(word);
    types_.base_word[inst.operand(1)] = word;
    derived_order_.push_back(inst.operand(1));
  }

  // Constants and undefined values of matrix type carry no Use of their
  // own: one may be read as an A operand here and an accumulator there
  // (optimizers share one OpUndef per type), so instead of joining a class
  // each read gets a copy of it with the reader's Use (free_reads_).
  bool free_value(uint32_t id) const {
    if (!matrix_value(id)) return false;
    const uint32_t op = def(id).opcode();
    return op == spv::OpUndef || op == spv::OpConstantNull ||
           (op == spv::OpConstantComposite && types_.base[m_.type_of[id]] == m_.type_of[id]);
  }

  // The operand at word `word` of the instruction being read joins the
  // class of `anchor` (a free value: is read with that class's Use).
  void link(uint32_t anchor, size_t word) {
    const uint32_t operand = m_.instructions[at_].operand(word);
    if (!matrix_value(anchor) || !matrix_value(operand)) return;
    if (free_value(operand))
      free_reads_.push_back({at_, word, anchor, -1});
    else
      classes_.unite(anchor, operand);
  }

  // Values that must share a type (and so a Use) join one class.
  Status unite_values() {
    for (at_ = 0; at_ < m_.instructions.size(); ++at_) {
      const Instruction& inst = m_.instructions[at_];
      const uint32_t op = inst.opcode();
      const size_t n = inst.size();
      bool has_result = false, has_type = false;
      result_and_type(op, &has_result, &has_type);
      const uint32_t result = has_type && n > 2 ? inst.operand(2) : 0;
      const bool matrix_result = has_type && matrix_value(result);
      switch (op) {
        case spv::OpLoad:
        case spv::OpAccessChain:
        case spv::OpInBoundsAccessChain:
        case spv::OpPtrAccessChain:
        case spv::OpCopyObject:
        case spv::OpFNegate:
        case spv::OpSNegate:
        case spv::OpFConvert:
        case spv::OpSConvert:
        case spv::OpUConvert:
        case spv::OpConvertFToU:
        case spv::OpConvertFToS:
        case spv::OpConvertSToF:
        case spv::OpConvertUToF:
        case spv::OpBitcast:
        case spv::OpMatrixTimesScalar:
        case spv::OpCompositeExtract:
          if (matrix_result && n > 3) link(result, 3);
          break;
        case spv::OpIAdd:
        case spv::OpFAdd:
        case spv::OpISub:
        case spv::OpFSub:
        case spv::OpIMul:
        case spv::OpFMul:
        case spv::OpUDiv:
        case spv::OpSDiv:
        case spv::OpFDiv:
          if (matrix_result && n > 4) link(result, 3), link(result, 4);
          break;
        case spv::OpSelect:
          if (matrix_result && n > 5) link(result, 4), link(result, 5);
          break;
        case spv::OpPhi:
          if (matrix_result)
            for (size_t w = 3; w < n; w += 2) link(result, w);
          break;
        case spv::OpCompositeInsert:
          if (matrix_result && n > 4) link(result, 4), link(result, 3);
          break;
        case spv::OpCompositeConstruct:
        case spv::OpConstantComposite:
        case spv::OpSpecConstantComposite:
          // An array of matrices shares its elements' class; a matrix from
          // one scalar (a splat) starts its own.
          if (matrix_result && types_.base[m_.type_of[result]] != m_.type_of[result])
            for (size_t w = 3; w < n; ++w) link(result, w);
          break;
        case spv::OpVariable:
          if (matrix_result && n > 4) link(result, 4);
          break;
        case spv::OpStore:
        case spv::OpCopyMemory:
          if (n > 2) link(inst.operand(1), 2);
          break;
        case spv::OpCooperativeMatrixMulAddNV:
          if (n != 6) return invalid_argument("OpCooperativeMatrixMulAddNV " + id_str(result) + " is malformed");
          break;
        case spv::OpCooperativeMatrixLoadNV:
        case spv::OpCooperativeMatrixStoreNV:
        case spv::OpCooperativeMatrixLengthNV:
        case spv::OpConstantNull:
        case spv::OpUndef:
          break;
        case spv::OpReturnValue:
          if (n > 1 && matrix_value(inst.operand(1)))
            return invalid_argument("a function returns cooperative matrix " + id_str(inst.operand(1)) +
                                    "; the KHR rewrite needs matrices inlined into one function");
          break;
        case spv::OpFunctionCall:
          for (size_t w = 4; w < n; ++w)
            if (matrix_value(inst.operand(w)))
              return invalid_argument("OpFunctionCall " + id_str(result) + " passes cooperative matrix " +
                                      id_str(inst.operand(w)) + "; the KHR rewrite needs matrices inlined into one function");
          [[fallthrough]];
        default:
          if (matrix_result)
            return invalid_argument("Op" + std::to_string(op) + " " + id_str(result) +
                                    " makes a cooperative matrix in a way the KHR rewrite does not know");
          break;
      }
    }
    return ok_status();
  }

  // Fixes the Use of a class; two different ones are the error.
  Status seed(uint32_t value, uint32_t use, uint32_t muladd, const char* role) {
    if (!matrix_value(value))
      return invalid_argument("operand " + std::string(role) + " " + id_str(value) + " of OpCooperativeMatrixMulAddNV " +
                              id_str(muladd) + " is not a cooperative matrix");
    const uint32_t root = classes_.find(value);
    auto [it, fresh] = seeds_.try_emplace(root, Seed{use, muladd, role, value});
    const Seed& s = it->second;
    if (!fresh && s.use != use)
      return invalid_argument("cooperative matrix " + id_str(value) + " would need two Uses: " + use_name(s.use) +
                              " (it shares a type with " + id_str(s.value) + ", operand " + s.role +
                              " of OpCooperativeMatrixMulAddNV " + id_str(s.muladd) + ") and " + use_name(use) +
                              " (operand " + role + " of OpCooperativeMatrixMulAddNV " + id_str(muladd) +
                              "); a KHR matrix keeps its Use through conversions, so this module stays NV");
    return ok_status();
  }

  Status seed_uses() {
    for (at_ = 0; at_ < m_.instructions.size(); ++at_) {
      const Instruction& inst = m_.instructions[at_];
      if (inst.opcode() != spv::OpCooperativeMatrixMulAddNV) continue;
      const uint32_t r = inst.operand(2);
      const std::array<std::pair<uint32_t, const char*>, 3> roles{
          {{kUseA, "A"}, {kUseB, "B"}, {kUseAccumulator, "C"}}};
      for (size_t w = 3; w <= 5; ++w) {
        if (free_value(inst.operand(w)))
          free_reads_.push_back({at_, w, 0, static_cast<int>(roles[w - 3].first)});
        else
          KILN_RETURN_IF_ERROR(seed(inst.operand(w), roles[w - 3].first, r, roles[w - 3].second));
      }
      KILN_RETURN_IF_ERROR(seed(r, kUseAccumulator, r, "Result"));
    }
    return ok_status();
  }

  uint32_t use_of(uint32_t value) {
    auto it = seeds_.find(classes_.find(value));
    return it == seeds_.end() ? kUseAccumulator : it->second.use;
  }

  // Which Uses each matrix-based type needs, its first (which keeps the
  // original id) and the ids of the others.
  void plan_variants() {
    demand_.assign(m_.bound, 0);
    for (uint32_t id = 1; id < m_.bound; ++id)
      if (matrix_value(id)) demand_[m_.type_of[id]] |= 1u << use_of(id);
    for (FreeRead& r : free_reads_) {
      const uint32_t value = m_.instructions[r.instruction].operand(r.word);
      const uint32_t use = r.fixed_use >= 0 ? static_cast<uint32_t>(r.fixed_use) : use_of(r.anchor);
      r.fixed_use = static_cast<int>(use);
      demand_[m_.type_of[value]] |= 1u << use;
      clones_.try_emplace({value, use}, 0);
    }
    // Derived types come after their bases: walking them backwards hands
    // each one's demand down to the type it is built on.
    for (auto it = derived_order_.rbegin(); it != derived_order_.rend(); ++it) demand_[types_.base[*it]] |= demand_[*it];
    primary_.assign(m_.bound, kUseAccumulator);
    variant_.assign(m_.bound, {0, 0, 0});
    next_id_ = m_.bound;
    for (size_t i = 0; i < m_.instructions.size(); ++i) {
      const Instruction& inst = m_.instructions[i];
      const uint32_t t = inst.size() > 1 ? inst.operand(1) : 0;
      if (t >= m_.bound || !types_.is_matrix_based(t) || m_.def[t] != static_cast<int64_t>(i)) continue;
      const bool matrix = types_.base[t] == t;
      uint32_t& p = primary_[t];
      p = demand_[t] == 0 ? (matrix ? uint32_t{kUseAccumulator} : primary_[types_.base[t]])
                          : static_cast<uint32_t>(std::countr_zero(demand_[t]));
      for (uint32_t u = 0; u < 3; ++u)
        if (u == p || (demand_[t] & (1u << u))) variant_[t][u] = u == p ? t : next_id_++;
    }
    // A free value read with its own Use is read as is; else through a copy.
    for (auto& [key, id] : clones_) id = key.second == use_of(key.first) ? key.first : next_id_++;
  }

  uint32_t variant(uint32_t type, uint32_t use) const { return variant_[type][use]; }

  // The MemoryLayout for an NV column-major operand, which must be a constant.
  StatusOr<uint32_t> layout(uint32_t column_major, const char* op, uint32_t where) const {
    const uint32_t code = column_major < m_.bound && m_.def[column_major] >= 0 ? def(column_major).opcode() : 0;
    if (code == spv::OpConstantTrue) return 1u;
    if (code == spv::OpConstantFalse || code == spv::OpConstantNull) return 0u;
    return invalid_argument("the column-major operand " + id_str(column_major) + " of " + op + " " + id_str(where) +
                            " is not a constant (Op" + std::to_string(code) +
                            "); SPV_KHR_cooperative_matrix needs a constant MemoryLayout");
  }

  bool signed_components(uint32_t matrix_type) const {
    const uint32_t component = def(matrix_type).operand(2);
    const Instruction& c = def(component);
    return c.opcode() == spv::OpTypeInt && c.size() == 4 && c.operand(3) == 1;
  }

  StatusOr<std::vector<uint32_t>> emit(std::span<const uint32_t> spirv) {
    std::vector<uint32_t> out(spirv.begin(), spirv.begin() + 5);
    out.reserve(spirv.size() + 64);
    std::array<uint32_t, 3> constant{0, 0, 0};  // Use / MemoryLayout values 0, 1, 2
    std::sort(free_reads_.begin(), free_reads_.end(),
              [](const FreeRead& a, const FreeRead& b) { return a.instruction < b.instruction; });
    for (size_t i = 0; i < m_.instructions.size(); ++i) {
      const Instruction& inst = m_.instructions[i];
      const uint32_t op = inst.opcode();
      const size_t n = inst.size();
      if (op == spv::OpCapability && n == 2 && inst.operand(1) == spv::CapabilityCooperativeMatrixNV) {
        out.insert(out.end(), {op_word(2, spv::OpCapability), kCapabilityCooperativeMatrixKHR});
        continue;
      }
      if (op == spv::OpExtension && literal_string(inst, 1) == kNvExtension) {
        std::vector<uint32_t> words;
        append_string(&words, kKhrExtension);
        out.push_back(op_word(1 + words.size(), spv::OpExtension));
        out.insert(out.end(), words.begin(), words.end());
        continue;
      }
      if (op == spv::OpTypeCooperativeMatrixNV) {
        const uint32_t t = inst.operand(1);
        if (constant[0] == 0) {
          // Before the first matrix type: after the 32-bit integer type of
          // its Rows constant (which the NV type needs as well).
          const uint32_t rows = inst.operand(4);
          const uint32_t int_type = m_.type_of[rows];
          if (int_constant(m_, rows) < 0 || def(int_type).opcode() != spv::OpTypeInt || def(int_type).operand(2) != 32)
            return invalid_argument("the Rows of OpTypeCooperativeMatrixNV " + id_str(t) +
                                    " is not a 32-bit integer OpConstant");
          for (uint32_t v = 0; v < 3; ++v) {
            constant[v] = next_id_++;
            out.insert(out.end(), {op_word(4, spv::OpConstant), int_type, constant[v], v});
          }
        }
        for (uint32_t u = 0; u < 3; ++u)
          if (variant_[t][u] != 0)
            out.insert(out.end(), {op_word(7, kOpTypeCooperativeMatrixKHR), variant_[t][u], inst.operand(2),
                                   inst.operand(3), inst.operand(4), inst.operand(5), constant[u]});
        continue;
      }
      const uint32_t declared = n > 1 ? inst.operand(1) : 0;
      if ((op == spv::OpTypePointer || op == spv::OpTypeArray || op == spv::OpTypeRuntimeArray) &&
          types_.is_matrix_based(declared)) {
        // The primary variant first: it keeps the original id.
        const uint32_t p = primary_[declared];
        for (uint32_t u : {p, (p + 1) % 3, (p + 2) % 3}) {
          if (variant_[declared][u] == 0) continue;
          const size_t at = out.size();
          out.insert(out.end(), inst.words.begin(), inst.words.end());
          out[at + 1] = variant_[declared][u];
          out[at + types_.base_word[declared]] = variant(types_.base[declared], u);
        }
        continue;
      }
      const size_t at = out.size();
      out.insert(out.end(), inst.words.begin(), inst.words.end());
      bool has_result = false, has_type = false;
      result_and_type(op, &has_result, &has_type);
      if (has_type && n > 2 && matrix_value(inst.operand(2)))
        out[at + 1] = variant(m_.type_of[inst.operand(2)], use_of(inst.operand(2)));
      while (next_read_ < free_reads_.size() && free_reads_[next_read_].instruction == i) {
        const FreeRead& r = free_reads_[next_read_++];
        out[at + r.word] = clones_.at({inst.operand(r.word), static_cast<uint32_t>(r.fixed_use)});
      }
      if (has_type && n > 2 && free_value(inst.operand(2))) {
        // Its copies for the other Uses it is read with, right after it.
        const uint32_t value = inst.operand(2);
        for (auto it = clones_.lower_bound({value, 0}); it != clones_.end() && it->first.first == value; ++it) {
          if (it->second == value) continue;
          const size_t copy = out.size();
          out.insert(out.end(), inst.words.begin(), inst.words.end());
          out[copy + 1] = variant(m_.type_of[value], it->first.second);
          out[copy + 2] = it->second;
        }
      }
      switch (op) {
        case spv::OpCooperativeMatrixLoadNV: {
          // NV: type, result, pointer, stride, column-major, [memory access]
          // KHR: type, result, pointer, layout, stride, [memory operand]
          if (n < 6) return invalid_argument("OpCooperativeMatrixLoadNV " + id_str(inst.operand(2)) + " is malformed");
          KILN_ASSIGN_OR_RETURN(const uint32_t l, layout(inst.operand(5), "OpCooperativeMatrixLoadNV", inst.operand(2)));
          out[at] = op_word(n, kOpCooperativeMatrixLoadKHR);
          out[at + 4] = constant[l];
          out[at + 5] = inst.operand(4);
          break;
        }
        case spv::OpCooperativeMatrixStoreNV: {
          // NV: pointer, object, stride, column-major, [memory access]
          // KHR: pointer, object, layout, stride, [memory operand]
          if (n < 5) return invalid_argument("an OpCooperativeMatrixStoreNV is malformed");
          KILN_ASSIGN_OR_RETURN(const uint32_t l, layout(inst.operand(4), "OpCooperativeMatrixStoreNV", inst.operand(2)));
          out[at] = op_word(n, kOpCooperativeMatrixStoreKHR);
          out[at + 3] = constant[l];
          out[at + 4] = inst.operand(3);
          break;
        }
        case spv::OpCooperativeMatrixMulAddNV: {
          out[at] = op_word(n, kOpCooperativeMatrixMulAddKHR);
          uint32_t operands = 0;  // Matrix{A,B,C,Result}SignedComponentsKHR = 1, 2, 4, 8
          for (uint32_t w = 3; w <= 5; ++w)
            if (signed_components(types_.base[m_.type_of[inst.operand(w)]])) operands |= 1u << (w - 3);
          if (signed_components(types_.base[m_.type_of[inst.operand(2)]])) operands |= 8u;
          if (operands != 0) {
            out[at] = op_word(n + 1, kOpCooperativeMatrixMulAddKHR);
            out.push_back(operands);
          }
          break;
        }
        case spv::OpCooperativeMatrixLengthNV:
          if (n != 4 || !types_.is_matrix_based(inst.operand(3)))
            return invalid_argument("OpCooperativeMatrixLengthNV " + id_str(inst.operand(2)) + " is malformed");
          out[at] = op_word(n, kOpCooperativeMatrixLengthKHR);
          out[at + 3] = variant(inst.operand(3), primary_[inst.operand(3)]);
          break;
        default:
          break;
      }
    }
    out[3] = next_id_;
    return out;
  }

  struct Seed {
    uint32_t use;
    uint32_t muladd;
    const char* role;
    uint32_t value;
  };

  // A read of a free value: instruction and word, and the Use it is read
  // with (fixed by a multiply-add, else the class of `anchor`).
  struct FreeRead {
    size_t instruction;
    size_t word;
    uint32_t anchor;
    int fixed_use;
  };

  ParsedModule m_;
  MatrixTypes types_;
  size_t at_ = 0;  // the instruction being read
  std::vector<FreeRead> free_reads_;
  size_t next_read_ = 0;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> clones_;  // (free value, Use) -> id read
  std::vector<uint32_t> derived_order_;  // pointer / array types on matrices, in module order
  Classes classes_;
  std::map<uint32_t, Seed> seeds_;  // class root -> its Use and why
  std::vector<uint32_t> demand_;    // type -> bit mask of the Uses its values need
  std::vector<uint32_t> primary_;   // type -> the Use that keeps the original id
  std::vector<std::array<uint32_t, 3>> variant_;  // type -> id per Use (0: none)
  uint32_t next_id_ = 0;
};

}  // namespace

bool uses_nv_cooperative_matrix(std::span<const uint32_t> spirv) {
  for (size_t i = 5; i < spirv.size();) {
    const uint32_t count = spirv[i] >> 16, op = spirv[i] & 0xffffu;
    if (count == 0) return false;
    if (op == spv::OpCapability && count == 2 && i + 1 < spirv.size() &&
        spirv[i + 1] == spv::CapabilityCooperativeMatrixNV)
      return true;
    // The capabilities come first.
    if (op != spv::OpCapability) return false;
    i += count;
  }
  return false;
}

StatusOr<std::vector<uint32_t>> nv_to_khr_cooperative_matrix(std::span<const uint32_t> spirv) {
  KILN_ASSIGN_OR_RETURN(ParsedModule m, parse(spirv));
  if (!uses_nv_cooperative_matrix(spirv)) return std::vector<uint32_t>(spirv.begin(), spirv.end());
  Rewriter rewriter(std::move(m));
  KILN_ASSIGN_OR_RETURN(std::vector<uint32_t> out, rewriter.run(spirv));
  Status check = check_khr_cooperative_matrix(out);
  if (!check.ok())
    return internal_error("the NV -> KHR cooperative-matrix rewrite made a module that fails its own check: " +
                          check.message());
  return out;
}

Status check_khr_cooperative_matrix(std::span<const uint32_t> spirv) {
  KILN_ASSIGN_OR_RETURN(ParsedModule m, parse(spirv));
  bool capability = false, memory_model = false, extension = false;
  const auto constant_in = [&](uint32_t id, int64_t lo, int64_t hi) {
    const int64_t v = int_constant(m, id);
    return v >= lo && v <= hi;
  };
  // A KHR matrix type's (rows, columns, use), all constants by now.
  struct Shape {
    int64_t rows = -1, cols = -1, use = -1;
  };
  const auto shape_of_value = [&](uint32_t value) {
    Shape s;
    if (value >= m.bound || m.type_of[value] == 0 || m.def[m.type_of[value]] < 0) return s;
    const Instruction& t = m.instructions[static_cast<size_t>(m.def[m.type_of[value]])];
    if (t.opcode() != kOpTypeCooperativeMatrixKHR) return s;
    return Shape{int_constant(m, t.operand(4)), int_constant(m, t.operand(5)), int_constant(m, t.operand(6))};
  };
  for (const Instruction& inst : m.instructions) {
    const uint32_t op = inst.opcode();
    const size_t n = inst.size();
    if (op == spv::OpCapability && n == 2) {
      if (inst.operand(1) == spv::CapabilityCooperativeMatrixNV)
        return invalid_argument("the module still declares OpCapability CooperativeMatrixNV");
      capability |= inst.operand(1) == kCapabilityCooperativeMatrixKHR;
      memory_model |= inst.operand(1) == spv::CapabilityVulkanMemoryModel;
    }
    if (op == spv::OpExtension) {
      const std::string name = literal_string(inst, 1);
      if (name == kNvExtension) return invalid_argument("the module still declares " + std::string(kNvExtension));
      extension |= name == kKhrExtension;
    }
    if (op >= spv::OpTypeCooperativeMatrixNV && op <= spv::OpCooperativeMatrixLengthNV)
      return invalid_argument("the module still holds NV cooperative-matrix instruction Op" + std::to_string(op));
    if (op == kOpTypeCooperativeMatrixKHR &&
        (n != 7 || !constant_in(inst.operand(6), 0, 2) || int_constant(m, inst.operand(4)) < 1 ||
         int_constant(m, inst.operand(5)) < 1))
      return invalid_argument("OpTypeCooperativeMatrixKHR " + id_str(n > 1 ? inst.operand(1) : 0) +
                              " lacks constant Rows, Columns or a Use of 0-2");
    if (op == kOpCooperativeMatrixLoadKHR && (n < 5 || !constant_in(inst.operand(4), 0, 1)))
      return invalid_argument("OpCooperativeMatrixLoadKHR " + id_str(n > 2 ? inst.operand(2) : 0) +
                              " has no constant MemoryLayout 0 or 1");
    if (op == kOpCooperativeMatrixStoreKHR && (n < 4 || !constant_in(inst.operand(3), 0, 1)))
      return invalid_argument("an OpCooperativeMatrixStoreKHR has no constant MemoryLayout 0 or 1");
    if (op == kOpCooperativeMatrixMulAddKHR) {
      if (n < 6) return invalid_argument("an OpCooperativeMatrixMulAddKHR is malformed");
      const uint32_t r = inst.operand(2);
      const Shape d = shape_of_value(r), a = shape_of_value(inst.operand(3)), b = shape_of_value(inst.operand(4)),
                  c = shape_of_value(inst.operand(5));
      if (a.use != kUseA || b.use != kUseB || c.use != kUseAccumulator || d.use != kUseAccumulator)
        return invalid_argument("OpCooperativeMatrixMulAddKHR " + id_str(r) + " has operand Uses " +
                                std::to_string(a.use) + ", " + std::to_string(b.use) + ", " + std::to_string(c.use) +
                                " and result Use " + std::to_string(d.use) + ", not A (0), B (1), Accumulator (2), 2");
      if (a.rows != d.rows || b.cols != d.cols || a.cols != b.rows || c.rows != d.rows || c.cols != d.cols)
        return invalid_argument("OpCooperativeMatrixMulAddKHR " + id_str(r) + " multiplies " +
                                std::to_string(a.rows) + "x" + std::to_string(a.cols) + " by " +
                                std::to_string(b.rows) + "x" + std::to_string(b.cols) + " into " +
                                std::to_string(d.rows) + "x" + std::to_string(d.cols));
    }
  }
  if (!capability || !memory_model || !extension)
    return invalid_argument(std::string("the module lacks ") +
                            (!capability ? "OpCapability CooperativeMatrixKHR"
                             : !memory_model ? "OpCapability VulkanMemoryModel (SPV_KHR_cooperative_matrix needs it)"
                                             : "OpExtension \"SPV_KHR_cooperative_matrix\""));
  return ok_status();
}

}  // namespace kiln::vk
