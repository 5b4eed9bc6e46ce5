// Tests for the C API through the header-only C++ wrapper: load, run,
// errors as statuses (never crashes) for NULLs, missing files, wrong inputs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kiln/kiln.h"
#include "kiln/kiln.hpp"

namespace {

const std::string kModel = std::string(KILN_TEST_DATA_DIR) + "/add_relu.onnx";

TEST(CApiTest, LoadRunAddRelu) {
  kiln::api::Model model;
  auto err = kiln::api::Model::load(kModel, model);
  ASSERT_FALSE(err) << err.message();
  ASSERT_EQ(model.input_count(), 1u);
  EXPECT_EQ(model.input_name(0), "x");
  EXPECT_EQ(model.output_name(0), "y");

  kiln::api::Session session;
  err = kiln::api::Session::create(model, KILN_BACKEND_REFERENCE, session);
  ASSERT_FALSE(err) << err.message();

  kiln::api::Tensor x;
  ASSERT_FALSE(kiln::api::Tensor::create(KILN_DTYPE_FLOAT32, {2, 3}, x));
  float* px = x.data<float>();
  for (int i = 0; i < 6; ++i) px[i] = static_cast<float>(i) - 2.0f;  // -2..3
  std::vector<kiln::api::Tensor> outputs;
  err = session.run({&x}, 1, outputs);
  ASSERT_FALSE(err) << err.message();
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].shape(), (std::vector<int64_t>{2, 3}));
  const float expected[6] = {0.0f, 0.0f, 0.5f, 2.0f, 0.0f, 3.5f};  // relu(x + [1,-2,0.5])
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(outputs[0].data<float>()[i], expected[i]) << i;
}

TEST(CApiTest, ErrorsAreStatusesNotCrashes) {
  kiln_model_t* m = nullptr;
  kiln_status_t* s = kiln_model_load("/nonexistent/model.onnx", &m);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(kiln_status_code(s), KILN_NOT_FOUND);
  EXPECT_NE(std::string(kiln_status_message(s)).find("/nonexistent/model.onnx"), std::string::npos);
  kiln_status_free(s);
  EXPECT_EQ(m, nullptr);

  s = kiln_model_load(nullptr, &m);
  EXPECT_EQ(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  kiln_status_free(s);

  const char garbage[] = "this is not an onnx model";
  s = kiln_model_load_from_memory(garbage, sizeof garbage, &m);
  EXPECT_NE(kiln_status_code(s), KILN_OK);
  kiln_status_free(s);

  kiln_tensor_t* t = nullptr;
  const int64_t bad_shape[] = {2, -1};
  s = kiln_tensor_create(KILN_DTYPE_FLOAT32, bad_shape, 2, &t);
  EXPECT_EQ(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  kiln_status_free(s);
  kiln_status_free(nullptr);
  kiln_model_release(nullptr);
  kiln_session_destroy(nullptr);
  kiln_tensor_destroy(nullptr);
}

TEST(CApiTest, WrongInputShapeNamesTheInput) {
  kiln::api::Model model;
  ASSERT_FALSE(kiln::api::Model::load(kModel, model));
  kiln::api::Session session;
  ASSERT_FALSE(kiln::api::Session::create(model, KILN_BACKEND_REFERENCE, session));
  kiln::api::Tensor x;
  ASSERT_FALSE(kiln::api::Tensor::create(KILN_DTYPE_FLOAT32, {2, 4}, x));
  std::vector<kiln::api::Tensor> outputs;
  auto err = session.run({&x}, 1, outputs);
  ASSERT_TRUE(err);
  EXPECT_EQ(err.code(), KILN_INVALID_ARGUMENT);
  EXPECT_NE(err.message().find("'x'"), std::string::npos) << err.message();
  // Wrong output count.
  kiln::api::Tensor ok;
  ASSERT_FALSE(kiln::api::Tensor::create(KILN_DTYPE_FLOAT32, {1, 3}, ok));
  err = session.run({&ok}, 2, outputs);
  EXPECT_TRUE(err);
}

TEST(CApiTest, SessionKeepsModelAlive) {
  kiln_model_t* m = nullptr;
  ASSERT_EQ(kiln_model_load(kModel.c_str(), &m), nullptr);
  kiln_session_t* session = nullptr;
  ASSERT_EQ(kiln_session_create(m, nullptr, &session), nullptr);
  kiln_model_release(m);  // the session still holds a reference
  kiln_tensor_t* x = nullptr;
  const int64_t shape[] = {1, 3};
  ASSERT_EQ(kiln_tensor_create(KILN_DTYPE_FLOAT32, shape, 2, &x), nullptr);
  kiln_tensor_t* y = nullptr;
  const kiln_tensor_t* inputs[] = {x};
  kiln_status_t* s = kiln_session_run(session, inputs, 1, &y, 1);
  EXPECT_EQ(s, nullptr) << kiln_status_message(s);
  kiln_status_free(s);
  kiln_tensor_destroy(y);
  kiln_tensor_destroy(x);
  kiln_session_destroy(session);
}

// ---- \since 0.2: what the kiln tool needs from the API -----------------------

std::string temp_path(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/kiln_c_api_test_" + std::to_string(::getpid()) + "_" + name;
}

TEST(CApiToolTest, NamesOfCodesAndDtypes) {
  EXPECT_STREQ(kiln_status_code_name(KILN_NOT_FOUND), "NOT_FOUND");
  EXPECT_STREQ(kiln_status_code_name(KILN_OK), "OK");
  EXPECT_STREQ(kiln_status_code_name(static_cast<kiln_status_code_t>(99)), "UNKNOWN");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_FLOAT32), "f32");
  EXPECT_STREQ(kiln_dtype_name(static_cast<kiln_dtype_t>(99)), "?");
  kiln_string_free(nullptr);  // accepted
}

TEST(CApiToolTest, ModelInputMetadata) {
  kiln::api::Model model;
  ASSERT_FALSE(kiln::api::Model::load(kModel, model));
  kiln_input_info_t info;
  ASSERT_FALSE(model.input_info(0, info));
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, KILN_DTYPE_FLOAT32);
  EXPECT_EQ(info.rank, 2);
  EXPECT_STREQ(info.shape_text, "[n,3]");
  kiln_input_dim_t dim;
  ASSERT_FALSE(model.input_dim(0, 0, dim));
  EXPECT_EQ(dim.value, -1);
  ASSERT_NE(dim.symbol, nullptr);
  EXPECT_STREQ(dim.symbol, "n");
  EXPECT_EQ(dim.is_expression, 0u);
  ASSERT_FALSE(model.input_dim(0, 1, dim));
  EXPECT_EQ(dim.value, 3);
  EXPECT_EQ(dim.symbol, nullptr);

  std::vector<int64_t> shape;
  ASSERT_FALSE(model.input_shape(0, {{"n", 5}}, shape));
  EXPECT_EQ(shape, (std::vector<int64_t>{5, 3}));
  kiln::api::Error err = model.input_shape(0, {}, shape);
  ASSERT_TRUE(err);
  EXPECT_EQ(err.code(), KILN_FAILED_PRECONDITION);
  EXPECT_NE(err.message().find("[n,3]"), std::string::npos) << err.message();

  // Bad input: out of range, NULL, too small a struct.
  EXPECT_EQ(model.input_info(7, info).code(), KILN_OUT_OF_RANGE);
  EXPECT_EQ(model.input_dim(0, 2, dim).code(), KILN_OUT_OF_RANGE);
  kiln::api::Error null_err(kiln_model_input_info(nullptr, 0, &info));
  EXPECT_EQ(null_err.code(), KILN_INVALID_ARGUMENT);
  kiln_input_info_t small{};
  small.struct_size = 4;
  kiln::api::Error size_err(kiln_model_input_info(model.get(), 0, &small));
  EXPECT_EQ(size_err.code(), KILN_INVALID_ARGUMENT);
  EXPECT_NE(size_err.message().find("struct_size"), std::string::npos) << size_err.message();
  int64_t one[1];
  size_t rank = 0;
  kiln::api::Error cap_err(kiln_model_input_shape(model.get(), 0, nullptr, nullptr, 0, one, 1, &rank));
  EXPECT_EQ(cap_err.code(), KILN_OUT_OF_RANGE);
}

TEST(CApiToolTest, TensorFilesRoundTrip) {
  kiln::api::Tensor t;
  ASSERT_FALSE(kiln::api::Tensor::create(KILN_DTYPE_FLOAT16, {2, 2}, t));
  for (size_t i = 0; i < 4; ++i) ASSERT_FALSE(t.set_f64(i, 0.5 * static_cast<double>(i)));
  EXPECT_EQ(t.set_f64(4, 1.0).code(), KILN_OUT_OF_RANGE);
  EXPECT_TRUE(std::isnan(t.get_f64(4)));
  const std::string path = temp_path("t.npy");
  ASSERT_FALSE(t.save_npy(path));
  kiln::api::Tensor back;
  kiln::api::Error err = kiln::api::Tensor::load(path, back);
  ASSERT_FALSE(err) << err.message();
  std::remove(path.c_str());
  EXPECT_EQ(back.dtype(), KILN_DTYPE_FLOAT16);
  EXPECT_EQ(back.shape(), (std::vector<int64_t>{2, 2}));
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(back.get_f64(i), 0.5 * static_cast<double>(i)) << i;

  err = kiln::api::Tensor::load("/no/such/tensor.npy", back);
  EXPECT_EQ(err.code(), KILN_NOT_FOUND);
  EXPECT_NE(err.message().find("/no/such/tensor.npy"), std::string::npos) << err.message();
  // A file that is not .npy: an error naming it, not a crash.
  err = kiln::api::Tensor::load(kModel, back);
  EXPECT_TRUE(err);
  EXPECT_EQ(t.save_npy("/no/such/dir/t.npy").code(), KILN_NOT_FOUND);
  kiln::api::Error null_err(kiln_tensor_load(nullptr, nullptr));
  EXPECT_EQ(null_err.code(), KILN_INVALID_ARGUMENT);
  kiln::api::Error save_null(kiln_tensor_save_npy(nullptr, path.c_str()));
  EXPECT_EQ(save_null.code(), KILN_INVALID_ARGUMENT);
}

TEST(CApiToolTest, SessionDescriptions) {
  kiln::api::Model model;
  ASSERT_FALSE(kiln::api::Model::load(kModel, model));
  kiln::api::Session session;
  ASSERT_FALSE(kiln::api::Session::create(model, KILN_BACKEND_REFERENCE, session));
  std::string json;
  ASSERT_FALSE(session.describe_json(json));
  EXPECT_NE(json.find("\"backend\": \"reference\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"nodes\": 2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\": \"dce\""), std::string::npos) << json;

  // No run yet: a clear precondition error.
  kiln::api::Error err = session.last_run_json(json);
  EXPECT_EQ(err.code(), KILN_FAILED_PRECONDITION);
  kiln::api::Tensor x;
  ASSERT_FALSE(kiln::api::Tensor::create(KILN_DTYPE_FLOAT32, {1, 3}, x));
  std::vector<kiln::api::Tensor> outputs;
  ASSERT_FALSE(session.run({&x}, 1, outputs));
  ASSERT_FALSE(session.last_run_json(json));
  EXPECT_EQ(json, "{}");  // the reference executor has no device numbers

  std::string text, dot;
  ASSERT_FALSE(session.graph(KILN_GRAPH_TEXT, 0, text));
  EXPECT_NE(text.find("Relu("), std::string::npos) << text;
  ASSERT_FALSE(session.graph(KILN_GRAPH_DOT, 0, dot));
  EXPECT_EQ(dot.rfind("digraph", 0), 0u) << dot;
  EXPECT_NE(dot.find("n0 -> n1"), std::string::npos) << dot;
  EXPECT_EQ(session.graph(static_cast<kiln_graph_format_t>(7), 0, text).code(), KILN_INVALID_ARGUMENT);
  char* out = nullptr;
  kiln::api::Error null_err(kiln_session_describe_json(nullptr, &out));
  EXPECT_EQ(null_err.code(), KILN_INVALID_ARGUMENT);
  kiln::api::Error null_out(kiln_session_graph(session.get(), KILN_GRAPH_TEXT, 0, nullptr));
  EXPECT_EQ(null_out.code(), KILN_INVALID_ARGUMENT);
}

TEST(CApiToolTest, SessionOptionsSwitches) {
  kiln::api::Model model;
  ASSERT_FALSE(kiln::api::Model::load(kModel, model));
  kiln_session_options_t o{};
  o.backend = KILN_BACKEND_REFERENCE;
  o.disable_cooperative_matrix = 1;
  o.disable_inplace = 1;
  o.disable_integer_dot_product = 1;
  kiln::api::Session session;
  kiln::api::Error err = kiln::api::Session::create(model, o, session);
  EXPECT_FALSE(err) << err.message();
  // An older caller's struct (ending before the \since 0.2 switches) still works.
  o.struct_size = offsetof(kiln_session_options_t, disable_cooperative_matrix);
  kiln_session_t* old = nullptr;
  kiln::api::Error old_err(kiln_session_create(model.get(), &o, &old));
  EXPECT_FALSE(old_err) << old_err.message();
  kiln_session_destroy(old);
}

// int8_kernels: AUTO, ON and OFF are accepted and the description says
// which the session chose and why (the reference executor has no device,
// so AUTO keeps QDQ graphs float); disable_integer_dot_product means OFF
// unless int8_kernels says ON; any other number is refused, naming it.
TEST(CApiTest, Int8KernelsOptionIsCheckedAndDescribed) {
  kiln::api::Model model;
  ASSERT_FALSE(kiln::api::Model::load(kModel, model));
  struct Case {
    uint32_t int8_kernels, disable_dot;
    const char* want;
  };
  const Case cases[] = {
      {KILN_INT8_KERNELS_AUTO, 0, "\"integer\": false, \"reason\": \"no device"},
      {KILN_INT8_KERNELS_ON, 0, "\"integer\": true, \"reason\": \"integer kernels requested"},
      {KILN_INT8_KERNELS_OFF, 0, "\"integer\": false, \"reason\": \"integer kernels turned off"},
      {KILN_INT8_KERNELS_AUTO, 1, "\"integer\": false, \"reason\": \"integer kernels turned off"},
      {KILN_INT8_KERNELS_ON, 1, "\"integer\": true"},
  };
  for (const Case& c : cases) {
    kiln_session_options_t o{};
    o.struct_size = sizeof o;
    o.backend = KILN_BACKEND_REFERENCE;
    o.int8_kernels = c.int8_kernels;
    o.disable_integer_dot_product = c.disable_dot;
    kiln::api::Session session;
    kiln::api::Error err = kiln::api::Session::create(model, o, session);
    ASSERT_FALSE(err) << err.message();
    std::string json;
    ASSERT_FALSE(session.describe_json(json));
    EXPECT_NE(json.find("\"int8_kernels\": {" + std::string(c.want)), std::string::npos) << json;
    EXPECT_NE(json.find("\"rewritten\": 0"), std::string::npos) << json;  // add_relu has no QDQ
  }
  kiln_session_options_t o{};
  o.struct_size = sizeof o;
  o.backend = KILN_BACKEND_REFERENCE;
  o.int8_kernels = 3;
  kiln_session_t* session = nullptr;
  kiln_status_t* s = kiln_session_create(model.get(), &o, &session);
  EXPECT_EQ(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_status_message(s)).find("int8_kernels is 3"), std::string::npos) << kiln_status_message(s);
  kiln_status_free(s);
}

// KILN_STORAGE_AUTO (0, the zero-filled default), IMAGE and BUFFER are
// accepted; any other number is refused, naming it.
TEST(CApiTest, StorageOptionIsChecked) {
  kiln::api::Model model;
  ASSERT_FALSE(kiln::api::Model::load(kModel, model));
  kiln_session_options_t o{};
  o.struct_size = sizeof o;
  o.backend = KILN_BACKEND_REFERENCE;
  for (kiln_storage_t storage : {KILN_STORAGE_AUTO, KILN_STORAGE_IMAGE, KILN_STORAGE_BUFFER}) {
    o.storage = storage;
    kiln_session_t* session = nullptr;
    kiln::api::Error err(kiln_session_create(model.get(), &o, &session));
    EXPECT_FALSE(err) << storage << ": " << err.message();
    kiln_session_destroy(session);
  }
  o.storage = static_cast<kiln_storage_t>(3);
  kiln_session_t* session = nullptr;
  kiln_status_t* s = kiln_session_create(model.get(), &o, &session);
  EXPECT_EQ(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_status_message(s)).find("unknown storage 3"), std::string::npos)
      << kiln_status_message(s);
  kiln_status_free(s);
  EXPECT_EQ(session, nullptr);
}

// KILN_BACKEND_PLUGIN names a backend a plugin offers; without a name, or
// with one no loaded plugin offers, session creation says so.
// tests/plugin_backend runs a model on a plugin backend.
TEST(CApiTest, PluginBackendNeedsAnOfferedName) {
  kiln::api::Model model;
  ASSERT_FALSE(kiln::api::Model::load(kModel, model));
  kiln_session_options_t o{};
  o.struct_size = sizeof o;
  o.backend = KILN_BACKEND_PLUGIN;
  o.ignore_plugin_path = 1;
  kiln_session_t* session = nullptr;
  kiln_status_t* s = kiln_session_create(model.get(), &o, &session);
  EXPECT_EQ(kiln_status_code(s), KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_status_message(s)).find("backend_plugin"), std::string::npos) << kiln_status_message(s);
  kiln_status_free(s);
  o.backend_plugin = "acme.npu";
  s = kiln_session_create(model.get(), &o, &session);
  EXPECT_EQ(kiln_status_code(s), KILN_NOT_FOUND);
  EXPECT_NE(std::string(kiln_status_message(s)).find("acme.npu"), std::string::npos) << kiln_status_message(s);
  kiln_status_free(s);
  EXPECT_EQ(session, nullptr);
}

TEST(CApiToolTest, PluginCatalogue) {
  std::string json;
  kiln::api::Error err = kiln::api::plugins_describe_json(nullptr, json);
  ASSERT_FALSE(err) << err.message();
  EXPECT_NE(json.find("\"name\": \"kiln.canonicalize\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"default_pipeline\": ["), std::string::npos) << json;
  EXPECT_NE(json.find("\"requires\": ["), std::string::npos) << json;

  kiln_session_options_t o{};
  o.struct_size = sizeof(o);
  const char* missing[] = {"/no/such/plugin.so"};
  o.plugin_files = missing;
  o.plugin_file_count = 1;
  err = kiln::api::plugins_describe_json(&o, json);
  ASSERT_TRUE(err);
  EXPECT_NE(err.message().find("/no/such/plugin.so"), std::string::npos) << err.message();
  o.struct_size = 2;
  EXPECT_EQ(kiln::api::plugins_describe_json(&o, json).code(), KILN_INVALID_ARGUMENT);
}

TEST(CApiToolTest, VulkanDevicesDescribe) {
  // With or without a device: a JSON object that names the problem, if any.
  std::string json, text;
  kiln::api::Error err = kiln::api::vulkan_devices_describe(false, json);
  ASSERT_FALSE(err) << err.message();
  EXPECT_EQ(json.rfind("{\"vulkan_error\": ", 0), 0u) << json;
  EXPECT_NE(json.find("\"devices\": ["), std::string::npos) << json;
  ASSERT_FALSE(kiln::api::vulkan_devices_describe(true, text));
  EXPECT_TRUE(text.rfind("device 0:", 0) == 0 || text.rfind("no Vulkan", 0) == 0) << text;
  kiln::api::Error null_err(kiln_vulkan_devices_describe(0, nullptr));
  EXPECT_EQ(null_err.code(), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_vulkan_device_validation_errors(nullptr), 0u);
}

}  // namespace
