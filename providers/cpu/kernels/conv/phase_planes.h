// phase_planes.h: a 2-D (or 1-D) input plane, padded and split by stride,
// so that every tap of a convolution window is a fixed offset. Shared by
// the depthwise loops (float Conv, int8 QLinearConv/ConvInteger) and the int8
// convolutions' GEMM, which reads its B rows from these planes instead of an
// im2col matrix.
//
// The padded plane is split into sy x sx phase planes of hq x wq: phase
// (py, px) holds the padded pixels (sy * r + py, sx * c + px). Tap (ky, kx)
// of output (oy, ox) is then element oy * wq + ox + offsets[ky * kw + kx] of
// a channel's block of phases: a window is a set of fixed offsets over a
// grid of out_h x wq positions, whose columns past out_w are dropped. With
// stride 1 there is one phase: the padded plane itself.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/elementwise/vec_math.h"
#include "kernels/nn_util.h"

namespace onyx::cpu::conv {

struct PhasePlanes {
  int64_t sy = 1, sx = 1, hq = 0, wq = 0, phase = 0, block = 0;  // block 0: not 2-D (3-D windows)
  int64_t top = 0, out_h = 0;
  int64_t slack = 0;  // the last tap of the grid's last (dropped) column reads this far past a block
  struct Columns {    // the input columns of one column phase: first, how many, where in a phase row
    int64_t first, count, at;
  };
  std::vector<Columns> columns;
  std::vector<int64_t> offsets;  // per tap, (ky, kx) row-major

  // dims: depth, height, width (nn::lift_to_3d); depth must be trivial.
  static PhasePlanes of(const std::vector<nn::WindowDim>& dims) {
    PhasePlanes ph;
    if (dims[0].kernel != 1 || dims[0].in != 1 || dims[0].out != 1) return ph;
    const nn::WindowDim &h = dims[1], &w = dims[2];
    const int64_t hp = std::max(h.in + h.pad_begin, (h.out - 1) * h.stride + h.extent()),
                  wp = std::max(w.in + w.pad_begin, (w.out - 1) * w.stride + w.extent());
    ph.sy = h.stride, ph.sx = w.stride, ph.hq = (hp + ph.sy - 1) / ph.sy, ph.wq = (wp + ph.sx - 1) / ph.sx;
    ph.phase = ph.hq * ph.wq, ph.block = ph.sy * ph.sx * ph.phase;
    ph.top = h.pad_begin, ph.out_h = h.out;
    ph.slack = (w.kernel - 1) * w.dilation / ph.sx;
    for (int64_t px = 0; px < ph.sx; ++px) {
      const int64_t first = ((px - w.pad_begin) % ph.sx + ph.sx) % ph.sx;
      if (first < w.in)
        ph.columns.push_back({first, (w.in - first + ph.sx - 1) / ph.sx, px * ph.phase + (first + w.pad_begin) / ph.sx});
    }
    for (int64_t ky = 0; ky < h.kernel; ++ky)
      for (int64_t kx = 0; kx < w.kernel; ++kx) {
        const int64_t yy = ky * h.dilation, xx = kx * w.dilation;
        ph.offsets.push_back(((yy % ph.sy) * ph.sx + xx % ph.sx) * ph.phase + (yy / ph.sy) * ph.wq + xx / ph.sx);
      }
    return ph;
  }

  // Where input row iy's pixels go in a block (add a Columns' at).
  int64_t row_at(int64_t iy) const {
    const int64_t yy = iy + top;
    return (yy % sy) * sx * phase + (yy / sy) * wq;
  }
  int64_t grid() const { return out_h * wq; }

  // One input row (in_w values) into its phase rows (row: row_at's place in
  // a block), each value through convert. Stride 2 splits even and odd
  // columns in one pass (a loop the compiler vectorizes); other strides take
  // each phase's columns in turn.
  template <typename In, typename Out, typename Convert>
  void place_row(const In* src, int64_t in_w, Out* row, Convert convert) const {
    if (sx == 2 && columns.size() == 2) {
      const bool even_first = columns[0].first == 0;
      Out* even = row + columns[even_first ? 0 : 1].at;
      Out* odd = row + columns[even_first ? 1 : 0].at;
      const int64_t pairs = in_w / 2;
      for (int64_t i = 0; i < pairs; ++i) {
        const Out a = convert(src[2 * i]), b = convert(src[2 * i + 1]);
        even[i] = a, odd[i] = b;
      }
      if (in_w % 2) even[pairs] = convert(src[in_w - 1]);
      return;
    }
    for (const Columns& col : columns) {
      Out* dst = row + col.at;
      const In* from = src + col.first;
      if (sx == 1)
        for (int64_t i = 0; i < col.count; ++i) dst[i] = convert(from[i]);
      else
        for (int64_t i = 0; i < col.count; ++i) dst[i] = convert(from[i * sx]);
    }
  }

  // A whole in_h x in_w float plane into its places in a block (rows[iy]:
  // row_at(iy)), as vector copies: rows whole for stride 1, each column
  // phase's strided elements otherwise.
  void place_plane(const float* x, int64_t in_h, int64_t in_w, const int64_t* rows, float* block) const {
    if (sy == 1 && sx == 1 && columns.size() == 1)
      return vec::copy_rows(block + rows[0] + columns[0].at, wq, x, in_w, in_h, in_w);
    for (int64_t iy = 0; iy < in_h; ++iy)
      for (const Columns& c : columns) vec::copy_strided(x + iy * in_w + c.first, sx, c.count, block + rows[iy] + c.at);
  }

  // A buffer of `size` floats (at least block + slack) of the calling
  // thread, kept across calls, whose padding is zero for this geometry of an
  // in_h x in_w input: place_row writes only the interior, the same places
  // for every channel, so the zeroing happens once per thread and geometry
  // (on 7 x 7 planes, zeroing each channel's and finding its rows with
  // divisions cost a third of a depthwise layer). Valid until the thread's
  // next call; not for nested use.
  float* zero_padded_buffer(int64_t size, int64_t in_h, int64_t in_w) const {
    thread_local std::vector<float> buffer;  // grown only
    thread_local std::vector<int64_t> zeroed_for;  // the geometry whose padding `buffer` holds
    std::vector<int64_t> geometry = {size, wq, hq, sx, sy, top, in_h, in_w};
    for (const Columns& c : columns) geometry.insert(geometry.end(), {c.first, c.count, c.at});
    if (buffer.size() < size_t(size)) buffer.resize(size_t(size)), zeroed_for.clear();
    if (zeroed_for != geometry) {
      std::fill(buffer.begin(), buffer.begin() + size, 0.0f);
      zeroed_for = geometry;
    }
    return buffer.data();
  }
};

}  // namespace onyx::cpu::conv
