// Tests for the C API through the header-only C++ wrapper: load, run,
// errors as statuses (never crashes) for NULLs, missing files, wrong inputs.
#include <gtest/gtest.h>

#include <cstdio>
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

}  // namespace
