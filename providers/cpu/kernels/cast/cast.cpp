// cast.cpp: Cast and CastLike between every pair of numeric types, bool,
// float16, bfloat16 and float64, and to and from the narrow types (float8,
// float8e8m0, float4, 4-bit and 2-bit integers). String and complex types
// are declined with the reason.
//
// Conversions follow numpy: to bool is "!= 0" (NaN is true); float to
// integer truncates toward zero through int64 and wraps into narrower
// types; NaN becomes 0 and values beyond int64 saturate (C++ leaves those
// undefined); float16/bfloat16 go through float32, rounding to nearest even.
#include <cmath>

#include "kernels/narrow_types.h"
#include "kernels/registry.h"
#include "kernels/shape/shape_util.h"

namespace onyx::cpu {
namespace {

constexpr unsigned kCastable = util::kNumeric | util::kBool | util::kHalf;

template <typename D>
D float_to_int(double v) {
  if (std::isnan(v)) return D(0);
  if (v >= 0x1p63) {
    if constexpr (std::is_same_v<D, uint64_t>) return v >= 0x1p64 ? UINT64_MAX : uint64_t(v);
    else return D(INT64_MAX);
  }
  if (v < -0x1p63) return D(INT64_MIN);
  return D(int64_t(v));
}

template <typename S, typename D>
D convert(S v) {
  if constexpr (std::is_same_v<D, bool>) return v != S(0);
  else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<S>) return float_to_int<D>(double(v));
  else return D(v);
}

// Why a cast between these types is declined, or "".
std::string cast_support(int32_t from, int32_t to) {
  for (auto [dtype, side] : {std::pair{from, "from"}, std::pair{to, "to"}}) {
    if (util::in_set(dtype, kCastable) || narrow::is_narrow(dtype)) continue;
    return std::string("Cast ") + side + " " + sdk::dtype_name(dtype) + " not implemented";
  }
  return {};
}

// ONNX type names as Cast-1 spells its string attribute `to`.
int32_t dtype_from_name(const std::string& name) {
  static const std::pair<const char*, int32_t> names[] = {
      {"FLOAT", ONYX_DTYPE_FLOAT32}, {"UINT8", ONYX_DTYPE_UINT8},     {"INT8", ONYX_DTYPE_INT8},
      {"UINT16", ONYX_DTYPE_UINT16}, {"INT16", ONYX_DTYPE_INT16},     {"INT32", ONYX_DTYPE_INT32},
      {"INT64", ONYX_DTYPE_INT64},   {"STRING", ONYX_DTYPE_STRING},   {"BOOL", ONYX_DTYPE_BOOL},
      {"FLOAT16", ONYX_DTYPE_FLOAT16}, {"DOUBLE", ONYX_DTYPE_FLOAT64}, {"UINT32", ONYX_DTYPE_UINT32},
      {"UINT64", ONYX_DTYPE_UINT64}, {"COMPLEX64", ONYX_DTYPE_COMPLEX64},
      {"COMPLEX128", ONYX_DTYPE_COMPLEX128}, {"BFLOAT16", ONYX_DTYPE_BFLOAT16},
      {"FLOAT8E4M3FN", ONYX_DTYPE_FLOAT8E4M3FN}, {"FLOAT8E4M3FNUZ", ONYX_DTYPE_FLOAT8E4M3FNUZ},
      {"FLOAT8E5M2", ONYX_DTYPE_FLOAT8E5M2}, {"FLOAT8E5M2FNUZ", ONYX_DTYPE_FLOAT8E5M2FNUZ},
      {"UINT4", ONYX_DTYPE_UINT4}, {"INT4", ONYX_DTYPE_INT4}, {"FLOAT4E2M1", ONYX_DTYPE_FLOAT4E2M1},
      {"FLOAT8E8M0", ONYX_DTYPE_FLOAT8E8M0}, {"UINT2", ONYX_DTYPE_UINT2}, {"INT2", ONYX_DTYPE_INT2}};
  for (auto [n, dtype] : names)
    if (name == n) return dtype;
  return ONYX_DTYPE_UNDEFINED;
}

int32_t target_type(const sdk::NodeInfo& node, bool like) {
  if (like) return node.input_dtype(1);
  const sdk::Attribute* to = node.attr("to");
  if (!to) return ONYX_DTYPE_UNDEFINED;
  return to->type == ONYX_ATTR_STRING ? dtype_from_name(to->s) : int32_t(to->i);
}

// Converts elements [begin, end) of x into y (types checked by cast_support).
void convert_range(const sdk::Tensor& x, const sdk::Tensor& y, size_t begin, size_t end) {
  int32_t to = y.dtype;
  // Writes element i from a value of type S.
  auto store = [&](auto v, size_t i) {
    using S = decltype(v);
    if (util::is_half(to)) {
      y.data<uint16_t>()[i] = util::half_bits(to, convert<S, float>(v));
      return;
    }
    util::visit<util::kNumeric | util::kBool>(to, [&](auto tag) {
      using D = decltype(tag);
      y.data<D>()[i] = convert<S, D>(v);
    });
  };
  if (util::is_half(x.dtype)) {
    for (size_t i = begin; i < end; ++i) store(util::half_value(x.dtype, x.data<uint16_t>()[i]), i);
    return;
  }
  util::visit<util::kNumeric | util::kBool>(x.dtype, [&](auto stag) {
    using S = decltype(stag);
    const S* xp = x.data<S>();
    if (util::is_half(to)) {
      for (size_t i = begin; i < end; ++i) y.data<uint16_t>()[i] = util::half_bits(to, convert<S, float>(xp[i]));
      return;
    }
    // One tight loop per (S, D) pair so that the compiler can vectorise it.
    util::visit<util::kNumeric | util::kBool>(to, [&](auto dtag) {
      using D = decltype(dtag);
      D* yp = y.data<D>();
      for (size_t i = begin; i < end; ++i) yp[i] = convert<S, D>(xp[i]);
    });
  });
}

class CastKernel final : public sdk::Kernel {
 public:
  CastKernel(const sdk::NodeInfo& node, bool like)
      : label_(util::node_label(node)),
        to_(target_type(node, like)),
        saturate_(node.get_int("saturate", 1) != 0) {
    narrow::parse_e8m0_round(node.get_string("round_mode", "up"), &round_);  // checked at claim time
    same_size_ = sdk::dtype_size(node.input_dtype(0)) == sdk::dtype_size(to_) &&
                 !narrow::is_narrow(node.input_dtype(0)) && !narrow::is_narrow(to_);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::string why = cast_support(x.dtype, to_);
    if (!why.empty()) return util::fail(label_, "%s", why.c_str());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, to_, x.dims, &y));
    if (x.dtype == to_) {
      size_t bytes = onyx_dtype_storage_bytes(x.dtype, x.size());
      util::parallel_copy(ctx, y.raw, x.raw, bytes);
      return nullptr;
    }
    if (narrow::is_narrow(x.dtype) || narrow::is_narrow(to_)) {
      // One thread: packed stores share bytes. The padding bits are 0.
      if (!sdk::dtype_size(to_)) std::memset(y.raw, 0, onyx_dtype_storage_bytes(to_, x.size()));
      for (int64_t i = 0; i < x.size(); ++i)
        narrow::store(to_, y.raw, i, narrow::load(x.dtype, x.raw, i), saturate_, round_);
      return nullptr;
    }
    ctx.parallel_for(size_t(x.size()), util::kGrain,
                     [&](size_t begin, size_t end) { convert_range(x, y, begin, end); });
    return nullptr;
  }

  // Element i is read before it is written, so equal element sizes allow
  // the output to take the input's buffer.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (same_size_) util::output0_may_overwrite_input(out);
  }

 private:
  std::string label_;
  int32_t to_;
  bool saturate_;
  narrow::E8m0Round round_ = narrow::E8m0Round::kUp;
  bool same_size_ = false;
};

}  // namespace

void register_cast_kernels(sdk::KernelRegistry& registry) {
  for (bool like : {false, true})  // Cast, and CastLike (target type: input 1's)
    registry.add(sdk::KernelDefBuilder(like ? "CastLike" : "Cast")
                     .since(like ? 15 : 1)
                     .inputs(like ? 2 : 1)
                     .check([like](const sdk::NodeInfo& node) {
                       int32_t to = target_type(node, like);
                       if (to == ONYX_DTYPE_UNDEFINED)
                         return node.op_type + ": the target type (attribute to) is missing or unknown";
                       narrow::E8m0Round round;
                       std::string mode = node.get_string("round_mode", "up");
                       if (!narrow::parse_e8m0_round(mode, &round))
                         return node.op_type + ": round_mode '" + mode + "' is not up, down or nearest";
                       return cast_support(node.input_dtype(0), to);
                     })
                     .create([like](const sdk::NodeInfo& node) { return std::make_unique<CastKernel>(node, like); }));
}

}  // namespace onyx::cpu
