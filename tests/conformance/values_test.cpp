// values_test.cpp: decoding, comparison, tolerances and expectation files of
// the conformance runner, checked against values worked out by hand from the
// format definitions (ONNX's float8/float4 tables, IEEE half).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "compare.h"
#include "expectations.h"
#include "values.h"

using namespace onyx::conformance;

namespace {

double decode_byte(int32_t dtype, uint8_t byte) { return decode_float(dtype, &byte, 0); }

HostTensor float_tensor(std::vector<float> values) {
  HostTensor t;
  t.dtype = 1;
  t.dims = {int64_t(values.size())};
  t.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return t;
}

}  // namespace

TEST(Decode, Float8E4M3FN) {
  EXPECT_EQ(decode_byte(17, 0x38), 1.0);          // exponent 7 = bias
  EXPECT_EQ(decode_byte(17, 0x7E), 448.0);        // largest finite
  EXPECT_EQ(decode_byte(17, 0x01), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(decode_byte(17, 0xB8), -1.0);
  EXPECT_TRUE(std::isnan(decode_byte(17, 0x7F)));
  EXPECT_TRUE(std::isnan(decode_byte(17, 0xFF)));
}

TEST(Decode, Float8FnuzAndE5M2) {
  EXPECT_EQ(decode_byte(18, 0x40), 1.0);  // E4M3FNUZ: bias 8
  EXPECT_TRUE(std::isnan(decode_byte(18, 0x80)));
  EXPECT_EQ(decode_byte(18, 0x7F), 240.0);
  EXPECT_EQ(decode_byte(19, 0x3C), 1.0);  // E5M2: bias 15, IEEE-like
  EXPECT_TRUE(std::isinf(decode_byte(19, 0x7C)));
  EXPECT_EQ(decode_byte(19, 0x7B), 57344.0);
  EXPECT_EQ(decode_byte(20, 0x40), 1.0);  // E5M2FNUZ: bias 16
  EXPECT_TRUE(std::isnan(decode_byte(20, 0x80)));
}

TEST(Decode, HalfBfloatAndFloat4) {
  uint16_t half = 0x3C00, bf = 0x3F80;
  EXPECT_EQ(decode_float(10, &half, 0), 1.0);
  EXPECT_EQ(decode_float(16, &bf, 0), 1.0);
  uint16_t tiny = 0x0001;
  EXPECT_EQ(decode_float(10, &tiny, 0), std::ldexp(1.0, -24));
  // float4e2m1: low nibble first. 0x7 = 6.0 (largest), 0x1 = 0.5 (subnormal), 0xA = -1.0.
  uint8_t packed[2] = {0x17, 0x0A};
  EXPECT_EQ(decode_float(23, packed, 0), 6.0);
  EXPECT_EQ(decode_float(23, packed, 1), 0.5);
  EXPECT_EQ(decode_float(23, packed, 2), -1.0);
}

TEST(Compare, ToleranceNanAndShape) {
  HostTensor expected = float_tensor({1.0f, NAN, -INFINITY, 0.0f});
  std::vector<float> close = {1.0005f, NAN, -INFINITY, 1e-8f};
  const Tolerance tol{1e-3, 1e-7, "test"};
  Comparison ok = compare_tensor(expected, 1, expected.dims.data(), 1, close.data(), tol);
  EXPECT_TRUE(ok.ok) << ok.message;
  EXPECT_NEAR(ok.max_error, 5e-4, 1e-6);

  std::vector<float> far = {1.002f, 0.0f, -INFINITY, 0.0f};
  Comparison bad = compare_tensor(expected, 1, expected.dims.data(), 1, far.data(), tol);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.message.find("2 of 4 elements differ"), std::string::npos) << bad.message;
  EXPECT_NE(bad.message.find("first at [0]"), std::string::npos) << bad.message;

  const int64_t other_dims[2] = {2, 2};
  Comparison shape = compare_tensor(expected, 1, other_dims, 2, close.data(), tol);
  EXPECT_FALSE(shape.ok);
  EXPECT_EQ(shape.message, "shape [2,2], expected [4]");
  Comparison type = compare_tensor(expected, 11, expected.dims.data(), 1, close.data(), tol);
  EXPECT_EQ(type.message, "element type float64, expected float32");
}

TEST(Compare, IntegersAndInt4AreExact) {
  HostTensor expected;
  expected.dtype = 22;  // int4: -8 and 7 packed
  expected.dims = {2};
  expected.bytes = std::string(1, char(0x78));
  uint8_t same = 0x78, other = 0x77;
  const Tolerance tol{1, 1, "a loose tolerance must not apply to integers"};
  EXPECT_TRUE(compare_tensor(expected, 22, expected.dims.data(), 1, &same, tol).ok);
  Comparison c = compare_tensor(expected, 22, expected.dims.data(), 1, &other, tol);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("got 7, expected -8"), std::string::npos) << c.message;
}

TEST(Tolerances, EveryRowHasAReasonAndLowPrecisionWidens) {
  size_t n = 0;
  const ToleranceRow* rows = tolerance_table(&n);
  ASSERT_GT(n, 1u);
  EXPECT_STREQ(rows[0].op, "*");
  for (size_t i = 0; i < n; ++i) EXPECT_GT(std::strlen(rows[i].reason), 20u) << rows[i].op;
  EXPECT_EQ(tolerance_for("NoSuchOp", 1).rtol, rows[0].rtol);
  EXPECT_EQ(tolerance_for("MatMul", 1).atol, 1e-5);
  EXPECT_GE(tolerance_for("Add", 10).rtol, 4e-3);   // float16
  EXPECT_GE(tolerance_for("Add", 16).rtol, 2e-2);   // bfloat16
}

TEST(Values, TensorProtoFieldsAndSizeChecks) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT16);
  p.add_dims(2);
  p.add_int32_data(0x3C00);
  p.add_int32_data(0xC000);
  HostTensor t = tensor_from_proto(p, "test");
  ASSERT_EQ(t.bytes.size(), 4u);
  EXPECT_EQ(decode_float(10, t.bytes.data(), 1), -2.0);
  p.add_int32_data(0);
  EXPECT_THROW(tensor_from_proto(p, "test"), CaseError);
}

TEST(ExpectationFileTest, ParsesAndRefusesMalformedLines) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string path = (dir / "onyx_expectations_parse.txt").string();
  std::ofstream(path) << "# comment\n\nunsupported onnx-node test_string_* strings are not carried\n"
                         "xfail claims test_relu a known bug\n";
  ExpectationFile f = ExpectationFile::load(path);
  ASSERT_EQ(f.entries().size(), 2u);
  EXPECT_NE(f.find("onnx-node", "test_string_concat"), nullptr);
  EXPECT_EQ(f.find("claims", "test_string_concat"), nullptr);
  EXPECT_EQ(f.find("claims", "test_relu")->reason, "a known bug");
  std::ofstream(path) << "maybe onnx-node test_relu why\n";
  EXPECT_THROW(ExpectationFile::load(path), std::runtime_error);
  std::filesystem::remove(path);
}

TEST(Values, Uint16ContainerTakesTheDeclaredBfloat16Type) {
  // Older ONNX test data stores bfloat16 values as uint16 tensors.
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::UINT16);
  p.add_dims(1);
  p.add_int32_data(0x3F80);  // 1.0 in bfloat16
  const std::string path = (std::filesystem::temp_directory_path() / "onyx_bf16_container.pb").string();
  std::ofstream(path, std::ios::binary) << p.SerializeAsString();
  onnx::TypeProto declared;
  declared.mutable_tensor_type()->set_elem_type(onnx::TensorProto::BFLOAT16);
  TestValue v = read_value_file(path, declared);
  EXPECT_EQ(v.tensor.dtype, onnx::TensorProto::BFLOAT16);
  EXPECT_EQ(decode_float(16, v.tensor.bytes.data(), 0), 1.0);
  declared.mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);  // other width: kept
  EXPECT_EQ(read_value_file(path, declared).tensor.dtype, onnx::TensorProto::UINT16);
  std::filesystem::remove(path);
}

TEST(Decode, TwoBitIntegersAndFloat8E8M0) {
  // int2: four per byte, low bits first: 0b11'10'01'00 = 0, 1, -2, -1.
  HostTensor expected;
  expected.dtype = 26;
  expected.dims = {4};
  expected.bytes = std::string(1, char(0xE4));
  EXPECT_EQ(tensor_byte_size(26, 7), 2u);
  uint8_t same = 0xE4, other = 0xE0;
  const Tolerance tol{1, 1, "integers are exact"};
  EXPECT_TRUE(compare_tensor(expected, 26, expected.dims.data(), 1, &same, tol).ok);
  Comparison c = compare_tensor(expected, 26, expected.dims.data(), 1, &other, tol);
  EXPECT_NE(c.message.find("at [1]: got 0, expected 1"), std::string::npos) << c.message;
  EXPECT_EQ(decode_byte(24, 127), 1.0);
  EXPECT_EQ(decode_byte(24, 0), std::ldexp(1.0, -127));
  EXPECT_TRUE(std::isnan(decode_byte(24, 0xFF)));
}
