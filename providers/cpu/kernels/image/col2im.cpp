// col2im.cpp: Col2Im (opset 18): column blocks summed back into an image,
// the inverse layout of im2col. Float math in double.
#include <cinttypes>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

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
          int64_t row = ch * block_size + util::row_major_index(kpos, block);
          std::fill(bpos.begin(), bpos.end(), 0);
          int64_t col = 0;
          do {
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              pixel[d] = bpos[d] * str[d] - pads[d] + kpos[d] * dil[d];
              inside &= pixel[d] >= 0 && pixel[d] < image[d];
            }
            if (inside && col < l)
              acc[size_t((b * c + ch) * image_size + util::row_major_index(pixel, image))] +=
                  narrow::load(x.dtype, x.raw, (b * x.dim(1) + row) * l + col);
            ++col;
          } while (util::next_row_major(bpos, blocks_per_dim));
        } while (util::next_row_major(kpos, block));
      }
    for (size_t i = 0; i < acc.size(); ++i) narrow::store(y.dtype, y.raw, int64_t(i), acc[i], true);
    return nullptr;
  }

 private:
  std::string label_;
  std::vector<int64_t> dilations_, pads_, strides_;
};

}  // namespace

void register_col2im_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("Col2Im").since(18).input_type(0, sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<Col2ImKernel>());
}

}  // namespace onyx::cpu
