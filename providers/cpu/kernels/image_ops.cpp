// image_ops.cpp: CenterCropPad (18), Col2Im (18), AffineGrid (20) and
// RotaryEmbedding (23). Float math in double.
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "kernels/extra_ops.h"
#include "kernels/narrow_types.h"

namespace onyx::cpu {
namespace {

// Row-major index of `pos` in `dims`.
int64_t flat(const std::vector<int64_t>& pos, const std::vector<int64_t>& dims) {
  int64_t i = 0;
  for (size_t d = 0; d < dims.size(); ++d) i = i * dims[d] + pos[d];
  return i;
}

// Advances `pos` through `dims` in row-major order; false after the last.
bool next(std::vector<int64_t>& pos, const std::vector<int64_t>& dims) {
  for (size_t d = dims.size(); d-- > 0;) {
    if (++pos[d] < dims[d]) return true;
    pos[d] = 0;
  }
  return false;
}

// CenterCropPad: each listed axis is center-cropped or zero-padded to the
// requested size, starting at |size - target| / 2 (the odd element goes to
// the end either way).
class CenterCropPadKernel final : public sdk::Kernel {
 public:
  explicit CenterCropPadKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axes_(node.get_ints("axes")) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> shape, axes = axes_;
    if (!util::read_ints(ctx.in(1), &shape)) return util::fail(label_, "shape must be int64");
    const int64_t rank = int64_t(x.rank());
    if (axes.empty())
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    if (axes.size() != shape.size()) return util::fail(label_, "%zu sizes for %zu axes", shape.size(), axes.size());
    std::vector<int64_t> in(x.dims.begin(), x.dims.end()), out = in, offset(size_t(rank), 0);
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t a = 0;
      if (!util::normalize_axis(axes[k], rank, &a)) return util::fail(label_, "axis %" PRId64 " is out of range", axes[k]);
      out[size_t(a)] = shape[k];
      // Source index = output index + offset: > 0 crops, < 0 pads.
      offset[size_t(a)] = shape[k] <= in[size_t(a)] ? (in[size_t(a)] - shape[k]) / 2 : -((shape[k] - in[size_t(a)]) / 2);
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out, &y));
    const size_t es = sdk::dtype_size(x.dtype);
    if (y.size() == 0) return nullptr;
    std::memset(y.raw, 0, size_t(y.size()) * es);
    std::vector<int64_t> pos(static_cast<size_t>(rank), 0), src(static_cast<size_t>(rank));
    do {
      bool inside = true;
      for (size_t d = 0; d < size_t(rank); ++d) {
        src[d] = pos[d] + offset[d];
        inside &= src[d] >= 0 && src[d] < in[d];
      }
      if (inside)
        std::memcpy(static_cast<unsigned char*>(y.raw) + size_t(flat(pos, out)) * es,
                    static_cast<const unsigned char*>(x.raw) + size_t(flat(src, in)) * es, es);
    } while (next(pos, out));
    return nullptr;
  }

 private:
  std::string label_;
  std::vector<int64_t> axes_;
};

// Col2Im: sums the columns [N, C * prod(block), L] back into an image
// [N, C, image...] (the inverse layout of im2col, overlaps added).
class Col2ImKernel final : public sdk::Kernel {
 public:
  explicit Col2ImKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        dilations_(node.get_ints("dilations")),
        pads_(node.get_ints("pads")),
        strides_(node.get_ints("strides")) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> image, block;
    if (!util::read_ints(ctx.in(1), &image) || !util::read_ints(ctx.in(2), &block) || image.size() != block.size())
      return util::fail(label_, "image_shape and block_shape must be int64 of one length");
    const size_t r = image.size();
    std::vector<int64_t> dil = dilations_.empty() ? std::vector<int64_t>(r, 1) : dilations_;
    std::vector<int64_t> str = strides_.empty() ? std::vector<int64_t>(r, 1) : strides_;
    std::vector<int64_t> pads = pads_.empty() ? std::vector<int64_t>(2 * r, 0) : pads_;
    if (dil.size() != r || str.size() != r || pads.size() != 2 * r)
      return util::fail(label_, "dilations, strides and pads must match the %zu spatial dims", r);
    int64_t block_size = 1;
    std::vector<int64_t> blocks_per_dim(r);
    for (size_t d = 0; d < r; ++d) {
      block_size *= block[d];
      blocks_per_dim[d] = (image[d] + pads[d] + pads[r + d] - dil[d] * (block[d] - 1) - 1) / str[d] + 1;
    }
    if (x.rank() != 3 || x.dim(1) % block_size)
      return util::fail(label_, "input %s is not [N, C * %" PRId64 ", L]", util::dims_str(x.dims).c_str(), block_size);
    const int64_t n = x.dim(0), c = x.dim(1) / block_size, l = x.dim(2);
    std::vector<int64_t> y_dims{n, c};
    int64_t image_size = 1;
    for (int64_t d : image) y_dims.push_back(d), image_size *= d;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, y_dims, &y));
    std::vector<double> acc(size_t(n * c * image_size), 0.0);
    std::vector<int64_t> kpos(r, 0), bpos(r, 0), pixel(r);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch) {
        std::fill(kpos.begin(), kpos.end(), 0);
        do {
          int64_t row = ch * block_size + flat(kpos, block);
          std::fill(bpos.begin(), bpos.end(), 0);
          int64_t col = 0;
          do {
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              pixel[d] = bpos[d] * str[d] - pads[d] + kpos[d] * dil[d];
              inside &= pixel[d] >= 0 && pixel[d] < image[d];
            }
            if (inside && col < l)
              acc[size_t((b * c + ch) * image_size + flat(pixel, image))] +=
                  narrow::load(x.dtype, x.raw, (b * x.dim(1) + row) * l + col);
            ++col;
          } while (next(bpos, blocks_per_dim));
        } while (next(kpos, block));
      }
    for (size_t i = 0; i < acc.size(); ++i) narrow::store(y.dtype, y.raw, int64_t(i), acc[i], true);
    return nullptr;
  }

 private:
  std::string label_;
  std::vector<int64_t> dilations_, pads_, strides_;
};

// AffineGrid: theta [N, 2, 3] (or [N, 3, 4]) applied to the normalized
// coordinates of an output of size (N, C, H, W) (or (N, C, D, H, W)):
// grid [N, H, W, 2] (or [N, D, H, W, 3]) in (x, y[, z]) order.
class AffineGridKernel final : public sdk::Kernel {
 public:
  explicit AffineGridKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), align_(node.get_int("align_corners", 0) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor theta = ctx.in(0);
    std::vector<int64_t> size;
    if (!util::read_ints(ctx.in(1), &size) || (size.size() != 4 && size.size() != 5))
      return util::fail(label_, "size must hold 4 or 5 int64 values");
    const size_t r = size.size() - 2;
    const int64_t n = size[0];
    if (theta.rank() != 3 || theta.dim(0) != n || theta.dim(1) != int64_t(r) || theta.dim(2) != int64_t(r) + 1)
      return util::fail(label_, "theta %s does not fit size (expected [N, %zu, %zu])", util::dims_str(theta.dims).c_str(), r, r + 1);
    std::vector<int64_t> spatial(size.begin() + 2, size.end()), dims{n};
    for (int64_t d : spatial) dims.push_back(d);
    dims.push_back(int64_t(r));
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, theta.dtype, dims, &y));
    auto coord = [&](int64_t i, int64_t len) {
      if (len <= 1) return 0.0;
      return align_ ? -1.0 + 2.0 * double(i) / double(len - 1) : (2.0 * double(i) + 1.0) / double(len) - 1.0;
    };
    int64_t out = 0;
    std::vector<int64_t> pos(r, 0);
    for (int64_t b = 0; b < n; ++b) {
      std::fill(pos.begin(), pos.end(), 0);
      do {
        // Homogeneous input (x, y[, z], 1): x follows the last spatial dim.
        std::vector<double> in(r + 1, 1.0);
        for (size_t k = 0; k < r; ++k) in[k] = coord(pos[r - 1 - k], spatial[r - 1 - k]);
        for (size_t row = 0; row < r; ++row) {
          double v = 0;
          for (size_t k = 0; k <= r; ++k)
            v += narrow::load(theta.dtype, theta.raw, (b * int64_t(r) + int64_t(row)) * int64_t(r + 1) + int64_t(k)) * in[k];
          narrow::store(y.dtype, y.raw, out++, v, true);
        }
      } while (next(pos, spatial));
    }
    return nullptr;
  }

 private:
  std::string label_;
  bool align_;
};

// RotaryEmbedding: rotates the first rotary_dim features of each head by the
// cached cos/sin of its position, halves (x1 | x2) or interleaved pairs.
class RotaryKernel final : public sdk::Kernel {
 public:
  explicit RotaryKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        interleaved_(node.get_int("interleaved", 0) != 0),
        rotary_dim_(node.get_int("rotary_embedding_dim", 0)),
        heads_(node.get_int("num_heads", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), cos_t = ctx.in(1), sin_t = ctx.in(2);
    std::optional<sdk::Tensor> ids = ctx.input(3);
    if (x.rank() != 3 && x.rank() != 4) return util::fail(label_, "input must be 3-D or 4-D");
    const int64_t batch = x.dim(0);
    int64_t heads, seq, size;
    const bool packed = x.rank() == 3;  // [B, S, heads * size]
    if (packed) {
      heads = heads_, seq = x.dim(1);
      if (heads <= 0 || x.dim(2) % heads) return util::fail(label_, "3-D input needs num_heads dividing its hidden size");
      size = x.dim(2) / heads;
    } else {
      heads = x.dim(1), seq = x.dim(2), size = x.dim(3);
    }
    const int64_t rot = rotary_dim_ > 0 ? rotary_dim_ : size, half = rot / 2;
    if (rot > size || rot % 2) return util::fail(label_, "rotary_embedding_dim %" PRId64 " does not fit head size %" PRId64, rot, size);
    std::vector<int64_t> pos_ids;
    if (ids && !util::read_ints(*ids, &pos_ids)) return util::fail(label_, "position_ids must be int64");
    const int64_t cache_width = cos_t.dim(cos_t.rank() - 1);
    if (cache_width < half) return util::fail(label_, "cos_cache is narrower than rotary_dim / 2");
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t s = 0; s < seq; ++s) {
          const int64_t base = packed ? ((b * seq + s) * heads + h) * size : ((b * heads + h) * seq + s) * size;
          // Row of the cache: the position id, or (b, s) when there are none.
          int64_t row = ids ? pos_ids[size_t(ids->rank() == 1 ? s : b * seq + s)] : b * seq + s;
          for (int64_t k = 0; k < size; ++k)
            if (k >= rot) narrow::store(y.dtype, y.raw, base + k, narrow::load(x.dtype, x.raw, base + k), true);
          for (int64_t k = 0; k < half; ++k) {
            double c = narrow::load(cos_t.dtype, cos_t.raw, row * cache_width + k);
            double sn = narrow::load(sin_t.dtype, sin_t.raw, row * cache_width + k);
            int64_t i1 = interleaved_ ? 2 * k : k, i2 = interleaved_ ? 2 * k + 1 : k + half;
            double x1 = narrow::load(x.dtype, x.raw, base + i1), x2 = narrow::load(x.dtype, x.raw, base + i2);
            narrow::store(y.dtype, y.raw, base + i1, x1 * c - x2 * sn, true);
            narrow::store(y.dtype, y.raw, base + i2, x2 * c + x1 * sn, true);
          }
        }
    return nullptr;
  }

 private:
  std::string label_;
  bool interleaved_;
  int64_t rotary_dim_, heads_;
};

sdk::KernelDef def_of(const char* op, int64_t since, std::function<std::string(const sdk::NodeInfo&)> supports,
                      std::function<std::unique_ptr<sdk::Kernel>(const sdk::NodeInfo&)> create) {
  sdk::KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.supports = std::move(supports);
  def.create = std::move(create);
  return def;
}

}  // namespace

void register_image_kernels(sdk::KernelRegistry& registry) {
  auto floats0 = [](const sdk::NodeInfo& n) { return util::require_types(n, util::kFloat | util::kHalf, {0}); };
  registry.add(def_of(
      "CenterCropPad", 18,
      [](const sdk::NodeInfo& n) {
        return sdk::dtype_size(n.input_dtype(0)) ? std::string() : std::string("element type has no fixed size");
      },
      [](const sdk::NodeInfo& n) { return std::make_unique<CenterCropPadKernel>(n); }));
  registry.add(def_of("Col2Im", 18, floats0, [](const sdk::NodeInfo& n) { return std::make_unique<Col2ImKernel>(n); }));
  registry.add(def_of("AffineGrid", 20, floats0, [](const sdk::NodeInfo& n) { return std::make_unique<AffineGridKernel>(n); }));
  registry.add(def_of("RotaryEmbedding", 23, floats0, [](const sdk::NodeInfo& n) { return std::make_unique<RotaryKernel>(n); }));
}

}  // namespace onyx::cpu
