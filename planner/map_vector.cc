// The map harness's vector path (see map_vector.h).
#include "planner/map_vector.h"

#include <algorithm>

#include "planner/glsl_codegen.h"
#include "planner/lower_util.h"

namespace kiln::planner {
namespace {

std::string lane_load(const KernelTensor& t) { return t.name + "_ld(oi)"; }

// Where `what` occurs in `text` at the start of an identifier, from `from`.
size_t find_call(const std::string& text, const std::string& what, size_t from) {
  for (size_t at = text.find(what, from); at != std::string::npos; at = text.find(what, at + 1))
    if (at == 0 || !glsl_ident_char(text[at - 1])) return at;
  return std::string::npos;
}

}  // namespace

bool MapVectorPath::loads_vector(const KernelTensor& t) const {
  return std::find(vector_loads.begin(), vector_loads.end(), &t) != vector_loads.end();
}

MapVectorPath plan_map_vector_path(const KernelDesc& desc, const KernelTensor& y, bool y_has_epilogue) {
  MapVectorPath path;
  if (y.layout.storage != Storage::kBuffer || y.view) return path;
  path.vector_store = !y_has_epilogue;
  for (const KernelTensor& t : desc.tensors) {
    if (t.written || t.view || t.layout.storage != Storage::kBuffer || !same_shape(t.shape, y.shape)) continue;
    if (find_call(desc.body, lane_load(t), 0) != std::string::npos) path.vector_loads.push_back(&t);
  }
  return path;
}

bool calls_accessor(const std::string& text, const KernelTensor& t, const std::string& accessor) {
  return find_call(text, t.name + "_" + accessor + "(", 0) != std::string::npos;
}

std::string vector_data_name(const KernelTensor& t) { return t.name + "_data4"; }

const char* storage_vec4(ElemType t) {
  switch (t) {
    case ElemType::kF32:
      return "vec4";
    case ElemType::kF16:
      return "f16vec4";
    case ElemType::kI32:
      return "ivec4";
  }
  return "vec4";
}

std::string vector_loads_glsl(const MapVectorPath& path, const std::string& base) {
  std::string s;
  for (const KernelTensor* t : path.vector_loads) {
    const std::string V = glsl_vec4(t->layout.type);
    s += V + " kiln_" + t->name + "_v = " + V + "(" + vector_data_name(*t) + "[" + base + " >> 2]);\n";
  }
  return s;
}

std::string vectorize_body(std::string body, const MapVectorPath& path) {
  for (const KernelTensor* t : path.vector_loads) {
    const std::string from = lane_load(*t), to = "kiln_" + t->name + "_v[kiln_lane]";
    for (size_t at = find_call(body, from, 0); at != std::string::npos; at = find_call(body, from, at + to.size()))
      body.replace(at, from.size(), to);
  }
  return body;
}

}  // namespace kiln::planner
