#include "training/sharded_optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/onnx_import.h"
#include "onyx/checkpoint_tools.h"
#include "training/optimizer_model.h"

namespace onyx::runtime::training {
namespace {

std::string part_name(size_t k) { return "zero_part_" + std::to_string(k); }

Tensor scalar(float v) {
  Tensor t = Tensor::allocate(ONYX_DTYPE_FLOAT32, {});
  *t.data_as<float>() = v;
  return t;
}

// Bucket j of a slice of S elements: elements [j*c, min((j+1)*c, S)).
struct Buckets {
  size_t slice, per_bucket;
  size_t count() const { return slice == 0 ? 0 : (slice + per_bucket - 1) / per_bucket; }
  size_t begin(size_t j) const { return j * per_bucket; }
  size_t size(size_t j) const { return std::min(per_bucket, slice - begin(j)); }
};

}  // namespace

StatusOr<std::unique_ptr<ShardedOptimizer>> ShardedOptimizer::create(
    ProviderRegistry& registry, const SessionOptions& options, std::shared_ptr<Communicator> comm,
    const OptimizerDescription& optimizer, const std::vector<ParameterGroup>& groups,
    const std::vector<size_t>& parameter_groups, const std::vector<checkpoint::TensorRecord>& trainable,
    const checkpoint::OptimizerGroup* state, size_t bucket_bytes) {
  if (optimizer.name == "lamb")
    return unimplemented("ZeRO stage 1 with lamb: its trust ratio needs each parameter whole; use "
                         "plain data parallelism (zero stage 0)");
  std::unique_ptr<ShardedOptimizer> z(new ShardedOptimizer());
  z->comm_ = std::move(comm);
  const size_t n = size_t(z->comm_->size()), rank = size_t(z->comm_->rank());
  for (const auto& p : trainable) {
    if (p.dtype != ONYX_DTYPE_FLOAT32)
      return unimplemented("ZeRO stage 1 of " + std::string(dtype_name(p.dtype)) + " parameter '" + p.name + "'");
    z->param_offset_.push_back(z->total_);
    z->total_ += size_t(element_count(p.shape));
  }
  // The checkpoint's shard layout (checkpoint_tools.h), so that a rank's
  // state is exactly its shard's.
  z->slice_ = size_t(checkpoint::shard_piece(int64_t(z->total_), uint32_t(n)));
  z->padded_ = z->slice_ * n;
  z->bucket_elements_ = bucket_bytes == 0 ? z->slice_ : std::max<size_t>(1, bucket_bytes / sizeof(float) / n);

  // This rank's parts: the parameters' ranges that meet [rank*S, (rank+1)*S).
  const size_t lo = rank * z->slice_, hi = lo + z->slice_;
  std::vector<OptimizerParameter> model_params;
  for (size_t k = 0; k < trainable.size(); ++k) {
    size_t begin = z->param_offset_[k], end = begin + size_t(element_count(trainable[k].shape));
    size_t a = std::max(begin, lo), b = std::min(end, hi);
    if (a >= b) continue;
    z->parts_.push_back({k, a - begin, b - a, a - lo});
    size_t group = k < parameter_groups.size() ? parameter_groups[k] : 0;
    model_params.push_back({part_name(z->parts_.size() - 1), ONYX_DTYPE_FLOAT32, {int64_t(b - a)}, group});
  }

  if (state && state->parameters.size() != trainable.size())
    return invalid_argument("checkpoint optimizer group '" + state->name + "' holds state for " +
                            std::to_string(state->parameters.size()) + " parameters, the model trains " +
                            std::to_string(trainable.size()));
  for (const auto& slot : optimizer.slots) z->slot_names_.push_back(slot.name);
  for (const auto& h : optimizer.hyperparameters) z->hyper_names_.push_back(h.name);
  for (const Part& part : z->parts_) {
    std::vector<Tensor> slots;
    for (size_t s = 0; s < optimizer.slots.size(); ++s) {
      Tensor t = Tensor::allocate(ONYX_DTYPE_FLOAT32, {int64_t(part.length)});
      float* out = t.data_as<float>();
      const Tensor* saved = nullptr;
      if (state) {
        const auto& ps = state->parameters[part.parameter];
        if (ps.parameter != trainable[part.parameter].name || s >= ps.tensors.size() ||
            ps.tensors[s].name != optimizer.slots[s].name || !ps.tensors[s].has_data() ||
            ps.tensors[s].shape != trainable[part.parameter].shape)
          return invalid_argument("checkpoint optimizer state of '" + trainable[part.parameter].name +
                                  "' does not match the optimizer's slot '" + optimizer.slots[s].name + "'");
        saved = &ps.tensors[s].data;
      }
      if (saved)
        std::memcpy(out, saved->data_as<float>() + part.first, part.length * sizeof(float));
      else
        std::fill_n(out, part.length, optimizer.slots[s].initial_value);
      slots.push_back(std::move(t));
    }
    z->slots_.push_back(std::move(slots));
  }

  if (!model_params.empty()) {
    ONYX_ASSIGN_OR_RETURN(ONNX_NAMESPACE::ModelProto proto, build_optimizer_model(optimizer, model_params, groups));
    z->group_inputs_ = group_override_inputs(groups);
    std::string bytes = proto.SerializeAsString();
    auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
    if (!model.ok()) return model.status().with_context("ZeRO optimizer model");
    auto session = Session::create(registry, std::move(model).value(), options);
    if (!session.ok()) return session.status().with_context("ZeRO optimizer model");
    z->model_ = std::move(session).value();
  }
  z->flat_.resize(z->padded_);
  z->slice_grad_.resize(z->slice_);
  z->slice_param_.resize(z->slice_);
  return z;
}

size_t ShardedOptimizer::state_bytes() const {
  size_t bytes = 0;
  for (const auto& slots : slots_)
    for (const Tensor& t : slots) bytes += t.bytes();
  return bytes;
}

Status ShardedOptimizer::step(const std::vector<Tensor>& grads, std::vector<checkpoint::TensorRecord>& trainable,
                              float lr, int64_t step, float max_grad_norm, const std::vector<float>& hyperparameters,
                              float* grad_norm, bool* skipped) {
  *skipped = false;
  const size_t n = size_t(comm_->size()), rank = size_t(comm_->rank());
  const Buckets buckets{slice_, bucket_elements_};
  const std::string label = "step " + std::to_string(step);

  // 1. Pack the gradients bucket-major: bucket j holds, rank by rank, the
  // j-th piece of every rank's slice, so one reduce-scatter per bucket.
  std::fill(flat_.begin(), flat_.end(), 0.0f);
  auto packed_index = [&](size_t flat_index) {
    size_t r = flat_index / slice_, i = flat_index % slice_, j = i / buckets.per_bucket;
    return n * buckets.begin(j) + r * buckets.size(j) + (i - buckets.begin(j));
  };
  for (size_t k = 0; k < trainable.size(); ++k) {
    const float* g = grads[k].data_as<float>();
    for (size_t i = 0, count = size_t(grads[k].size()); i < count; ++i) flat_[packed_index(param_offset_[k] + i)] = g[i];
  }
  std::vector<PendingCollective> pending;
  for (size_t j = 0; j < buckets.count(); ++j) {
    ONYX_ASSIGN_OR_RETURN(PendingCollective p,
                          comm_->start_reduce_scatter(flat_.data() + n * buckets.begin(j),
                                                      slice_grad_.data() + buckets.begin(j), buckets.size(j),
                                                      ONYX_DTYPE_FLOAT32, ONYX_REDUCE_SUM,
                                                      label + ", gradient bucket " + std::to_string(j)));
    pending.push_back(std::move(p));
  }
  for (PendingCollective& p : pending) ONYX_RETURN_IF_ERROR(p.wait());
  pending.clear();

  // 2. The mean gradient, its global norm and the clipping scale, computed
  // as the unsharded optimizer model does (float32 scale).
  const float inv_n = 1.0f / float(n);
  double squares = 0;
  for (float& g : slice_grad_) {
    g *= inv_n;
    squares += double(g) * double(g);
  }
  ONYX_RETURN_IF_ERROR(comm_->all_reduce(&squares, &squares, 1, ONYX_DTYPE_FLOAT64, ONYX_REDUCE_SUM,
                                         label + ", gradient norm"));
  const float norm = float(std::sqrt(squares));
  *grad_norm = norm;
  if (!std::isfinite(norm)) {  // every rank got the same sum: all skip together
    *skipped = true;
    return Status();
  }
  float scale = 1.0f;
  if (max_grad_norm > 0 && norm > max_grad_norm) scale = max_grad_norm / (norm + 1e-6f);

  // 3. The optimizer on this rank's parts.
  for (size_t k = 0; k < trainable.size(); ++k) {
    const float* w = trainable[k].data.data_as<float>();
    for (size_t i = 0, count = size_t(trainable[k].data.size()); i < count; ++i) {
      size_t f = param_offset_[k] + i;
      if (f >= rank * slice_ && f < (rank + 1) * slice_) slice_param_[f - rank * slice_] = w[i];
    }
  }
  if (model_) {
    std::vector<std::pair<std::string, Tensor>> feed = {
        {"lr", scalar(lr)}, {"step", scalar(float(step))}, {"max_grad_norm", scalar(0.0f)}};
    if (hyperparameters.size() != hyper_names_.size())
      return invalid_argument("ZeRO optimizer step: " + std::to_string(hyperparameters.size()) +
                              " hyperparameters given, the optimizer has " + std::to_string(hyper_names_.size()));
    for (size_t h = 0; h < hyper_names_.size(); ++h) feed.emplace_back(hyper_names_[h], scalar(hyperparameters[h]));
    for (const auto& [name, value] : group_inputs_) feed.emplace_back(name, scalar(value));
    for (size_t q = 0; q < parts_.size(); ++q) {
      const Part& part = parts_[q];
      Tensor w = Tensor::allocate(ONYX_DTYPE_FLOAT32, {int64_t(part.length)});
      Tensor g = Tensor::allocate(ONYX_DTYPE_FLOAT32, {int64_t(part.length)});
      std::memcpy(w.data_as<float>(), slice_param_.data() + part.offset, part.length * sizeof(float));
      float* gp = g.data_as<float>();
      for (size_t i = 0; i < part.length; ++i) gp[i] = slice_grad_[part.offset + i] * scale;
      feed.emplace_back(part_name(q), std::move(w));
      feed.emplace_back(gradient_name(part_name(q)), std::move(g));
      for (size_t s = 0; s < slot_names_.size(); ++s)
        feed.emplace_back(slot_name(part_name(q), slot_names_[s]), slots_[q][s]);
    }
    auto outputs = model_->run(feed);
    if (!outputs.ok()) return outputs.status().with_context("ZeRO optimizer step");
    std::vector<Tensor>& out = outputs.value();
    size_t i = 1;  // out[0]: the parts' own norm, unused (clipping was done above)
    for (size_t q = 0; q < parts_.size(); ++q) {
      std::memcpy(slice_param_.data() + parts_[q].offset, out[i++].data_as<float>(), parts_[q].length * sizeof(float));
      for (size_t s = 0; s < slot_names_.size(); ++s) slots_[q][s] = std::move(out[i++]);
    }
  }

  // 4. Every rank's updated slice, gathered bucket by bucket.
  for (size_t j = 0; j < buckets.count(); ++j) {
    ONYX_ASSIGN_OR_RETURN(PendingCollective p,
                          comm_->start_all_gather(slice_param_.data() + buckets.begin(j),
                                                  flat_.data() + n * buckets.begin(j), buckets.size(j),
                                                  ONYX_DTYPE_FLOAT32, label + ", weight bucket " + std::to_string(j)));
    pending.push_back(std::move(p));
  }
  for (PendingCollective& p : pending) ONYX_RETURN_IF_ERROR(p.wait());
  for (size_t k = 0; k < trainable.size(); ++k) {
    Tensor w = Tensor::allocate(ONYX_DTYPE_FLOAT32, trainable[k].shape);
    float* out = w.data_as<float>();
    for (size_t i = 0, count = size_t(w.size()); i < count; ++i) out[i] = flat_[packed_index(param_offset_[k] + i)];
    trainable[k].data = std::move(w);  // replaced, not written in place (the checkpoint's rule)
  }
  return Status();
}

checkpoint::Checkpoint ShardedOptimizer::shard(const checkpoint::Checkpoint& state,
                                               const checkpoint::OptimizerGroup& group) const {
  checkpoint::Checkpoint out;
  out.metadata = state.metadata;
  out.metadata.producer.clear();
  out.metadata.shard_index = uint32_t(comm_->rank());
  out.metadata.shard_count = uint32_t(comm_->size());
  out.properties = state.properties;
  out.module.frozen = state.module.frozen;
  checkpoint::OptimizerGroup& g = out.optimizer.emplace_back();
  g.name = group.name;
  g.step = group.step;
  g.initial_learning_rate = group.initial_learning_rate;
  auto slice_record = [](const std::string& name, const Shape& full, size_t first, Tensor data) {
    checkpoint::TensorRecord r;
    r.name = name;
    r.dtype = ONYX_DTYPE_FLOAT32;
    r.shape = data.shape();
    r.slice = checkpoint::ShardSlice{full, int64_t(first)};
    r.data = std::move(data);
    return r;
  };
  const auto& trainable = state.module.trainable;
  if (comm_->size() == 1) {  // shard() of one rank is the complete checkpoint: every part is whole
    out.module.trainable = trainable;
    for (size_t q = 0; q < parts_.size(); ++q) {
      const checkpoint::TensorRecord& p = trainable[parts_[q].parameter];
      checkpoint::ParameterState& ps = g.parameters.emplace_back();
      ps.parameter = p.name;
      for (size_t s = 0; s < slot_names_.size(); ++s) {
        auto owner = std::make_shared<Tensor>(slots_[q][s]);
        ps.tensors.push_back({slot_names_[s], ONYX_DTYPE_FLOAT32, p.shape,
                              Tensor::wrap(ONYX_DTYPE_FLOAT32, p.shape, owner->data(), owner), std::nullopt,
                              std::nullopt});
      }
    }
    return out;
  }
  for (size_t k = 0, q = 0; k < trainable.size(); ++k) {
    if (element_count(trainable[k].shape) == 0) {  // shard() keeps empty tensors whole
      out.module.trainable.push_back(trainable[k]);
      continue;
    }
    if (q >= parts_.size() || parts_[q].parameter != k) continue;  // none of it is this rank's
    const Part& part = parts_[q];
    Tensor w = Tensor::allocate(ONYX_DTYPE_FLOAT32, {int64_t(part.length)});
    std::memcpy(w.data_as<float>(), trainable[k].data.data_as<float>() + part.first, part.length * sizeof(float));
    out.module.trainable.push_back(slice_record(trainable[k].name, trainable[k].shape, part.first, std::move(w)));
    checkpoint::ParameterState& ps = g.parameters.emplace_back();
    ps.parameter = trainable[k].name;
    for (size_t s = 0; s < slot_names_.size(); ++s)
      ps.tensors.push_back(slice_record(slot_names_[s], trainable[k].shape, part.first, slots_[q][s]));
    ++q;
  }
  return out;
}

Status ShardedOptimizer::gather_state(const std::vector<checkpoint::TensorRecord>& trainable,
                                      checkpoint::OptimizerGroup& group) {
  std::vector<float> slice(slice_), all(padded_);
  group.parameters.clear();
  for (const auto& p : trainable) group.parameters.push_back({p.name, {}});
  for (size_t s = 0; s < slot_names_.size(); ++s) {
    std::fill(slice.begin(), slice.end(), 0.0f);
    for (size_t q = 0; q < parts_.size(); ++q)
      std::memcpy(slice.data() + parts_[q].offset, slots_[q][s].data_as<float>(), parts_[q].length * sizeof(float));
    ONYX_RETURN_IF_ERROR(comm_->all_gather(slice.data(), all.data(), slice_, ONYX_DTYPE_FLOAT32,
                                           "gathering optimizer state '" + slot_names_[s] + "'"));
    for (size_t k = 0; k < trainable.size(); ++k) {
      Tensor t = Tensor::allocate(ONYX_DTYPE_FLOAT32, trainable[k].shape);
      std::memcpy(t.data_as<float>(), all.data() + param_offset_[k], t.bytes());
      group.parameters[k].tensors.push_back({slot_names_[s], ONYX_DTYPE_FLOAT32, trainable[k].shape, t,
                                             std::nullopt, std::nullopt});
    }
  }
  return Status();
}

}  // namespace onyx::runtime::training
