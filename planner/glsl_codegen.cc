// KernelDesc -> GLSL (see glsl_codegen.h for the generated interface).
#include "planner/glsl_codegen.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "planner/dispatch_grid.h"
#include "planner/index_view.h"
#include "planner/map_vector.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

const char* storage_elem(ElemType t) {
  switch (t) {
    case ElemType::kF32: return "float";
    case ElemType::kF16: return "float16_t";
    case ElemType::kI32: return "int";
  }
  return "float";
}

std::string coord_params(int rank) {
  std::string s;
  for (int k = 0; k < rank; ++k) s += (k ? ", int c" : "int c") + std::to_string(k);
  return s;
}

std::string coord_args(int rank, const std::string& prefix = "c") {
  std::string s;
  for (int k = 0; k < rank; ++k) s += (k ? ", " : "") + prefix + std::to_string(k);
  return s;
}

std::string dim_name(const std::string& t, int k) { return t + "_D" + std::to_string(k); }

// Row-major linear index of coords c0.. over t's dims.
std::string linear_expr(const std::string& t, int rank, const std::string& prefix = "c") {
  std::string e = prefix + "0";
  for (int k = 1; k < rank; ++k) e = "(" + e + ") * " + dim_name(t, k) + " + " + prefix + std::to_string(k);
  return e;
}

// Statements decomposing linear index `i` (an int variable, consumed) into
// int c0..cR-1 declared by the caller.
std::string decompose(const std::string& t, int rank, const std::string& i, const std::string& prefix = "c") {
  std::string s;
  for (int k = rank - 1; k >= 1; --k)
    s += "  " + prefix + std::to_string(k) + " = " + i + " % " + dim_name(t, k) + "; " + i + " /= " + dim_name(t, k) + ";\n";
  s += "  " + prefix + "0 = " + i + ";\n";
  return s;
}

class Emitter {
 public:
  Emitter(const KernelDesc& desc, const TargetInfo& target) : desc_(desc), target_(target) {}

  StatusOr<GeneratedKernel> run() {
    KILN_RETURN_IF_ERROR(validate());
    out_.name = desc_.name;
    out_.bindings = desc_.tensors.size();
    for (const KernelTensor& t : desc_.tensors)
      programs_.push_back(t.view ? compile_view(*t.view) : CoordProgram{});
    if (desc_.family == KernelDesc::Family::kMap)
      vector_path_ = plan_map_vector_path(desc_, written(), epilogue_ == &written());
    collect_raw8_loads();
    collect_params();
    const uint32_t push_limit = target_.max_push_constants_size / 4;
    if (out_.push.size() > push_limit)
      return unimplemented("kernel '" + desc_.name + "' needs " + std::to_string(out_.push.size()) +
                           " dynamic parameters; the device's push constants hold " + std::to_string(push_limit));
    std::ostringstream s;
    s << "#version 450\n";
    bool f16_buffer = false;
    for (const KernelTensor& t : desc_.tensors) {
      if (t.layout.storage == Storage::kBuffer && t.layout.type == ElemType::kF16) f16_buffer = true;
      if (t.layout.storage == Storage::kImage && t.layout.type == ElemType::kF16 && t.written) f16_image_store_ = true;
    }
    if (f16_buffer) {
      s << "#extension GL_EXT_shader_16bit_storage : require\n";
      s << "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";
    }
    for (const std::string& e : desc_.extensions) s << "#extension " << e << " : require\n";
    s << "layout(local_size_x = " << out_.local_size[0] << ", local_size_y = " << out_.local_size[1]
      << ", local_size_z = " << out_.local_size[2] << ") in;\n\n";
    s << params_;
    // Stores to RGBA16F images may truncate (the conversion's rounding is
    // implementation-defined, and compilers fold an f32->f16->f32 round trip
    // away), so values are rounded to nearest-even at f16 precision with
    // integer arithmetic first; f16 image results then match f16 buffers.
    if (f16_image_store_) s << fill_shader("round_f16.glsl") << "\n";
    for (size_t b = 0; b < desc_.tensors.size(); ++b) s << accessors(desc_.tensors[b], static_cast<int>(b));
    if (epilogue_)
      s << desc_.store_epilogue.code << "\n"
        << (epilogue_->view ? store_view_stores(*epilogue_) : epilogue_stores(*epilogue_));
    for (const KernelTensor& t : desc_.tensors) s << vector_accessors(t);
    s << desc_.helpers << "\n";
    if (desc_.family == KernelDesc::Family::kMap) s << map_main();
    else s << desc_.body << "\n";
    out_.glsl = s.str();
    return std::move(out_);
  }

 private:
  Status validate() {
    std::set<std::string> names;
    int written = 0;
    for (const KernelTensor& t : desc_.tensors) {
      if (!is_identifier(t.name)) return invalid_argument("kernel '" + desc_.name + "': bad tensor name '" + t.name + "'");
      if (!names.insert(t.name).second)
        return invalid_argument("kernel '" + desc_.name + "': duplicate tensor name '" + t.name + "'");
      if (t.written) ++written;
      // A store view (written through a view) is the store epilogue's tensor.
      if (t.view && t.written && (desc_.store_epilogue.empty() || desc_.store_epilogue.tensor != t.name))
        return invalid_argument("kernel '" + desc_.name + "': tensor '" + t.name +
                                "' is written through a view without a store epilogue");
      if (t.layout.storage == Storage::kImage) {
        if (t.layout.type == ElemType::kI32)
          return invalid_argument("kernel '" + desc_.name + "': integer tensor '" + t.name + "' cannot be an image");
        const int rank = std::max<int>(1, static_cast<int>((t.view ? t.view->source_shape : t.shape).size()));
        if (t.layout.packed_axis < 0 || t.layout.packed_axis >= rank)
          return invalid_argument("kernel '" + desc_.name + "': image tensor '" + t.name + "' has no valid packed axis");
      }
    }
    // A view's source accessors are "<name>_src_...": no tensor may be named so.
    for (const KernelTensor& t : desc_.tensors)
      if (t.view && names.count(t.name + "_src"))
        return invalid_argument("kernel '" + desc_.name + "': tensor name '" + t.name +
                                "_src' collides with the source accessors of view '" + t.name + "'");
    for (const KernelParam& p : desc_.params) {
      if (!is_identifier(p.name)) return invalid_argument("kernel '" + desc_.name + "': bad parameter name '" + p.name + "'");
      if (!p.value.is_known())
        return invalid_argument("kernel '" + desc_.name + "': parameter '" + p.name + "' has an unknown value");
    }
    if (!desc_.store_epilogue.empty()) {
      for (const KernelTensor& t : desc_.tensors)
        if (t.written && t.name == desc_.store_epilogue.tensor) epilogue_ = &t;
      if (!epilogue_)
        return invalid_argument("kernel '" + desc_.name + "': the store epilogue's tensor '" +
                                desc_.store_epilogue.tensor + "' is not a written tensor");
    }
    if (desc_.family == KernelDesc::Family::kMap) {
      if (written != 1) return invalid_argument("kernel '" + desc_.name + "': a map kernel writes exactly one tensor");
      out_.local_size = {64, 1, 1};
    } else {
      out_.local_size = desc_.local_size;
      out_.groups = desc_.groups;
    }
    return ok_status();
  }

  void add_param(const std::string& name, const ir::Dim& value) {
    if (value.is_const()) {
      params_ += "layout(constant_id = " + std::to_string(out_.spec.size()) + ") const int " + name + " = 1;\n";
      out_.spec.push_back(value.value());
    } else {
      params_ += "#define " + name + " kiln_pc.p[" + std::to_string(out_.push.size()) + "]\n";
      out_.push.push_back(value);
    }
  }

  static std::vector<ir::Dim> shape_of(const KernelTensor& t) {
    if (t.shape.empty()) return {ir::Dim(1)};
    return t.shape;
  }

  void collect_params() {
    // Push-constant defines must follow the block declaration; collect names
    // first, then emit the block when any is dynamic.
    for (const KernelTensor& t : desc_.tensors) {
      const std::vector<ir::Dim> shape = shape_of(t);
      ir::Dim numel(1);
      for (size_t k = 0; k < shape.size(); ++k) {
        add_param(dim_name(t.name, static_cast<int>(k)), shape[k]);
        numel = numel * shape[k];
      }
      add_param(t.name + "_NUMEL", numel);
      if (t.view) {
        // The source's dims (its accessors' addressing) and the view map's.
        KernelTensor src = source_of(t);
        const std::vector<ir::Dim> sshape = shape_of(src);
        ir::Dim snumel(1);
        for (size_t k = 0; k < sshape.size(); ++k) {
          add_param(dim_name(src.name, static_cast<int>(k)), sshape[k]);
          snumel = snumel * sshape[k];
        }
        add_param(src.name + "_NUMEL", snumel);
        const CoordProgram& program = programs_[static_cast<size_t>(&t - desc_.tensors.data())];
        for (size_t j = 0; j < program.params.size(); ++j)
          add_param(t.name + "_V" + std::to_string(j), program.params[j]);
      }
    }
    for (const KernelParam& p : desc_.params) add_param(p.name, p.value);
    if (desc_.family == KernelDesc::Family::kMap) {
      const KernelTensor& y = written();
      const std::vector<ir::Dim> shape = shape_of(y);
      const int a = vec_axis(y);
      ir::Dim outer(1);
      for (size_t k = 0; k < shape.size(); ++k)
        if (static_cast<int>(k) != a) outer = outer * shape[k];
      const ir::Dim blocks = ir::Dim::ceil_div(shape[static_cast<size_t>(a)], ir::Dim(4));
      const ir::Dim total = outer * blocks;
      add_param("KILN_BLOCKS", blocks);
      add_param("KILN_TOTAL", total);
      out_.groups = dispatch_grid_2d(ir::Dim::ceil_div(total, ir::Dim(64)), target_.max_workgroup_count_x);
    }
    if (!out_.push.empty())
      params_ = "layout(push_constant) uniform KilnPush { int p[" + std::to_string(out_.push.size()) + "]; } kiln_pc;\n" +
                params_;
    params_ += "\n";
  }

  const KernelTensor& written() const {
    for (const KernelTensor& t : desc_.tensors)
      if (t.written) return t;
    return desc_.tensors.front();
  }

  static int vec_axis(const KernelTensor& t) {
    const int last = std::max<int>(1, static_cast<int>(t.shape.size())) - 1;
    if (t.view) return t.view->vec_axis >= 0 && t.view->vec_axis <= last ? t.view->vec_axis : last;
    if (t.layout.storage == Storage::kImage) return t.layout.packed_axis;
    return last;
  }

  // The binding of a view's source: "<name>_src", addressed by its own shape.
  static KernelTensor source_of(const KernelTensor& t) {
    KernelTensor src = t;
    src.name = t.name + "_src";
    src.shape = t.view->source_shape;
    src.view = nullptr;
    return src;
  }

  // A view X: the source's accessors under X_src_, then X_at mapping the
  // view's coordinates to the source's (index_view.h), X_ld and X_at4 over
  // the view's shape. No X_IS_BUFFER/X_IS_IMAGE/X_data: kernels that use
  // them cannot read through a view (fusion refuses them).
  std::string view_accessors(const KernelTensor& t, int binding) {
    const int rank = std::max<int>(1, static_cast<int>(t.shape.size()));
    const std::string& n = t.name;
    const std::string S = glsl_scalar(t.layout.type);
    const std::string V = glsl_vec4(t.layout.type);
    const int a = vec_axis(t);
    const KernelTensor src = source_of(t);
    const CoordProgram& program = programs_[static_cast<size_t>(binding)];
    std::vector<std::string> params, source;
    for (size_t j = 0; j < program.params.size(); ++j) params.push_back(n + "_V" + std::to_string(j));
    const std::string map = coord_program_glsl(program, params, &source);
    std::string source_args;
    for (size_t k = 0; k < source.size(); ++k) source_args += (k ? ", " : "") + source[k];
    std::ostringstream s;
    s << accessors(src, binding);
    s << "// tensor " << n << ": a view of " << src.name << " (" << t.view->describe() << ")\n";
    s << "#define " << n << "_VEC " << a << "\n";
    s << "#define " << n << "_IS_VIEW 1\n";
    s << S << " " << n << "_at(" << coord_params(rank) << ") {\n" << map << "  return " << src.name << "_at("
      << source_args << ");\n}\n";
    // A view made of reshapes only keeps every element's row-major index:
    // X_ld is the source's, without decomposing the index into coordinates
    // and composing it back (a GEMM's gemm_a reads its A this way, per
    // element per K step).
    // X_ld8h of a view whose runs of 8 are contiguous in an fp16 source:
    // one index computation and one 16-byte load for the 8 elements.
    if (view8_.count(n))
      s << "uvec4 " << n << "_ld8h(int i) {\n  int " << coord_args(rank) << ";\n" << decompose(n, rank, "i") << map
        << "  return " << src.name << "_data8[" << src.name << "_index(" << source_args << ") >> 3];\n}\n";
    if (reshape_only(t)) {
      s << S << " " << n << "_ld(int i) { return " << src.name << "_ld(i); }\n";
    } else {
      s << S << " " << n << "_ld(int i) {\n  int " << coord_args(rank) << ";\n" << decompose(n, rank, "i")
        << "  return " << n << "_at(" << coord_args(rank) << ");\n}\n";
    }
    if (src.layout.type == ElemType::kF16 && src.layout.storage == Storage::kBuffer &&
        calls_accessor(desc_.helpers + desc_.body, t, "ath"))
      s << "float16_t " << n << "_ath(" << coord_params(rank) << ") { return float16_t(" << n << "_at("
        << coord_args(rank) << ")); }\n";
    std::vector<std::string> lanes;
    for (int l = 1; l < 4; ++l) {
      std::string args;
      for (int k = 0; k < rank; ++k)
        args += (k ? ", c" : "c") + std::to_string(k) + (k == a ? " + " + std::to_string(l) : "");
      lanes.push_back("m > " + std::to_string(l) + " ? " + n + "_at(" + args + ") : " + S + "(0)");
    }
    s << V << " " << n << "_at4(" << coord_params(rank) << ") {\n  int m = " << dim_name(n, a) << " - c" << a
      << ";\n  return " << V << "(" << n << "_at(" << coord_args(rank) << "), " << lanes[0] << ", " << lanes[1] << ", "
      << lanes[2] << ");\n}\n\n";
    return s.str();
  }

  std::string accessors(const KernelTensor& t, int binding) {
    if (t.view && t.written) return store_view_accessors(t, binding);
    if (t.view) return view_accessors(t, binding);
    const int rank = std::max<int>(1, static_cast<int>(t.shape.size()));
    const std::string& n = t.name;
    const std::string S = glsl_scalar(t.layout.type);
    const std::string V = glsl_vec4(t.layout.type);
    const int a = vec_axis(t);
    const std::string da = dim_name(n, a);
    // A tensor with a store epilogue gets raw stores; epilogue_stores()
    // defines the public ones around them.
    const bool wrapped = epilogue_ == &t;
    const std::string st = n + (wrapped ? "_st_raw" : "_st"), st4 = n + (wrapped ? "_st4_raw" : "_st4");
    std::ostringstream s;
    s << "// tensor " << n << ": " << storage_name(t.layout.storage) << " " << elem_type_name(t.layout.type) << "\n";
    s << "#define " << n << "_VEC " << a << "\n";
    if (t.layout.storage == Storage::kBuffer) {
      s << "#define " << n << "_IS_BUFFER 1\n";
      // `restrict` promises no other binding reaches this memory: false for
      // the two bindings of an in-place write (planner/inplace.h).
      s << "layout(std430, set = 0, binding = " << binding << ") " << (t.written ? "" : "readonly ")
        << (t.shares_memory ? "" : "restrict ") << (t.coherent ? "coherent " : "") << "buffer KilnBuffer" << binding
        << " { "
        << storage_elem(t.layout.type) << " " << n << "_data[]; };\n";
      // Read or written as vectors too (the map harness's vector path,
      // X_load4 / Y_store4; map_vector.h): a second block aliasing the
      // same binding, with the same qualifiers.
      const bool vector_store =
          t.written && vector_path_.enabled() && vector_path_.vector_store && &t == &written();
      if (vector_store || vector_path_.loads_vector(t) || vector_load4(t) || vector_store4(t))
        s << "layout(std430, set = 0, binding = " << binding << ") " << (t.written ? "" : "readonly ")
          << (t.shares_memory ? "" : "restrict ") << (t.coherent ? "coherent " : "") << "buffer KilnBufferV" << binding
          << " { "
          << storage_vec4(t.layout.type) << " " << vector_data_name(t) << "[]; };\n";
      // Read 8 halves at a time (X_ld8h): a third block, of uvec4.
      if (raw8_loads_.count(n))
        s << "layout(std430, set = 0, binding = " << binding << ") readonly "
          << (t.shares_memory ? "" : "restrict ") << (t.coherent ? "coherent " : "") << "buffer KilnBufferH" << binding
          << " { uvec4 " << n << "_data8[]; };\n";
      s << "int " << n << "_index(" << coord_params(rank) << ") { return " << linear_expr(n, rank) << "; }\n";
      s << S << " " << n << "_ld(int i) { return " << S << "(" << n << "_data[i]); }\n";
      s << S << " " << n << "_at(" << coord_params(rank) << ") { return " << n << "_ld(" << n << "_index("
        << coord_args(rank) << ")); }\n";
      // Along the last axis consecutive elements are adjacent in memory.
      s << V << " " << n << "_at4(" << coord_params(rank) << ") {\n"
        << "  int i = " << n << "_index(" << coord_args(rank) << "); int m = " << da << " - c" << a << ";\n"
        << "  return " << V << "(" << n << "_ld(i), m > 1 ? " << n << "_ld(i + 1) : " << S << "(0), m > 2 ? " << n
        << "_ld(i + 2) : " << S << "(0), m > 3 ? " << n << "_ld(i + 3) : " << S << "(0));\n}\n";
      if (t.written) {
        s << "void " << st << "(int i, " << S << " v) { " << n << "_data[i] = " << storage_elem(t.layout.type)
          << "(v); }\n";
        s << "void " << st4 << "(" << coord_params(rank) << ", " << V << " v) {\n"
          << "  int i = " << n << "_index(" << coord_args(rank) << "); int m = " << da << " - c" << a << ";\n"
          << "  " << st << "(i, v.x); if (m > 1) " << st << "(i + 1, v.y); if (m > 2) " << st
          << "(i + 2, v.z); if (m > 3) " << st << "(i + 3, v.w);\n}\n";
      }
    } else {
      const int last = rank - 1;
      s << "#define " << n << "_IS_IMAGE 1\n";
      if (t.written)
        s << "layout(set = 0, binding = " << binding << ", "
          << (t.layout.type == ElemType::kF16 ? "rgba16f" : "rgba32f") << ") uniform writeonly image2D " << n
          << "_img;\n";
      else
        s << "layout(set = 0, binding = " << binding << ") uniform sampler2D " << n << "_tex;\n";
      // Texel of coords: x = block * W + c_last (W = 1 when the packed axis
      // is the last), y = row-major over the remaining axes.
      std::string x = "(c" + std::to_string(a) + " >> 2)";
      if (a != last) x = x + " * " + dim_name(n, last) + " + c" + std::to_string(last);
      std::string y = "0";
      for (int k = 0; k < rank; ++k) {
        if (k == a || k == last) continue;
        y = (y == "0") ? "c" + std::to_string(k) : "(" + y + ") * " + dim_name(n, k) + " + c" + std::to_string(k);
      }
      s << "ivec2 " << n << "_texel(" << coord_params(rank) << ") { return ivec2(" << x << ", " << y << "); }\n";
      if (!t.written) {
        s << "float " << n << "_at(" << coord_params(rank) << ") { return texelFetch(" << n << "_tex, " << n
          << "_texel(" << coord_args(rank) << "), 0)[c" << a << " & 3]; }\n";
        s << "vec4 " << n << "_at4(" << coord_params(rank) << ") {\n"
          << "  vec4 t = texelFetch(" << n << "_tex, " << n << "_texel(" << coord_args(rank) << "), 0);\n"
          << "  int m = " << da << " - c" << a << ";\n"
          << "  return vec4(t.x, m > 1 ? t.y : 0.0, m > 2 ? t.z : 0.0, m > 3 ? t.w : 0.0);\n}\n";
        s << "float " << n << "_ld(int i) {\n  int " << coord_args(rank) << ";\n"
          << decompose(n, rank, "i") << "  return " << n << "_at(" << coord_args(rank) << ");\n}\n";
      } else {
        s << "void " << st4 << "(" << coord_params(rank) << ", vec4 v) {\n"
          << "  int m = " << da << " - c" << a << ";\n"
          << "  vec4 t = vec4(v.x, m > 1 ? v.y : 0.0, m > 2 ? v.z : 0.0, m > 3 ? v.w : 0.0);\n"
          << "  imageStore(" << n << "_img, " << n << "_texel(" << coord_args(rank) << "), "
          << (t.layout.type == ElemType::kF16 && f16_image_store_ ? "kiln_round_f16(t)" : "t") << ");\n}\n";
      }
    }
    // X_ath: the element as it is stored, for a GEMM staging fp16 operands
    // in fp16 registers (gemm_tile.comp's @A_T@, lower_conv's gemm_a_h): a
    // load whose value nothing converts, so nothing waits for it.
    // (fp16 buffers only: their kernels declare the fp16 types.)
    if (t.layout.type == ElemType::kF16 && t.layout.storage == Storage::kBuffer &&
        calls_accessor(desc_.helpers + desc_.body, t, "ath"))
      s << "float16_t " << n << "_ath(" << coord_params(rank) << ") { return " << n << "_data[" << n << "_index("
        << coord_args(rank) << ")]; }\n";
    s << "\n";
    return s.str();
  }

  // X_load4 / Y_store4 (map_vector.h) take the vector path: a buffer read
  // or written as it is (no view; a written one without store epilogue).
  bool vector_load4(const KernelTensor& t) const {
    return t.layout.storage == Storage::kBuffer && !t.view && calls_accessor(desc_.helpers + desc_.body, t, "load4");
  }
  bool vector_store4(const KernelTensor& t) const {
    return t.written && t.layout.storage == Storage::kBuffer && !t.view && epilogue_ != &t &&
           calls_accessor(desc_.helpers + desc_.body, t, "store4");
  }

  // X_ld8h(i) (glsl_codegen.h): one 16-byte load where X, or the source of
  // a reshape-only view X, is an fp16 buffer read as it is (raw8_loads_),
  // else the 8 elements' X_ld packed in pairs.
  std::string raw8_accessor(const KernelTensor& t) {
    const std::string& n = t.name;
    if (view8_.count(n)) return "";  // view_accessors defined it
    std::string s = "uvec4 " + n + "_ld8h(int i) {\n  ";
    if (raw8_loads_.count(n)) return s + "return " + n + "_data8[i >> 3];\n}\n";
    if (raw8_loads_.count(n + "_src")) return s + "return " + n + "_src_data8[i >> 3];\n}\n";
    s += "return uvec4(";
    for (int j = 0; j < 8; j += 2)
      s += std::string(j ? ", " : "") + "packHalf2x16(vec2(" + n + "_ld(i + " + std::to_string(j) + "), " + n +
           "_ld(i + " + std::to_string(j + 1) + ")))";
    return s + ");\n}\n";
  }

  // The tensors read by X_ld8h whose memory holds the 8 halves as they are:
  // fp16 buffers without a view, and the fp16 buffer sources of
  // reshape-only views (the same linear index) or of views whose runs of 8
  // are contiguous and aligned in the source (index_view.h,
  // contiguous_run), by binding name.
  void collect_raw8_loads() {
    const std::string text = desc_.helpers + desc_.body;
    for (const KernelTensor& t : desc_.tensors) {
      if (t.written || !calls_accessor(text, t, "ld8h")) continue;
      const bool f16_buffer = t.layout.storage == Storage::kBuffer && t.layout.type == ElemType::kF16;
      if (!f16_buffer) continue;
      if (!t.view) {
        raw8_loads_.insert(t.name);
      } else if (reshape_only(t)) {
        raw8_loads_.insert(t.name + "_src");
      } else if (contiguous_run(*t.view) % 8 == 0) {
        raw8_loads_.insert(t.name + "_src");
        view8_.insert(t.name);
      }
    }
  }

  // A view made only of reshapes keeps every element's row-major index.
  static bool reshape_only(const KernelTensor& t) {
    return t.view && std::all_of(t.view->steps.begin(), t.view->steps.end(),
                                 [](const ViewStep& v) { return v.kind == ViewStep::Kind::kReshape; });
  }

  // The vector accessors of `t` the kernel's text calls (map_vector.h).
  std::string vector_accessors(const KernelTensor& t) {
    const std::string text = desc_.helpers + desc_.body;
    const std::string raw8 = !t.written && calls_accessor(text, t, "ld8h") ? raw8_accessor(t) : "";
    const bool load4 = calls_accessor(text, t, "load4"), store4 = t.written && calls_accessor(text, t, "store4");
    if (!load4 && !store4) return raw8.empty() ? "" : raw8 + "\n";
    const int rank = std::max<int>(1, static_cast<int>(t.shape.size()));
    const int a = vec_axis(t);
    const std::string& n = t.name;
    const std::string V = glsl_vec4(t.layout.type);
    // The four lanes are whole and aligned in memory (a buffer's vector axis is its last).
    const std::string aligned = "int i = " + n + "_index(" + coord_args(rank) + ");\n  if ((i & 3) == 0 && " +
                                dim_name(n, a) + " - c" + std::to_string(a) + " >= 4) ";
    std::ostringstream s;
    if (load4) {
      s << V << " " << n << "_load4(" << coord_params(rank) << ") {\n  ";
      if (vector_load4(t)) s << aligned << "return " << V << "(" << vector_data_name(t) << "[i >> 2]);\n  ";
      s << "return " << n << "_at4(" << coord_args(rank) << ");\n}\n";
    }
    if (store4) {
      s << "void " << n << "_store4(" << coord_params(rank) << ", " << V << " v) {\n  ";
      if (vector_store4(t))
        s << aligned << "{\n    " << vector_data_name(t) << "[i >> 2] = " << storage_vec4(t.layout.type)
          << "(v);\n    return;\n  }\n  ";
      s << n << "_st4(" << coord_args(rank) << ", v);\n}\n";
    }
    return raw8 + s.str() + "\n";
  }

  // The public stores of the tensor with the store epilogue: each element
  // (each lane along t_VEC inside the tensor) passes through kiln_epilogue
  // with its coordinates and row-major linear index, then the raw store.
  std::string epilogue_stores(const KernelTensor& t) {
    const int rank = std::max<int>(1, static_cast<int>(t.shape.size()));
    const int a = vec_axis(t);
    const std::string& n = t.name;
    const std::string S = glsl_scalar(t.layout.type);
    const std::string V = glsl_vec4(t.layout.type);
    std::string stride = "1";  // of the linear index along the vector axis
    for (int k = a + 1; k < rank; ++k) stride = (stride == "1" ? "" : stride + " * ") + dim_name(n, k);
    std::string lane_args;
    for (int k = 0; k < rank; ++k) lane_args += "c" + std::to_string(k) + (k == a ? " + l, " : ", ");
    std::ostringstream s;
    s << "// stores of " << n << " through kiln_epilogue\n";
    if (t.layout.storage == Storage::kBuffer) {
      s << "void " << n << "_st(int i, " << S << " v) {\n  int t = i;\n  int " << coord_args(rank) << ";\n"
        << decompose(n, rank, "t") << "  " << n << "_st_raw(i, kiln_epilogue(" << coord_args(rank) << ", i, v));\n}\n";
    }
    s << "void " << n << "_st4(" << coord_params(rank) << ", " << V << " v) {\n"
      << "  int i = " << linear_expr(n, rank) << "; int m = " << dim_name(n, a) << " - c" << a << ";\n"
      << "  " << V << " r = v;\n"
      << "  for (int l = 0; l < 4 && l < m; ++l) r[l] = kiln_epilogue(" << lane_args << "i + l * " << stride
      << ", v[l]);\n"
      << "  " << n << "_st4_raw(" << coord_args(rank) << ", r);\n}\n\n";
    return s.str();
  }

  // A store view Y (written through a view, planner/fusion_store_views.h):
  // the kernel addresses Y by its logical shape (Y_D<k>, Y_index, Y_VEC)
  // while the binding is the view's source, Y_src, of another shape.
  // Y_map sends a logical coordinate to Y_src's (the view's program).
  std::string store_view_accessors(const KernelTensor& t, int binding) {
    const int rank = std::max<int>(1, static_cast<int>(t.shape.size()));
    const std::string& n = t.name;
    const KernelTensor src = source_of(t);
    const int srank = std::max<int>(1, static_cast<int>(src.shape.size()));
    const CoordProgram& program = programs_[static_cast<size_t>(binding)];
    std::vector<std::string> params, source;
    for (size_t j = 0; j < program.params.size(); ++j) params.push_back(n + "_V" + std::to_string(j));
    const std::string map = coord_program_glsl(program, params, &source);
    std::ostringstream s;
    s << accessors(src, binding);
    s << "// tensor " << n << ": stored into " << src.name << " through a view (" << t.view->describe() << ")\n";
    s << "#define " << n << "_VEC " << vec_axis(t) << "\n";
    s << "#define " << n << (t.layout.storage == Storage::kBuffer ? "_IS_BUFFER" : "_IS_IMAGE") << " 1\n";
    s << "int " << n << "_index(" << coord_params(rank) << ") { return " << linear_expr(n, rank) << "; }\n";
    s << "void " << n << "_map(" << coord_params(rank);
    for (int k = 0; k < srank; ++k) s << ", out int o" << k;
    s << ") {\n" << map;
    for (int k = 0; k < srank; ++k) s << "  o" << k << " = " << source[static_cast<size_t>(k)] << ";\n";
    s << "}\n\n";
    return s.str();
  }

  // The public stores of a store view Y: each element through
  // kiln_epilogue(c.., ci, o.., oi, v), with c/ci its coordinates and
  // linear index in Y's logical shape and o/oi those in Y_src. Buffers store
  // one element at a time (Y_st and each lane of Y_st4). Images: the
  // planner guarantees that Y_VEC maps onto Y_src's packed axis lane for
  // lane from a multiple of 4, so Y_st4 stays one texel store.
  std::string store_view_stores(const KernelTensor& t) {
    const int rank = std::max<int>(1, static_cast<int>(t.shape.size()));
    const std::string& n = t.name;
    const KernelTensor src = source_of(t);
    const std::string sn = src.name;
    const int srank = std::max<int>(1, static_cast<int>(src.shape.size()));
    const int a = vec_axis(t);
    const std::string S = glsl_scalar(t.layout.type);
    const std::string V = glsl_vec4(t.layout.type);
    const std::string os = coord_args(srank, "o");
    const std::string map = "  int " + os + ";\n  " + n + "_map(" + coord_args(rank) + ", " + os +
                            ");\n  int oi = " + linear_expr(sn, srank, "o") + ";\n";
    const auto stride = [](const std::string& name, int axis, int r) {  // of the linear index along `axis`
      std::string e = "1";
      for (int k = axis + 1; k < r; ++k) e = (e == "1" ? "" : e + " * ") + dim_name(name, k);
      return e;
    };
    std::ostringstream s;
    s << "// stores of " << n << " into " << sn << " through kiln_epilogue\n";
    if (t.layout.storage == Storage::kBuffer) {
      s << "void " << n << "_st_at(" << coord_params(rank) << ", int ci, " << S << " v) {\n" << map << "  " << sn
        << "_st(oi, kiln_epilogue(" << coord_args(rank) << ", ci, " << os << ", oi, v));\n}\n";
      s << "void " << n << "_st(int i, " << S << " v) {\n  int t = i;\n  int " << coord_args(rank) << ";\n"
        << decompose(n, rank, "t") << "  " << n << "_st_at(" << coord_args(rank) << ", i, v);\n}\n";
      std::string lane_args;
      for (int k = 0; k < rank; ++k) lane_args += (k ? ", c" : "c") + std::to_string(k) + (k == a ? " + l" : "");
      s << "void " << n << "_st4(" << coord_params(rank) << ", " << V << " v) {\n  int ci = " << n << "_index("
        << coord_args(rank) << "); int m = " << dim_name(n, a) << " - c" << a
        << ";\n  for (int l = 0; l < 4 && l < m; ++l) " << n << "_st_at(" << lane_args << ", ci + l * "
        << stride(n, a, rank) << ", v[l]);\n}\n\n";
      return s.str();
    }
    const int pa = src.layout.packed_axis;
    std::string lane_args;
    for (int k = 0; k < rank; ++k) lane_args += "c" + std::to_string(k) + (k == a ? " + l, " : ", ");
    lane_args += "ci + l * " + stride(n, a, rank) + ", ";
    for (int k = 0; k < srank; ++k) lane_args += "o" + std::to_string(k) + (k == pa ? " + l, " : ", ");
    s << "void " << n << "_st4(" << coord_params(rank) << ", " << V << " v) {\n" << map << "  int ci = " << n
      << "_index(" << coord_args(rank) << "); int m = " << dim_name(n, a) << " - c" << a << ";\n  " << V
      << " r = v;\n  for (int l = 0; l < 4 && l < m; ++l) r[l] = kiln_epilogue(" << lane_args << "oi + l * "
      << stride(sn, pa, srank) << ", v[l]);\n  " << sn << "_st4(" << os << ", r);\n}\n\n";
    return s.str();
  }

  std::string map_main() {
    const KernelTensor& y = written();
    const int rank = std::max<int>(1, static_cast<int>(y.shape.size()));
    const int a = vec_axis(y);
    const std::string& n = y.name;
    const std::string S = glsl_scalar(y.layout.type);
    const std::string V = glsl_vec4(y.layout.type);
    // The invocation's first element: oc0_, oc1_, ...
    std::string base_args;
    for (int k = 0; k < rank; ++k) base_args += (k ? ", oc" : "oc") + std::to_string(k) + "_";
    std::string base_linear = "oc0_";
    for (int k = 1; k < rank; ++k) base_linear = "(" + base_linear + ") * " + dim_name(n, k) + " + oc" + std::to_string(k) + "_";
    std::string coords;
    for (int k = rank - 1; k >= 0; --k) {
      const std::string ext = (k == a) ? std::string("KILN_BLOCKS") : dim_name(n, k);
      coords += "  int oc" + std::to_string(k) + "_ = kiln_r % " + ext + "; kiln_r /= " + ext + ";\n";
    }
    coords += "  oc" + std::to_string(a) + "_ *= 4;\n";
    std::string lane_coords;
    for (int k = 0; k < rank; ++k)
      lane_coords +=
          "    int oc" + std::to_string(k) + " = oc" + std::to_string(k) + "_" + (k == a ? " + kiln_lane" : "") + ";\n";
    // Lanes step along the vector axis: the linear index grows by its stride.
    std::string stride = "1";
    for (int k = a + 1; k < rank; ++k) stride = (stride == "1" ? "" : stride + " * ") + dim_name(n, k);
    ShaderArgs vector_args;
    vector_args.flag("VECTOR", vector_path_.enabled());
    if (vector_path_.enabled()) {
      const std::string vector_store =
          vector_data_name(y) + "[kiln_oi0 >> 2] = " + storage_vec4(y.layout.type) + "(kiln_vals);";
      vector_args.set("VEC_LOADS", vector_loads_glsl(vector_path_, "kiln_oi0"))
          .set("VEC_BODY", vectorize_body(desc_.body, vector_path_) + "\n")
          .set("VEC_STORE", vector_path_.vector_store ? vector_store : n + "_st4(" + base_args + ", kiln_vals);");
    }
    return fill_shader("map.comp", vector_args
                                       .set("COORDS", coords)
                                       .set("BASE_LINEAR", base_linear)
                                       .set("LANE_COORDS", lane_coords)
                                       .set("VEC_AXIS", a)
                                       .set("VEC_DIM", dim_name(n, a))
                                       .set("STRIDE", stride)
                                       .set("S", S)
                                       .set("V", V)
                                       .set("BODY", desc_.body + "\n")
                                       .set("Y", n)
                                       .set("BASE_ARGS", base_args));
  }

  const KernelDesc& desc_;
  const TargetInfo& target_;
  GeneratedKernel out_;
  std::vector<CoordProgram> programs_;  // per tensor: its view's program (empty without a view)
  std::string params_;
  bool f16_image_store_ = false;
  const KernelTensor* epilogue_ = nullptr;  // the tensor with desc_.store_epilogue
  std::set<std::string> raw8_loads_;        // bindings read by X_ld8h as raw memory
  std::set<std::string> view8_;             // views whose X_ld8h maps a run of 8 once
  MapVectorPath vector_path_;               // kMap: the harness's vector path
};

}  // namespace

const char* glsl_scalar(ElemType t) { return t == ElemType::kI32 ? "int" : "float"; }
const char* glsl_vec4(ElemType t) { return t == ElemType::kI32 ? "ivec4" : "vec4"; }

StatusOr<GeneratedKernel> generate_glsl(const KernelDesc& desc, const TargetInfo& target) {
  Emitter emitter(desc, target);
  return emitter.run();
}

}  // namespace kiln::planner
