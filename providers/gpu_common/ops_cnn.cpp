// ops_cnn.cpp: the rest of a CNN's inference path: BatchNormalization
// (inference), MaxPool/AveragePool (2-D) and their global forms.
#include "gpu_provider.h"
#include "op_util.h"

namespace onyx::gpu {
namespace {

using sdk::make_status;

class BatchNormKernel : public GpuKernel {
 public:
  BatchNormKernel(float epsilon, std::string name) : epsilon_(epsilon), name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), scale = ctx.in(1), bias = ctx.in(2), mean = ctx.in(3),
                var = ctx.in(4), y;
    if (x.rank() < 2)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': input needs rank >= 2", name_.c_str());
    int64_t channels = x.dim(1);
    for (const sdk::Tensor* t : {&scale, &bias, &mean, &var})
      if (t->size() != channels)
        return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                           "node '%s': per-channel inputs must have %lld elements", name_.c_str(),
                           (long long)channels);
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &y));
    int64_t spatial = channels ? x.size() / (x.dim(0) * channels) : 0;
    if (x.dim(0) == 0) return nullptr;
    return launch_status(
        launch_batch_norm(kernel_stream(ctx), x.data<float>(), scale.data<float>(), bias.data<float>(),
                          mean.data<float>(), var.data<float>(), epsilon_, y.data<float>(), x.dim(0),
                          channels, spatial),
        "launching batch normalization");
  }

 private:
  float epsilon_;
  std::string name_;
};

class PoolKernel : public GpuKernel {
 public:
  // global: the window is the whole plane.
  PoolKernel(const sdk::NodeInfo& n, bool max_pool, bool global)
      : window_(global ? Pool2dWindow{} : pool2d_attributes(n)), max_pool_(max_pool), global_(global),
        name_(n.name) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    if (x.rank() != 4)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': only 2-D pooling (4-D input) runs here",
                         name_.c_str());
    Pool2dShape s;
    if (std::string error = window_.complete(x.dim(2), x.dim(3), global_, &s); !error.empty())
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': %s", name_.c_str(), error.c_str());
    int64_t out_dims[4] = {x.dim(0), x.dim(1), s.out_height, s.out_width};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out_dims, &y));
    return launch_status(launch_pool2d(kernel_stream(ctx), s, max_pool_, x.data<float>(),
                                       y.data<float>(), x.dim(0) * x.dim(1)),
                         "launching pooling");
  }

 private:
  Pool2dWindow window_;
  bool max_pool_, global_;
  std::string name_;
};

std::string pool_supported(const sdk::NodeInfo& n) {
  if (n.outputs.size() > 1 && n.outputs[1].present) return "MaxPool's Indices output is not supported";
  if (n.get_int("storage_order", 0) != 0) return "storage_order=1 is not supported";
  return pool2d_supported(n, 0);
}

}  // namespace

void register_cnn_kernels(sdk::KernelRegistry& r) {
  r.add({"", "BatchNormalization", 9, 1 << 30,
         [](const sdk::NodeInfo& n) -> std::string {
           if (n.get_int("training_mode", 0) != 0) return "training_mode=1 is not supported";
           if (n.outputs.size() > 1) return "only the inference form (one output) is supported";
           return require_float32(n);
         },
         [](const sdk::NodeInfo& n) {
           return std::make_unique<BatchNormKernel>(float(n.get_float("epsilon", 1e-5)), n.name);
         }});
  r.add({"", "MaxPool", 8, 1 << 30, pool_supported,
         [](const sdk::NodeInfo& n) { return std::make_unique<PoolKernel>(n, true, false); }});
  r.add({"", "AveragePool", 7, 1 << 30, pool_supported,
         [](const sdk::NodeInfo& n) { return std::make_unique<PoolKernel>(n, false, false); }});
  auto global_supported = [](const sdk::NodeInfo& n) -> std::string {
    if (n.inputs[0].rank >= 0 && n.inputs[0].rank != 4) return "only 4-D input runs here";
    return require_float32(n);
  };
  r.add({"", "GlobalMaxPool", 1, 1 << 30, global_supported,
         [](const sdk::NodeInfo& n) { return std::make_unique<PoolKernel>(n, true, true); }});
  r.add({"", "GlobalAveragePool", 1, 1 << 30, global_supported,
         [](const sdk::NodeInfo& n) { return std::make_unique<PoolKernel>(n, false, true); }});
}

}  // namespace onyx::gpu
