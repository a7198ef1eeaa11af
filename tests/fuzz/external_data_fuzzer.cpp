// external_data_fuzzer.cpp: libFuzzer harness for external data (TensorProto
// data_location EXTERNAL with location/offset/length keys): the path checks
// and the reads of the one TensorProto codec, reached directly, through a
// sparse tensor and through the model loader (initializers and a Constant's
// tensor attribute).
//
// Once per process it builds a model folder of data files, a subfolder,
// symlinks inside and out, a hard link to an outside file, a FIFO, a folder
// named like a data file, a dangling and a looping symlink; beside it, an
// "outside" folder. Each input becomes up to four external tensors with
// hostile locations ("..", absolute, NUL bytes, long), offsets and lengths
// (near 2^63 and 2^64, not numbers) and dtypes and dims whose byte count
// disagrees with the file, decoded with the model folder (or its subfolder)
// as the base.
//
// Every byte tells where it came from: the model folder's files hold bytes
// 0x10..0x3F, its subfolder's 0x40..0x7F, the outside files 0x80..0xFF. A
// success holding a byte from outside its base folder is a finding, so is an
// error without a message; a read that blocks on the FIFO is a timeout.
#include <fcntl.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <onnx/onnx_pb.h>
#include <onyx/util/tensor_proto_codec.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ir/onnx_import.h"

namespace {

namespace fs = std::filesystem;
using ONNX_NAMESPACE::TensorProto;

// Successful external reads, printed at exit when ONYX_FUZZ_STATS is set: a
// harness whose inputs never succeed would check nothing.
size_t g_reads_ok = 0, g_bytes_ok = 0;

struct Fixture {
  fs::path root;     // removed at exit
  fs::path base;     // root/model: the model's folder
  fs::path outside;  // root/outside: never readable through the model
};

void write_file(const fs::path& path, size_t size, unsigned char low, unsigned char high) {
  std::string bytes(size, '\0');
  for (size_t k = 0; k < size; ++k) bytes[k] = char(low + (k * 7 + size) % size_t(high - low + 1));
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

const Fixture& fixture() {
  static const Fixture f = [] {
    char name[] = "/tmp/onyx_fuzz_external_XXXXXX";
    if (!::mkdtemp(name)) __builtin_trap();
    Fixture x{name, fs::path(name) / "model", fs::path(name) / "outside"};
    fs::create_directories(x.base / "sub");
    fs::create_directories(x.outside);
    write_file(x.base / "a.bin", 16, 0x10, 0x3F);
    write_file(x.base / "b.bin", 4096, 0x10, 0x3F);
    write_file(x.base / "empty.bin", 0, 0x10, 0x3F);
    write_file(x.base / "sub" / "c.bin", 64, 0x40, 0x7F);
    write_file(x.base / "sub" / "d.bin", 8, 0x40, 0x7F);
    write_file(x.outside / "secret.bin", 4096, 0x80, 0xFF);
    write_file(x.outside / "linked.bin", 64, 0x80, 0xFF);
    fs::create_symlink("a.bin", x.base / "link_in");
    fs::create_symlink("../b.bin", x.base / "sub" / "link_up");
    fs::create_symlink("sub", x.base / "link_dir_in");
    fs::create_symlink(x.outside / "secret.bin", x.base / "link_out_abs");
    fs::create_symlink("../outside/secret.bin", x.base / "link_out");
    fs::create_symlink("../outside", x.base / "link_dir_out");
    fs::create_symlink("../../outside/secret.bin", x.base / "sub" / "link_out");
    fs::create_symlink("missing.bin", x.base / "dangling");
    fs::create_symlink("loop", x.base / "loop");
    fs::create_symlink("fifo.bin", x.base / "link_fifo");
    fs::create_hard_link(x.outside / "linked.bin", x.base / "hard.bin");
    fs::create_directory(x.base / "dir.bin");
    if (::mkfifo((x.base / "fifo.bin").c_str(), 0600) != 0) __builtin_trap();
    static fs::path removed_at_exit = x.root;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(removed_at_exit, ec);
      if (std::getenv("ONYX_FUZZ_STATS"))
        std::fprintf(stderr, "external_data: %zu successful reads, %zu bytes\n", g_reads_ok, g_bytes_ok);
    });
    return x;
  }();
  return f;
}

// Names the fuzzer builds locations from (mutations reach the rest).
std::vector<std::string> known_locations() {
  const Fixture& f = fixture();
  return {"a.bin", "b.bin", "empty.bin", "sub/c.bin", "sub/d.bin", "c.bin", "link_in", "sub/link_up",
          "link_dir_in/c.bin", "link_out_abs", "link_out", "link_dir_out/secret.bin", "sub/link_out", "dangling",
          "loop", "link_fifo", "hard.bin", "dir.bin", "fifo.bin", "sub", ".", "..", "", "./a.bin", "sub/../a.bin",
          "sub/./../b.bin", "../model/a.bin", "../outside/secret.bin", "sub/../../outside/secret.bin",
          "missing/../a.bin", "missing/../../outside/secret.bin", "a.bin/", "a.bin/.", "//a.bin", "sub//c.bin",
          (f.outside / "secret.bin").string(), (f.base / "a.bin").string(), "../sub/c.bin", "../a.bin"};
}

std::string size_text(FuzzedDataProvider& in) {
  static const uint64_t sizes[] = {0,    1,    2,     4,          7,          8,          15,
                                   16,   17,   63,    64,         4095,       4096,       4097,
                                   1u << 16, 1ull << 31, 1ull << 32, (1ull << 63) - 1, 1ull << 63, ~0ull - 15, ~0ull};
  static const char* const odd[] = {"-1", "+0", " 1", "1 ", "0x10", "", "18446744073709551616",
                                    "99999999999999999999999", "1e3", "0\0" "1", "08"};
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: return std::to_string(in.PickValueInArray(sizes));
    case 1: return std::to_string(in.ConsumeIntegral<uint64_t>());
    case 2: return in.PickValueInArray(odd);
    default: return in.ConsumeRandomLengthString(24);
  }
}

std::string location(FuzzedDataProvider& in, const std::vector<std::string>& known) {
  const std::string& a = known[in.ConsumeIntegralInRange<size_t>(0, known.size() - 1)];
  switch (in.ConsumeIntegralInRange(0, 5)) {
    case 0: return a;
    case 1: return a + in.ConsumeRandomLengthString(16);
    case 2: return in.ConsumeRandomLengthString(16) + a;
    case 3: return in.ConsumeRandomLengthString(64);
    case 4: return a + std::string(1, '\0') + known[in.ConsumeIntegralInRange<size_t>(0, known.size() - 1)];
    default: {  // long: many harmless parts, or one long name
      std::string s;
      const size_t repeat = in.ConsumeIntegralInRange<size_t>(1, 2000);
      const bool parts = in.ConsumeBool();
      for (size_t k = 0; k < repeat; ++k) s += parts ? "sub/../" : "x";
      return parts ? s + a : s;
    }
  }
}

// One tensor whose data is (said to be) external.
TensorProto external_tensor(FuzzedDataProvider& in, const std::string& name) {
  static const int32_t dtypes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 21, 22, 23, 0, 99};
  static const int64_t dims[] = {0, 1, 2, 3, 4, 8, 16, 64, 1024, 4096, -1, 1ll << 31, (1ll << 32) + 1, 1ll << 62,
                                 INT64_MAX, INT64_MIN};
  const std::vector<std::string> known = known_locations();
  TensorProto t;
  t.set_name(name);
  t.set_data_type(in.PickValueInArray(dtypes));
  const int rank = in.ConsumeIntegralInRange(0, 4);
  for (int k = 0; k < rank; ++k)
    t.add_dims(in.ConsumeBool() ? in.PickValueInArray(dims) : in.ConsumeIntegral<int64_t>());
  // Mostly EXTERNAL; sometimes DEFAULT with the keys anyway, or raw_data too.
  const int form = in.ConsumeIntegralInRange(0, 7);
  t.set_data_location(form == 0 ? TensorProto::DEFAULT : TensorProto::EXTERNAL);
  if (form == 1) t.set_raw_data(in.ConsumeRandomLengthString(16));
  const int entries = in.ConsumeIntegralInRange(0, 5);
  for (int k = 0; k < entries; ++k) {
    auto* e = t.add_external_data();
    switch (in.ConsumeIntegralInRange(0, 5)) {
      case 0: case 1: e->set_key("location"), e->set_value(location(in, known)); break;
      case 2: e->set_key("offset"), e->set_value(size_text(in)); break;
      case 3: e->set_key("length"), e->set_value(size_text(in)); break;
      case 4: e->set_key("checksum"), e->set_value(in.ConsumeRandomLengthString(8)); break;
      default: e->set_key(in.ConsumeRandomLengthString(8)), e->set_value(in.ConsumeRandomLengthString(8)); break;
    }
  }
  return t;
}

// Which bytes a successful read from `base` may hold: those of its own files
// (and 0x00..0x0F, which no file holds: zero fill, normalized booleans).
bool byte_allowed(unsigned char b, bool base_is_sub) {
  if (b < 0x10) return true;
  return base_is_sub ? b >= 0x40 && b < 0x80 : b < 0x80;
}

void check_bytes(const void* data, size_t bytes, bool base_is_sub) {
  ++g_reads_ok;
  g_bytes_ok += bytes;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t k = 0; k < bytes; ++k)
    if (!byte_allowed(p[k], base_is_sub)) __builtin_trap();  // a byte from outside the base folder
}

void check_error(const onyx::util::CodecError& e) {
  if (!e.ok() && e.message.empty()) __builtin_trap();  // errors must say something
}

void decode_direct(FuzzedDataProvider& in, const std::string& base, bool base_is_sub) {
  const int count = in.ConsumeIntegralInRange(1, 4);
  for (int k = 0; k < count; ++k) {
    TensorProto t = external_tensor(in, "t" + std::to_string(k));
    onyx::util::DecodedTensor out;
    onyx::util::CodecError e = onyx::util::decode_tensor_proto(t, {base, ""}, out);
    check_error(e);
    if (e.ok() && t.data_location() == TensorProto::EXTERNAL) check_bytes(out.data, out.bytes, base_is_sub);
  }
}

void decode_sparse(FuzzedDataProvider& in, const std::string& base, bool base_is_sub) {
  ONNX_NAMESPACE::SparseTensorProto s;
  *s.mutable_values() = external_tensor(in, "values");
  *s.mutable_indices() = external_tensor(in, "indices");
  const int rank = in.ConsumeIntegralInRange(0, 3);
  for (int k = 0; k < rank; ++k) s.add_dims(in.ConsumeIntegralInRange<int64_t>(-1, 64));
  onyx::util::DecodedTensor out;
  onyx::util::CodecError e = onyx::util::decode_sparse_tensor_proto(s, {base, "sparse"}, out);
  check_error(e);
  if (e.ok()) check_bytes(out.data, out.bytes, base_is_sub);
}

void load_model(FuzzedDataProvider& in, const std::string& base, bool base_is_sub) {
  ONNX_NAMESPACE::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("external");
  const int count = in.ConsumeIntegralInRange(0, 3);
  for (int k = 0; k < count; ++k) *g->add_initializer() = external_tensor(in, "t" + std::to_string(k));
  if (in.ConsumeBool()) {  // a Constant whose value attribute is external
    auto* node = g->add_node();
    node->set_op_type("Constant");
    node->set_name("constant");
    node->add_output("c");
    auto* a = node->add_attribute();
    a->set_name("value");
    a->set_type(ONNX_NAMESPACE::AttributeProto::TENSOR);
    *a->mutable_t() = external_tensor(in, "c");
    g->add_output()->set_name("c");
  }
  const std::string bytes = m.SerializeAsString();
  auto model = onyx::runtime::ir::load_model_from_bytes(bytes.data(), bytes.size(), base);
  if (!model.ok()) {
    if (model.status().message().empty()) __builtin_trap();
    return;
  }
  for (const auto& v : model->graph->values)
    if (v.constant && (v.name == "c" || v.name.starts_with("t")))
      check_bytes(v.constant->data(), v.constant->bytes(), base_is_sub);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Fixture& f = fixture();
  FuzzedDataProvider in(data, size);
  const bool base_is_sub = in.ConsumeIntegralInRange(0, 3) == 0;
  std::string base = (base_is_sub ? f.base / "sub" : f.base).string();
  if (in.ConsumeIntegralInRange(0, 3) == 0) base += "/";
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0: decode_direct(in, base, base_is_sub); break;
    case 1: decode_sparse(in, base, base_is_sub); break;
    default: load_model(in, base, base_is_sub); break;
  }
  return 0;
}
