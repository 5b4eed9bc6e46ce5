// Signature keys (signature_cache.h).
#include "engine/runtime/vulkan/signature_cache.h"

namespace kiln::runtime {

namespace {

// Every field of an image binding, as hex bytes (the struct has no padding
// Kiln writes: each field is hexed on its own).
std::string image_key(const ExternalImage& image) {
  std::string key;
  auto add = [&](const auto& field) {
    static const char kHex[] = "0123456789abcdef";
    const auto* bytes = reinterpret_cast<const unsigned char*>(&field);
    for (size_t b = 0; b < sizeof(field); ++b) {
      key += kHex[bytes[b] >> 4];
      key += kHex[bytes[b] & 15];
    }
    key += ',';
  };
  add(image.image);
  add(image.view);
  add(image.format);
  add(image.usage);  // picks texelFetch or imageLoad
  add(image.layout);
  add(image.width);
  add(image.height);
  add(image.channels);
  add(image.map);
  add(image.scale);
  add(image.bias);
  add(image.srgb);
  add(image.nhwc);
  add(image.region_x);
  add(image.region_y);
  add(image.region_width);
  add(image.region_height);
  add(image.tensor_width);
  add(image.tensor_height);
  return key;
}

std::string shape_key(const InputSpec& t) {
  std::string k = std::string(dtype_name(t.dtype)) + "[";
  for (int64_t d : t.shape) k += std::to_string(d) + ",";
  return k + "]";
}

}  // namespace

std::string hex_bytes(const Tensor& t) {
  static const char kHex[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
  std::string out;
  for (size_t b = 0; b < t.nbytes(); ++b) {
    out += kHex[bytes[b] >> 4];
    out += kHex[bytes[b] & 15];
  }
  return out;
}

StatusOr<std::string> signature_key(const std::vector<InputSpec>& inputs, const std::vector<bool>& host_resident,
                                    const std::vector<std::string>& names, const DeviceBindings& bindings) {
  std::string key;
  for (size_t i = 0; i < inputs.size(); ++i) {
    key += shape_key(inputs[i]) + ";";
    if (i < host_resident.size() && host_resident[i]) {
      if (!inputs[i].value)
        return invalid_argument("input '" + (i < names.size() ? names[i] : std::to_string(i)) +
                                "' is a small shape-like input and must be given as a host tensor");
      key += hex_bytes(*inputs[i].value) + ";";
    }
  }
  for (const auto& [name, b] : bindings) {
    key += name + "@" + std::to_string(reinterpret_cast<uint64_t>(b.buffer)) + "+" + std::to_string(b.offset) + ":" +
           std::to_string(b.size) + ";";
    // An image binding's view, layout and push constants are recorded.
    if (b.image.image != VK_NULL_HANDLE) key += "image:" + image_key(b.image) + ";";
  }
  return key;
}

std::string host_outputs_key(const std::vector<Tensor>& outputs) {
  std::string key = "host:";
  for (const Tensor& t : outputs) key += shape_to_string(t.shape()) + ";";
  return key;
}

std::string read_back_key(ir::ValueId value, const Tensor& t) {
  return std::to_string(value) + "=" + std::string(dtype_name(t.dtype())) + shape_to_string(t.shape()) +
         hex_bytes(t) + ";";
}

}  // namespace kiln::runtime
