// The TensorProto codec alone (the importer's own tests in tests/runtime/ir
// cover it through ir/tensor_proto.h as well).
#include <onyx/util/tensor_proto_codec.h>
#include <onyx_dtype.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

namespace onyx::util {
namespace {

namespace fs = std::filesystem;
using ONNX_NAMESPACE::TensorProto;

TensorProto proto_of(int32_t dtype, std::vector<int64_t> dims) {
  TensorProto p;
  p.set_name("t");
  p.set_data_type(dtype);
  for (int64_t d : dims) p.add_dims(d);
  return p;
}

TEST(TensorProtoCodec, RawAndTypedFieldsDecodeToTheSameBytes) {
  TensorProto typed = proto_of(TensorProto::FLOAT, {2, 2});
  for (float v : {1.f, 2.f, 3.f, -4.f}) typed.add_float_data(v);
  DecodedTensor a, b;
  ASSERT_TRUE(decode_tensor_proto(typed, {}, a).ok());
  TensorProto raw;
  ASSERT_TRUE(encode_tensor_proto("t", a.dtype, a.dims, {static_cast<const std::byte*>(a.data), a.bytes}, raw).ok());
  EXPECT_EQ(raw.raw_data().size(), 16u);
  ASSERT_TRUE(decode_tensor_proto(raw, {}, b).ok());
  EXPECT_EQ(b.dims, (std::vector<int64_t>{2, 2}));
  ASSERT_EQ(b.bytes, 16u);
  EXPECT_EQ(std::memcmp(a.data, b.data, 16), 0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data) % 64, 0u);  // adoptable by runtime tensors
}

TEST(TensorProtoCodec, NarrowTypesPackedTypesAndStrings) {
  TensorProto half = proto_of(TensorProto::FLOAT16, {2});
  half.add_int32_data(0x3C00);
  half.add_int32_data(0xC000);
  DecodedTensor t;
  ASSERT_TRUE(decode_tensor_proto(half, {}, t).ok());
  EXPECT_EQ(static_cast<const uint16_t*>(t.data)[1], 0xC000);

  TensorProto int4 = proto_of(ONYX_DTYPE_INT4, {3});  // three 4-bit values in two packed bytes (Debian's onnx 1.12 proto has no INT4 name)
  int4.add_int32_data(0x21);
  int4.add_int32_data(0x03);
  ASSERT_TRUE(decode_tensor_proto(int4, {}, t).ok());
  EXPECT_EQ(t.bytes, 2u);
  EXPECT_EQ(static_cast<const uint8_t*>(t.data)[0], 0x21);

  TensorProto strings = proto_of(TensorProto::STRING, {2});
  strings.add_string_data("a");
  strings.add_string_data(std::string("b\0c", 3));
  ASSERT_TRUE(decode_tensor_proto(strings, {}, t).ok());
  EXPECT_EQ(t.strings, (std::vector<std::string>{"a", std::string("b\0c", 3)}));
}

TEST(TensorProtoCodec, BadProtosNameTheTensorAndTheKind) {
  DecodedTensor t;
  TensorProto short_raw = proto_of(TensorProto::FLOAT, {3});
  short_raw.set_raw_data(std::string(8, '\0'));
  CodecError e = decode_tensor_proto(short_raw, {}, t);
  EXPECT_EQ(e.kind, CodecError::kInvalid);
  EXPECT_NE(e.message.find("tensor 't' (float32, [3]) has 8 bytes of raw_data, expected 12"), std::string::npos)
      << e.message;
  EXPECT_EQ(decode_tensor_proto(proto_of(99, {1}), {}, t).kind, CodecError::kUnsupported);
  EXPECT_EQ(decode_tensor_proto(proto_of(TensorProto::FLOAT, {-1}), {}, t).kind, CodecError::kInvalid);
  TensorProto huge = proto_of(TensorProto::FLOAT, {1 << 30, 1 << 30, 1 << 30});
  EXPECT_EQ(decode_tensor_proto(huge, {}, t).kind, CodecError::kInvalid);  // refused before allocating
  TensorProto few = proto_of(TensorProto::INT64, {2});
  few.add_int64_data(1);
  e = decode_tensor_proto(few, {"", "fallback"}, t);
  EXPECT_NE(e.message.find("holds 1 values, expected 2"), std::string::npos) << e.message;
  std::byte one[4] = {};
  TensorProto out;
  EXPECT_EQ(encode_tensor_proto("s", TensorProto::STRING, std::vector<int64_t>{1}, one, out).kind,
            CodecError::kUnsupported);
  EXPECT_EQ(encode_tensor_proto("f", TensorProto::FLOAT, std::vector<int64_t>{2}, one, out).kind,
            CodecError::kInvalid);
}

TEST(TensorProtoCodec, ExternalDataStaysInsideItsFolder) {
  std::string pattern = (fs::temp_directory_path() / "onyx_codec_XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  fs::path dir = pattern;
  float values[2] = {5.f, 6.f};
  std::ofstream(dir / "w.bin", std::ios::binary).write(reinterpret_cast<const char*>(values), sizeof values);
  TensorProto p = proto_of(TensorProto::FLOAT, {2});
  p.set_data_location(TensorProto::EXTERNAL);
  auto* location = p.add_external_data();
  location->set_key("location");
  location->set_value("w.bin");
  DecodedTensor t;
  ASSERT_TRUE(decode_tensor_proto(p, {dir.string(), ""}, t).ok());
  EXPECT_EQ(static_cast<const float*>(t.data)[1], 6.f);
  EXPECT_EQ(decode_tensor_proto(p, {"", ""}, t).kind, CodecError::kInvalid);  // no folder: refused
  location->set_value("../w.bin");
  CodecError e = decode_tensor_proto(p, {(dir / "sub").string(), ""}, t);
  EXPECT_NE(e.message.find("outside the model's folder"), std::string::npos) << e.message;
  location->set_value("absent.bin");
  EXPECT_EQ(decode_tensor_proto(p, {dir.string(), ""}, t).kind, CodecError::kNotFound);
  // bad-inputs.md, class 4: a NUL that would cut the path the system sees,
  // a hard link (to a file that may live anywhere), and a symlink out of the
  // folder are refused; the check and the open are one step (openat2).
  location->set_value(std::string("w.bin\0/../../secret.bin", 24));
  e = decode_tensor_proto(p, {dir.string(), ""}, t);
  EXPECT_NE(e.message.find("contains a NUL byte"), std::string::npos) << e.message;
  fs::create_directories(dir / "outside");
  std::ofstream(dir / "outside" / "secret.bin", std::ios::binary).write(reinterpret_cast<const char*>(values), sizeof values);
  fs::create_directories(dir / "model");
  fs::create_hard_link(dir / "outside" / "secret.bin", dir / "model" / "linked.bin");
  location->set_value("linked.bin");
  e = decode_tensor_proto(p, {(dir / "model").string(), ""}, t);
  EXPECT_NE(e.message.find("has 2 hard links"), std::string::npos) << e.message;
  fs::create_symlink(dir / "outside" / "secret.bin", dir / "model" / "symlinked.bin");
  location->set_value("symlinked.bin");
  e = decode_tensor_proto(p, {(dir / "model").string(), ""}, t);
  EXPECT_FALSE(e.ok());
  EXPECT_NE(e.message.find("outside the model's folder"), std::string::npos) << e.message;
  fs::remove_all(dir);
}

// A location that exists but is a folder or a FIFO is named as such (not "no
// such file"), and the FIFO is not opened: nothing waits on a writer.
TEST(TensorProtoCodec, ExternalDataThatIsAFolderOrAFifoIsRefusedAsSuch) {
  std::string pattern = (fs::temp_directory_path() / "onyx_codec_XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern;
  fs::create_directories(dir / "weights");
  ASSERT_EQ(::mkfifo((dir / "pipe.bin").c_str(), 0600), 0);
  TensorProto p = proto_of(TensorProto::FLOAT, {2});
  p.set_data_location(TensorProto::EXTERNAL);
  auto* location = p.add_external_data();
  location->set_key("location");
  DecodedTensor t;
  for (const auto& [name, what] : {std::pair<std::string, std::string>{"weights", "is a folder"}, {"pipe.bin", "is a FIFO"}}) {
    location->set_value(name);
    CodecError e = decode_tensor_proto(p, {dir.string(), ""}, t);
    EXPECT_EQ(e.kind, CodecError::kInvalid) << name;
    EXPECT_NE(e.message.find("'" + name + "' is not a regular file"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find(what + ")"), std::string::npos) << e.message;
  }
  fs::remove_all(dir);
}

TEST(TensorProtoCodec, SparseToDense) {
  ONNX_NAMESPACE::SparseTensorProto s;
  s.add_dims(2);
  s.add_dims(3);
  *s.mutable_values() = proto_of(TensorProto::FLOAT, {2});
  s.mutable_values()->add_float_data(7.f);
  s.mutable_values()->add_float_data(8.f);
  *s.mutable_indices() = proto_of(TensorProto::INT64, {2});
  s.mutable_indices()->add_int64_data(1);
  s.mutable_indices()->add_int64_data(5);
  DecodedTensor t;
  ASSERT_TRUE(decode_sparse_tensor_proto(s, {}, t).ok());
  const float* v = static_cast<const float*>(t.data);
  EXPECT_EQ(v[0], 0.f);
  EXPECT_EQ(v[1], 7.f);
  EXPECT_EQ(v[5], 8.f);
  s.mutable_indices()->set_int64_data(1, 6);
  EXPECT_NE(decode_sparse_tensor_proto(s, {}, t).message.find("out of range"), std::string::npos);
}

// bad-inputs.md class 3: one value with dense dims [2^30] float was densified
// at load (5 GB, killed at 20 s). The dense size is checked before allocating.
TEST(TensorProtoCodec, ASparseTensorsDenseFormIsBoundedBeforeAllocating) {
  ONNX_NAMESPACE::SparseTensorProto s;
  s.add_dims(int64_t(1) << 30);
  *s.mutable_values() = proto_of(TensorProto::FLOAT, {1});
  s.mutable_values()->set_name("huge");
  s.mutable_values()->add_float_data(7.f);
  *s.mutable_indices() = proto_of(TensorProto::INT64, {1});
  s.mutable_indices()->add_int64_data(5);
  DecodedTensor t;
  CodecError e = decode_sparse_tensor_proto(s, {}, t);
  EXPECT_EQ(e.kind, CodecError::kInvalid);
  EXPECT_NE(e.message.find("sparse tensor 'huge': its dense form [1073741824] of float32 needs 1073741824 x 4 "
                           "bytes, past the 1073741824-byte budget"),
            std::string::npos)
      << e.message;
  EXPECT_EQ(t.data, nullptr);
}

// A tensor file that is a FIFO is refused at once, not waited on.
TEST(TensorProtoCodec, ATensorFileThatIsAFifoIsRefusedWithoutBlocking) {
  const fs::path fifo = fs::temp_directory_path() / ("onyx_codec_fifo_" + std::to_string(::getpid()));
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  DecodedTensor t;
  CodecError e = decode_tensor_proto_file(fifo.string(), t);
  fs::remove(fifo);
  EXPECT_EQ(e.kind, CodecError::kReadFailed);
  EXPECT_NE(e.message.find("is not a regular file"), std::string::npos) << e.message;
}

}  // namespace
}  // namespace onyx::util
