// The importer's public entry points: parsing with protobuf, and the boundary
// where protobuf's exceptions become statuses; see onnx_importer.h.
#include "frontends/onnx/onnx_importer.h"

#include <climits>
#include <exception>
#include <new>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "engine/base/file_checks.h"
#include "frontends/onnx/onnx_checks.h"
#include "frontends/onnx/onnx_graph_builder.h"
#include "frontends/onnx/onnx_tensor.h"

namespace kiln::onnx {

namespace {

namespace pbio = google::protobuf::io;

// protobuf refuses messages of 2 GiB and more; larger models use external data.
constexpr int64_t kMaxProtoBytes = INT_MAX;
// protobuf's default nesting limit, made explicit: it bounds the parser's
// stack on If/Loop bodies nested (each level is three messages deep) or on
// hostile bytes, and the error says so.
constexpr int kMaxProtoDepth = 100;
constexpr const char* kCorrupt =
    " (truncated or corrupt protobuf, or messages nested deeper than 100 levels: about 32 nested If/Loop bodies)";

std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Parses a whole message from `stream`; false on malformed or trailing data.
template <typename Message>
bool parse_stream(pbio::ZeroCopyInputStream* stream, Message& message) {
  pbio::CodedInputStream coded(stream);
  coded.SetTotalBytesLimit(static_cast<int>(kMaxProtoBytes));
  coded.SetRecursionLimit(kMaxProtoDepth);
  return message.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

// Opens a regular file for parsing (file_checks.h: FIFOs, devices and
// directories are refused before they are read); the caller closes it.
StatusOr<int> open_for_parse(const std::string& path, const char* kind) {
  KILN_ASSIGN_OR_RETURN(RegularFile file, open_regular_file(path, kind));
  if (file.size >= kMaxProtoBytes)
    return invalid_argument(std::string(kind) + " '" + path + "' is " + std::to_string(file.size) +
                            " bytes; protobuf files must be under 2 GiB (store weights as external data)");
  return file.fd.release();
}

// Parses a whole protobuf file into `message`.
template <typename Message>
Status parse_file(const std::string& path, const char* kind, Message& message) {
  KILN_ASSIGN_OR_RETURN(int fd, open_for_parse(path, kind));
  pbio::FileInputStream stream(fd);
  stream.SetCloseOnDelete(true);
  if (!parse_stream(&stream, message))
    return data_loss("'" + path + "' is not a valid " + (std::string(kind) == "tensor file" ? "TensorProto" : "ONNX model") +
                     kCorrupt);
  Status wire = check_wire_types(message, kind == std::string("tensor file") ? "tensor" : "model");
  if (!wire.ok()) return std::move(wire).add_context("'" + path + "'");
  return ok_status();
}

template <typename Fn>
auto guarded(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return out_of_memory("out of memory while importing the ONNX model");
  } catch (const std::exception& e) {
    return internal_error(std::string("ONNX import failed: ") + e.what());
  } catch (...) {
    return internal_error("ONNX import failed with an unknown exception");
  }
}

}  // namespace

StatusOr<std::unique_ptr<ir::Graph>> import_model_file(const std::string& path, const ImportOptions& options) {
  return guarded([&]() -> StatusOr<std::unique_ptr<ir::Graph>> {
    ::onnx::ModelProto model;
    KILN_RETURN_IF_ERROR(parse_file(path, "model file", model));
    GraphBuilder builder(ops::OpRegistry::builtin(), ExternalDataPolicy{options.allow_external_data, directory_of(path)});
    return builder.build(model);
  });
}

StatusOr<std::unique_ptr<ir::Graph>> import_model_bytes(const void* data, size_t size, const std::string& base_dir,
                                                        const ImportOptions& options) {
  return guarded([&]() -> StatusOr<std::unique_ptr<ir::Graph>> {
    if (data == nullptr && size > 0) return invalid_argument("model bytes are null");
    if (size >= static_cast<size_t>(kMaxProtoBytes))
      return invalid_argument("the model is " + std::to_string(size) +
                              " bytes; protobuf models must be under 2 GiB (store weights as external data)");
    ::onnx::ModelProto model;
    pbio::ArrayInputStream stream(data, static_cast<int>(size));
    if (!parse_stream(&stream, model))
      return data_loss(std::string("the bytes are not a valid ONNX model") + kCorrupt);
    KILN_RETURN_IF_ERROR(check_wire_types(model, "model"));
    GraphBuilder builder(ops::OpRegistry::builtin(), ExternalDataPolicy{options.allow_external_data, base_dir});
    return builder.build(model);
  });
}

StatusOr<SupportReport> check_model_support(const std::string& path) {
  return guarded([&]() -> StatusOr<SupportReport> {
    ::onnx::ModelProto model;
    KILN_RETURN_IF_ERROR(parse_file(path, "model file", model));
    GraphBuilder builder(ops::OpRegistry::builtin(), ExternalDataPolicy{});
    SupportReport report;
    report.ops = builder.unsupported_ops(model);
    report.types = GraphBuilder::unsupported_types(model);
    return report;
  });
}

StatusOr<Tensor> load_tensor_proto_file(const std::string& path) {
  return guarded([&]() -> StatusOr<Tensor> {
    ::onnx::TensorProto proto;
    KILN_RETURN_IF_ERROR(parse_file(path, "tensor file", proto));
    const std::string what = "tensor '" + proto.name() + "' in '" + path + "'";
    return tensor_from_proto(proto, what, ExternalDataPolicy{true, directory_of(path)});
  });
}

}  // namespace kiln::onnx
