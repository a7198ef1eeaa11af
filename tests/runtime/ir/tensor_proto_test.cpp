// TensorProto decoding: every element type, raw and typed fields, sparse
// tensors, and external data (including the refusals that keep a model from
// reading files outside its folder).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "ir/tensor_proto.h"
#include "ir_test_util.h"

namespace onyx::runtime::ir {
namespace {

namespace fs = std::filesystem;
using namespace testing;

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  if (t.empty()) return {};
  return std::vector<T>(t.data_as<T>(), t.data_as<T>() + t.size());
}

// Decodes `p`, failing the test (and returning an empty tensor) on error.
Tensor decode(const pb::TensorProto& p) {
  auto t = tensor_from_proto(p, "");
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? t.value() : Tensor();
}

pb::TensorProto typed(int32_t dtype, std::vector<int64_t> dims) {
  pb::TensorProto t;
  t.set_name("t");
  t.set_data_type(dtype);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

TEST(TensorProto, TypedFields) {
  {
    auto p = typed(ONYX_DTYPE_FLOAT32, {2});
    p.add_float_data(1.5f), p.add_float_data(-2);
    auto t = tensor_from_proto(p, "");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(values_of<float>(*t), std::vector<float>({1.5f, -2}));
  }
  {
    auto p = typed(ONYX_DTYPE_FLOAT64, {1});
    p.add_double_data(0.1);
    EXPECT_EQ(values_of<double>(decode(p)), std::vector<double>({0.1}));
  }
  {
    auto p = typed(ONYX_DTYPE_INT64, {2, 1});
    p.add_int64_data(-5), p.add_int64_data(1LL << 40);
    Tensor t = decode(p);
    EXPECT_EQ(t.shape(), Shape({2, 1}));
    EXPECT_EQ(values_of<int64_t>(t), std::vector<int64_t>({-5, 1LL << 40}));
  }
  {
    auto p = typed(ONYX_DTYPE_INT32, {1});
    p.add_int32_data(-7);
    EXPECT_EQ(values_of<int32_t>(decode(p)), std::vector<int32_t>({-7}));
  }
  {  // narrow integer types travel widened in int32_data
    auto p = typed(ONYX_DTYPE_INT8, {2});
    p.add_int32_data(-3), p.add_int32_data(100);
    EXPECT_EQ(values_of<int8_t>(decode(p)), std::vector<int8_t>({-3, 100}));
    auto q = typed(ONYX_DTYPE_UINT16, {1});
    q.add_int32_data(65535);
    EXPECT_EQ(values_of<uint16_t>(decode(q)), std::vector<uint16_t>({65535}));
    auto r = typed(ONYX_DTYPE_INT16, {1});
    r.add_int32_data(-300);
    EXPECT_EQ(values_of<int16_t>(decode(r)), std::vector<int16_t>({-300}));
    auto u = typed(ONYX_DTYPE_UINT8, {1});
    u.add_int32_data(255);
    EXPECT_EQ(values_of<uint8_t>(decode(u)), std::vector<uint8_t>({255}));
  }
  {
    auto p = typed(ONYX_DTYPE_BOOL, {3});
    p.add_int32_data(1), p.add_int32_data(0), p.add_int32_data(1);
    EXPECT_EQ(values_of<uint8_t>(decode(p)), std::vector<uint8_t>({1, 0, 1}));
  }
  {  // float16 / bfloat16 / float8: bit patterns in int32_data
    auto h = typed(ONYX_DTYPE_FLOAT16, {1});
    h.add_int32_data(0x3C00);  // 1.0
    EXPECT_EQ(values_of<uint16_t>(decode(h)), std::vector<uint16_t>({0x3C00}));
    auto b = typed(ONYX_DTYPE_BFLOAT16, {1});
    b.add_int32_data(0xBF80);  // -1.0
    EXPECT_EQ(values_of<uint16_t>(decode(b)), std::vector<uint16_t>({0xBF80}));
    auto f8 = typed(ONYX_DTYPE_FLOAT8E4M3FN, {2});
    f8.add_int32_data(0x38), f8.add_int32_data(0xB8);  // 1.0, -1.0
    EXPECT_EQ(values_of<uint8_t>(decode(f8)), std::vector<uint8_t>({0x38, 0xB8}));
  }
  {  // uint32/uint64 in uint64_data
    auto p = typed(ONYX_DTYPE_UINT32, {1});
    p.add_uint64_data(4000000000u);
    EXPECT_EQ(values_of<uint32_t>(decode(p)), std::vector<uint32_t>({4000000000u}));
    auto q = typed(ONYX_DTYPE_UINT64, {1});
    q.add_uint64_data(~0ull);
    EXPECT_EQ(values_of<uint64_t>(decode(q)), std::vector<uint64_t>({~0ull}));
  }
  {  // complex64: real/imaginary pairs
    auto p = typed(ONYX_DTYPE_COMPLEX64, {1});
    p.add_float_data(1), p.add_float_data(2);
    auto t = tensor_from_proto(p, "");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->bytes(), 8u);
    EXPECT_EQ(t->data_as<float>()[1], 2.0f);
  }
  {  // int4: two elements per byte, first in the low nibble
    auto p = typed(ONYX_DTYPE_INT4, {3});
    p.add_int32_data(0xE1), p.add_int32_data(0x03);  // 1, -2, 3
    auto t = tensor_from_proto(p, "");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->bytes(), 2u);
    EXPECT_EQ(values_of<uint8_t>(Tensor::wrap(ONYX_DTYPE_UINT8, {2}, t->data(), nullptr)),
              std::vector<uint8_t>({0xE1, 0x03}));
  }
  {
    auto p = typed(ONYX_DTYPE_STRING, {2});
    p.add_string_data("hello"), p.add_string_data(std::string("a\0b", 3));
    auto t = tensor_from_proto(p, "");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->dtype(), ONYX_DTYPE_STRING);
    EXPECT_EQ(t->data_as<std::string>()[0], "hello");
    EXPECT_EQ(t->data_as<std::string>()[1], std::string("a\0b", 3));
  }
}

TEST(TensorProto, RawData) {
  auto p = typed(ONYX_DTYPE_INT32, {2});
  const int32_t v[2] = {7, -9};
  p.set_raw_data(v, sizeof v);
  EXPECT_EQ(values_of<int32_t>(decode(p)), std::vector<int32_t>({7, -9}));
  auto u4 = typed(ONYX_DTYPE_UINT4, {3});
  u4.set_raw_data(std::string("\x21\x03", 2));
  auto t = tensor_from_proto(u4, "");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->bytes(), 2u);
  auto empty = typed(ONYX_DTYPE_FLOAT32, {0, 3});
  empty.set_raw_data("");
  EXPECT_TRUE(tensor_from_proto(empty, "").ok());
}

TEST(TensorProto, SizeMismatchesAreErrors) {
  auto p = typed(ONYX_DTYPE_FLOAT32, {3});
  p.set_name("weights");
  p.add_float_data(1), p.add_float_data(2);
  auto t = tensor_from_proto(p, "");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tensor 'weights'"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("holds 2 values, expected 3"), std::string::npos) << t.status().message();
  auto r = typed(ONYX_DTYPE_FLOAT32, {3});
  r.set_raw_data(std::string(8, '\0'));
  EXPECT_NE(tensor_from_proto(r, "").status().message().find("8 bytes of raw_data, expected 12"), std::string::npos);
  // A corrupt proto claiming a huge size fails cleanly, without allocating.
  auto huge = typed(ONYX_DTYPE_FLOAT32, {1LL << 40});
  EXPECT_FALSE(tensor_from_proto(huge, "").ok());
  auto negative = typed(ONYX_DTYPE_FLOAT32, {-1});
  EXPECT_NE(tensor_from_proto(negative, "").status().message().find("negative dim"), std::string::npos);
  auto unknown_type = typed(99, {1});
  EXPECT_EQ(tensor_from_proto(unknown_type, "").status().code(), ONYX_STATUS_UNIMPLEMENTED);
}

TEST(TensorProto, SparseToDense) {
  pb::SparseTensorProto s;
  *s.mutable_values() = float_tensor("sp", {2}, {5, 7});
  *s.mutable_indices() = int64_tensor("", {2}, {1, 4});  // linear offsets
  s.add_dims(2), s.add_dims(3);
  auto t = sparse_to_dense(s, "");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->shape(), Shape({2, 3}));
  EXPECT_EQ(values_of<float>(*t), std::vector<float>({0, 5, 0, 0, 7, 0}));
  *s.mutable_indices() = int64_tensor("", {2, 2}, {0, 2, 1, 0});  // coordinates
  t = sparse_to_dense(s, "");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(values_of<float>(*t), std::vector<float>({0, 0, 5, 7, 0, 0}));
  *s.mutable_indices() = int64_tensor("", {2}, {1, 6});
  EXPECT_NE(sparse_to_dense(s, "").status().message().find("out of range"), std::string::npos);
}

TEST(TensorProto, SparseInitializerInAModel) {
  pb::SparseTensorProto s;
  *s.mutable_values() = int64_tensor("shape_s", {1}, {4});
  *s.mutable_indices() = int64_tensor("", {1}, {1});
  s.add_dims(2);
  GraphBuilder g;
  g.input("x", 1, {2, 4});
  *g.proto().add_sparse_initializer() = s;
  g.node("Reshape", {"x", "shape_s"}, {"y"}).output("y");
  auto m = import(make_model(g.proto()));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ASSERT_TRUE(find(*m, "shape_s")->constant.has_value());
  EXPECT_EQ(values_of<int64_t>(*find(*m, "shape_s")->constant), std::vector<int64_t>({0, 4}));
  EXPECT_EQ(find(*m, "y")->dims, Shape({2, 4}));  // 0 copies x's dim 0
}

// A folder with a model and its external data file.
class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("onyx_ir_external_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "model" / "weights");
    // weights/w.bin: 8 bytes of junk, then 4 floats.
    std::ofstream out(root_ / "model" / "weights" / "w.bin", std::ios::binary);
    out.write("junkjunk", 8);
    const float w[4] = {1, 2, 3, 4};
    out.write(reinterpret_cast<const char*>(w), sizeof w);
    std::ofstream outside(root_ / "evil.bin", std::ios::binary);
    outside.write(reinterpret_cast<const char*>(w), sizeof w);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Writes model.onnx whose initializer 'w' [4] lives at `location`.
  std::string write_model(const std::string& location, const std::string& offset,
                          const std::string& length) {
    pb::TensorProto w;
    w.set_name("w");
    w.set_data_type(pb::TensorProto::FLOAT);
    w.add_dims(4);
    w.set_data_location(pb::TensorProto::EXTERNAL);
    auto add = [&](const char* key, const std::string& value) {
      if (value.empty()) return;
      auto* e = w.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", location);
    add("offset", offset);
    add("length", length);
    GraphBuilder g;
    g.input("x", 1, {4}).initializer(w).node("Add", {"x", "w"}, {"y"}).output("y");
    const fs::path path = root_ / "model" / "model.onnx";
    std::ofstream out(path, std::ios::binary);
    out << make_model(g.proto()).SerializeAsString();
    return path.string();
  }

  fs::path root_;
};

TEST_F(ExternalData, ReadsRelativeToTheModelFolder) {
  auto m = load_model(write_model("weights/w.bin", "8", "16"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(values_of<float>(*find(*m, "w")->constant), std::vector<float>({1, 2, 3, 4}));
  EXPECT_EQ(fs::path(m->base_dir), root_ / "model");
  // Without length, the rest of the file.
  m = load_model(write_model("weights/./w.bin", "8", ""));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  // A ".." that stays inside the folder is fine.
  m = load_model(write_model("weights/../weights/w.bin", "8", "16"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
}

TEST_F(ExternalData, RefusesPathsOutsideTheModelFolder) {
  auto m = load_model(write_model("../evil.bin", "", "16"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("'../evil.bin'"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("tensor 'w'"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("outside the model's folder"), std::string::npos) << m.status().message();
  const std::string absolute = (root_ / "evil.bin").string();
  m = load_model(write_model(absolute, "", "16"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("absolute path"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find(absolute), std::string::npos) << m.status().message();
  // A symlink inside the folder that points outside it.
  fs::create_symlink(root_ / "evil.bin", root_ / "model" / "link.bin");
  m = load_model(write_model("link.bin", "", "16"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("'link.bin'"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("outside the model's folder"), std::string::npos) << m.status().message();
}

TEST_F(ExternalData, ChecksOffsetAndLength) {
  auto m = load_model(write_model("weights/w.bin", "16", "16"));  // 16 + 16 > 24
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("exceeds the file size 24"), std::string::npos) << m.status().message();
  m = load_model(write_model("weights/w.bin", "30", ""));
  EXPECT_NE(m.status().message().find("past the end"), std::string::npos) << m.status().message();
  m = load_model(write_model("weights/w.bin", "0", "12"));  // 12 bytes for 4 floats
  EXPECT_NE(m.status().message().find("needs 16"), std::string::npos) << m.status().message();
  m = load_model(write_model("weights/w.bin", "x8", "16"));
  EXPECT_NE(m.status().message().find("not a byte count"), std::string::npos) << m.status().message();
  m = load_model(write_model("weights/missing.bin", "", ""));
  EXPECT_EQ(m.status().code(), ONYX_STATUS_NOT_FOUND) << m.status().to_string();
}

TEST_F(ExternalData, RefusedForModelsLoadedFromMemory) {
  const std::string path = write_model("weights/w.bin", "8", "16");
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto m = load_model_from_bytes(bytes.data(), bytes.size(), "");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("loaded from memory"), std::string::npos) << m.status().message();
  // With a folder given, it works.
  m = load_model_from_bytes(bytes.data(), bytes.size(), (root_ / "model").string());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
}

}  // namespace
}  // namespace onyx::runtime::ir
