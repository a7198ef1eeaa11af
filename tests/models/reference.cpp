// reference.cpp: float64 forward passes of the MLP and CNN, written as plain
// loops straight from the ONNX op definitions (Gemm, Conv with zero padding,
// inference BatchNormalization, Relu, MaxPool, Flatten), for checking the runtime.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "test_models.h"

namespace onyx::test_models {

namespace {

using Activations = std::vector<double>;

// y[b, o] = sum_i x[b, i] * W(i, o) + bias[o]
Activations dense(const Dense& d, const Activations& x, int64_t batch) {
  Activations y(size_t(batch * d.out));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t o = 0; o < d.out; ++o) {
      double sum = d.bias[size_t(o)];
      for (int64_t i = 0; i < d.in; ++i) sum += x[size_t(b * d.in + i)] * double(d.weight_at(i, o));
      y[size_t(b * d.out + o)] = sum;
    }
  return y;
}

void relu(Activations& x) {
  for (double& v : x) v = std::max(v, 0.0);
}

// x [batch, C, H, W] -> [batch, out_channels, H, W] (stride 1, "same" padding).
Activations conv2d(const Conv2d& c, const Activations& x, int64_t batch, int64_t height, int64_t width) {
  const int64_t k = c.kernel;
  Activations y(size_t(batch * c.out_channels * height * width));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t oc = 0; oc < c.out_channels; ++oc)
      for (int64_t oy = 0; oy < height; ++oy)
        for (int64_t ox = 0; ox < width; ++ox) {
          double sum = c.bias[size_t(oc)];
          for (int64_t ic = 0; ic < c.in_channels; ++ic)
            for (int64_t ky = 0; ky < k; ++ky)
              for (int64_t kx = 0; kx < k; ++kx) {
                int64_t iy = oy + ky - c.pad, ix = ox + kx - c.pad;
                if (iy < 0 || iy >= height || ix < 0 || ix >= width) continue;  // zero padding
                double xv = x[size_t(((b * c.in_channels + ic) * height + iy) * width + ix)];
                double wv = c.weight[size_t(((oc * c.in_channels + ic) * k + ky) * k + kx)];
                sum += xv * wv;
              }
          y[size_t(((b * c.out_channels + oc) * height + oy) * width + ox)] = sum;
        }
  return y;
}

void batch_norm(const BatchNorm& bn, Activations& x, int64_t batch, int64_t plane) {
  const int64_t channels = int64_t(bn.scale.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      double inv_std = 1.0 / std::sqrt(double(bn.var[size_t(c)]) + double(bn.epsilon));
      for (int64_t p = 0; p < plane; ++p) {
        double& v = x[size_t((b * channels + c) * plane + p)];
        v = (v - bn.mean[size_t(c)]) * inv_std * bn.scale[size_t(c)] + bn.bias[size_t(c)];
      }
    }
}

// 2x2 max pooling, stride 2, over [batch, channels, H, W] (H and W even).
Activations max_pool2(const Activations& x, int64_t batch, int64_t channels, int64_t height, int64_t width) {
  const int64_t oh = height / 2, ow = width / 2;
  Activations y(size_t(batch * channels * oh * ow));
  for (int64_t bc = 0; bc < batch * channels; ++bc)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t dy = 0; dy < 2; ++dy)
          for (int64_t dx = 0; dx < 2; ++dx)
            m = std::max(m, x[size_t((bc * height + 2 * oy + dy) * width + 2 * ox + dx)]);
        y[size_t((bc * oh + oy) * ow + ox)] = m;
      }
  return y;
}

Activations widen(std::span<const float> x, int64_t batch, int64_t per_sample) {
  if (batch < 0 || x.size() != size_t(batch * per_sample))
    throw std::invalid_argument("reference input holds " + std::to_string(x.size()) + " values, expected " +
                                std::to_string(batch * per_sample));
  return Activations(x.begin(), x.end());
}

}  // namespace

std::vector<double> mlp_reference(const MlpWeights& w, std::span<const float> x, int64_t batch) {
  Activations h = dense(w.fc1, widen(x, batch, w.fc1.in), batch);
  relu(h);
  h = dense(w.fc2, h, batch);
  relu(h);
  return dense(w.fc3, h, batch);
}

std::vector<double> cnn_reference(const CnnWeights& w, std::span<const float> x, int64_t batch) {
  Activations h = conv2d(w.conv1, widen(x, batch, 28 * 28), batch, 28, 28);
  batch_norm(w.bn1, h, batch, 28 * 28);
  relu(h);
  h = max_pool2(h, batch, w.conv1.out_channels, 28, 28);
  h = conv2d(w.conv2, h, batch, 14, 14);
  batch_norm(w.bn2, h, batch, 14 * 14);
  relu(h);
  h = max_pool2(h, batch, w.conv2.out_channels, 14, 14);  // [batch, 16, 7, 7] = Flatten's [batch, 784]
  h = dense(w.fc1, h, batch);
  relu(h);
  return dense(w.fc2, h, batch);
}

}  // namespace onyx::test_models
