// model_parse.cpp: protobuf wire format (tag = field << 3 | wire type;
// varints; length-delimited fields), just enough to walk ModelProto.graph (7)
// -> GraphProto.initializer (5) -> TensorProto.raw_data (9) and write the
// model again without the payloads.
#include "onyx/util/model_parse.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <cstdint>
#include <string>

namespace onyx::util {
namespace {

constexpr uint32_t kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

struct Field {
  uint32_t number = 0, wire_type = 0;
  std::string_view whole;    // tag through the end of the value
  std::string_view payload;  // a length-delimited field's bytes
};

class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : rest_(bytes) {}
  bool done() const { return rest_.empty(); }

  // The next field, or false when the bytes are not wire format this walker takes.
  bool next(Field& f) {
    const char* start = rest_.data();
    uint64_t tag = 0;
    if (!varint(tag) || tag >> 32 || (tag >> 3) == 0) return false;
    f.number = uint32_t(tag >> 3);
    f.wire_type = uint32_t(tag & 7);
    uint64_t length = 0;
    switch (f.wire_type) {
      case kVarint:
        if (!varint(length)) return false;
        break;
      case kFixed64:
        if (!skip(8)) return false;
        break;
      case kFixed32:
        if (!skip(4)) return false;
        break;
      case kLengthDelimited:
        if (!varint(length) || length > rest_.size()) return false;
        f.payload = rest_.substr(0, size_t(length));
        rest_.remove_prefix(size_t(length));
        break;
      default:
        return false;  // groups (3, 4) and invalid types
    }
    f.whole = std::string_view(start, size_t(rest_.data() - start));
    return true;
  }

 private:
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (rest_.empty()) return false;
      const auto byte = uint8_t(rest_.front());
      rest_.remove_prefix(1);
      v |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;
  }
  bool skip(size_t n) {
    if (rest_.size() < n) return false;
    rest_.remove_prefix(n);
    return true;
  }

  std::string_view rest_;
};

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

void put_message(std::string& out, uint32_t number, const std::string& body) {
  put_varint(out, uint64_t(number) << 3 | kLengthDelimited);
  put_varint(out, body.size());
  out += body;
}

// A TensorProto without its raw_data bytes; `raw` views them (the last
// occurrence wins, as in protobuf).
bool split_tensor(std::string_view tensor, std::string& out, std::string_view& raw) {
  WireReader r(tensor);
  Field f;
  bool has_raw = false;
  while (!r.done()) {
    if (!r.next(f)) return false;
    if (f.number == kTensorRawData && f.wire_type == kLengthDelimited) {
      raw = f.payload;
      has_raw = true;
    } else {
      out.append(f.whole);
    }
  }
  if (has_raw) put_message(out, kTensorRawData, "");
  return true;
}

bool split_graph(std::string_view graph, std::string& out, std::vector<std::string_view>& raw) {
  WireReader r(graph);
  Field f;
  std::string tensor;
  while (!r.done()) {
    if (!r.next(f)) return false;
    if (f.number != kGraphInitializer || f.wire_type != kLengthDelimited) {
      out.append(f.whole);
      continue;
    }
    tensor.clear();
    std::string_view payload;
    if (!split_tensor(f.payload, tensor, payload)) return false;
    put_message(out, kGraphInitializer, tensor);
    raw.push_back(payload);
  }
  return true;
}

// The model with each top-level initializer's raw_data emptied; false when
// the bytes are not in the form this walker takes.
bool split_initializer_data(std::string_view model, std::string& skeleton, std::vector<std::string_view>& raw) {
  WireReader r(model);
  Field f;
  bool seen_graph = false;
  while (!r.done()) {
    if (!r.next(f)) return false;
    if (f.number != kModelGraph) {
      skeleton.append(f.whole);
      continue;
    }
    if (f.wire_type != kLengthDelimited || seen_graph) return false;
    seen_graph = true;
    std::string graph;
    if (!split_graph(f.payload, graph, raw)) return false;
    put_message(skeleton, kModelGraph, graph);
  }
  return true;
}

bool parse(std::string_view bytes, ONNX_NAMESPACE::ModelProto& out) {
  if (bytes.size() > size_t(INT_MAX)) return false;
  google::protobuf::io::ArrayInputStream stream(bytes.data(), int(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&stream);
  // Large models: allow the whole 2 GiB protobuf range (never a smaller cap).
  coded.SetTotalBytesLimit(INT_MAX);
  return out.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

}  // namespace

bool parse_model_proto(std::string_view bytes, ONNX_NAMESPACE::ModelProto& out,
                       std::vector<std::string_view>& raw_data) {
  raw_data.clear();
  std::string skeleton;
  if (split_initializer_data(bytes, skeleton, raw_data) && parse(skeleton, out)) return true;
  raw_data.clear();  // a walk that gave up may have gathered some
  out.Clear();
  return parse(bytes, out);
}

}  // namespace onyx::util
