// channels_last.cpp: quantized convolution chains in channels-last layout.
//
// Int8 convolution kernels (oneDNN's, ONNX Runtime's) work on channels-last
// (N x H x W x C) activations; an NCHW QLinearConv then converts its input
// and output on every run, which in MobileNetV2 (52 convolutions) costs as
// much as the convolutions. Where a provider claims ONNX Runtime's NHWC
// form, com.microsoft QLinearConv with channels_last = 1 (X and Y channels
// last, W unchanged), ranked no later than the provider of the NCHW node,
// the convolution is rewritten to it, and the layout carries on through the
// quantized nodes between convolutions that do not care about it
// (QLinearAdd and QLinearMul of rank-4 operands, QLinearLeakyRelu,
// QLinearSigmoid) and into QLinearGlobalAveragePool's own channels-last
// form, where a provider claims it. Transposes convert at the edges of such
// a region, once per value; the values the graph had keep their names and
// NCHW layout wherever anything else reads them.
#include <map>

#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

constexpr const char* kMicrosoft = "com.microsoft";
const std::vector<int64_t> kToLast = {0, 2, 3, 1}, kToFirst = {0, 3, 1, 2};

bool is_op(const ir::Node& n, const char* domain, const char* op) { return n.domain == domain && n.op_type == op; }

// The node's inputs that hold activations (the rest are scales and zero points).
std::vector<size_t> data_inputs(const ir::Node& n) {
  if (is_op(n, kMicrosoft, "QLinearAdd") || is_op(n, kMicrosoft, "QLinearMul")) return {0, 3};
  if (is_op(n, kMicrosoft, "QLinearLeakyRelu") || is_op(n, kMicrosoft, "QLinearSigmoid")) return {0};
  return {};
}

bool is_conv(const ir::Node& n) {
  return (is_op(n, "", "QLinearConv") || is_op(n, kMicrosoft, "QLinearConv")) && n.attr_int("channels_last", 0) == 0;
}

bool is_global_pool(const ir::Node& n) {
  return is_op(n, kMicrosoft, "QLinearGlobalAveragePool") && n.attr_int("channels_last", 0) == 0;
}

bool rank4(const ir::Graph& g, int v) { return v >= 0 && g.values[size_t(v)].rank == 4; }

ir::Attribute ints_attribute(const char* name, const std::vector<int64_t>& v) {
  ir::Attribute a;
  a.name = name;
  a.type = ONYX_ATTR_INTS;
  a.ints = v;
  return a;
}

class Layout {
 public:
  Layout(GraphRewrite& rw, const ProviderRank& providers)
      : rw_(rw),
        g_(rw.graph),
        providers_(providers),
        last_(g_.values.size(), -1),
        converted_to_last_(g_.values.size(), -1) {}

  int run() {
    const size_t original_values = g_.values.size(), original_nodes = g_.nodes.size();
    int rewritten = 0;
    // Node order is topological (ONNX requires it of a model, and the other
    // passes keep it); the Transposes added at the end are not visited.
    for (int n = 0; n < int(original_nodes); ++n) {
      if (rw_.removed[size_t(n)]) continue;
      const ir::Node& node = g_.nodes[size_t(n)];
      if (is_conv(node) || is_global_pool(node)) rewritten += try_channels_last_form(n);
      else if (!data_inputs(node).empty()) rewritten += try_layout_agnostic(n);
    }
    // Values the graph had, now written channels-last: back to NCHW for
    // their other readers and for graph outputs.
    for (size_t v = 0; v < original_values; ++v)
      if (last_[v] >= 0 && (rw_.readers[v] > 0 || rw_.pinned[v])) add_transpose(last_[v], int(v), kToFirst);
    return rewritten;
  }

 private:
  // A value like `v` with the dims permuted by `perm` (names kept unique).
  int permuted_value(int v, const std::vector<int64_t>& perm, const char* suffix) {
    ir::Value nv;
    const ir::Value& src = g_.values[size_t(v)];
    nv.name = src.name + suffix;
    for (int k = 1; g_.find_value(nv.name) >= 0; ++k) nv.name = src.name + suffix + std::to_string(k);
    nv.dtype = src.dtype;
    nv.rank = src.rank;
    for (int64_t p : perm) nv.dims.push_back(src.rank == 4 ? src.dims[size_t(p)] : -1);
    const int index = g_.add_value(std::move(nv));
    rw_.readers.push_back(0);
    rw_.pinned.push_back(false);
    last_.push_back(-1);
    converted_to_last_.push_back(-1);
    return index;
  }

  void add_transpose(int from, int to, const std::vector<int64_t>& perm) {
    ir::Node t;
    t.name = g_.values[size_t(to)].name + "_transpose";
    t.op_type = "Transpose";
    t.inputs = {from};
    t.outputs = {to};
    t.attributes.push_back(ints_attribute("perm", perm));
    ++rw_.readers[size_t(from)];
    g_.values[size_t(to)].producer = int(g_.nodes.size());
    g_.nodes.push_back(std::move(t));
    rw_.removed.push_back(false);
  }

  // The channels-last form of NCHW value `v`: written by a rewritten node,
  // or a Transpose of it added once.
  int channels_last_of(int v) {
    if (last_[size_t(v)] >= 0) return last_[size_t(v)];
    if (converted_to_last_[size_t(v)] < 0) {
      const int t = permuted_value(v, kToLast, "_nhwc");
      add_transpose(v, t, kToLast);
      converted_to_last_[size_t(v)] = t;
    }
    return converted_to_last_[size_t(v)];
  }

  void read(ir::Node& node, size_t k, int v) {
    --rw_.readers[size_t(node.inputs[k])];
    node.inputs[k] = v;
    ++rw_.readers[size_t(v)];
  }

  // Whether a provider of the session runs a Transpose of rank-4 value `v`
  // (asked once per element type): the edges of a region need one.
  bool transposable(int v) {
    const int32_t dtype = g_.values[size_t(v)].dtype;
    auto it = transposable_.find(dtype);
    if (it != transposable_.end()) return it->second;
    ir::Node t;
    t.op_type = "Transpose";
    t.inputs = {v};
    t.outputs = {permuted_value(v, kToLast, "_nhwc")};
    t.attributes.push_back(ints_attribute("perm", kToLast));
    return transposable_[dtype] = providers_(g_, t) >= 0;
  }

  // QLinearConv or QLinearGlobalAveragePool -> its channels_last = 1 form.
  int try_channels_last_form(int n) {
    const ir::Node& node = g_.nodes[size_t(n)];
    const int x = node.inputs.empty() ? -1 : node.inputs[0], y = node.outputs.empty() ? -1 : node.outputs[0];
    if (!rank4(g_, x) || !rank4(g_, y) || node.outputs.size() != 1) return 0;
    if (!transposable(x) || !transposable(y)) return 0;
    // A global pool goes channels-last only to read a channels-last input.
    if (is_global_pool(node) && last_[size_t(x)] < 0) return 0;
    ir::Node form = node;
    form.domain = kMicrosoft;
    std::erase_if(form.attributes, [](const ir::Attribute& a) { return a.name == "channels_last"; });
    form.attributes.push_back(int_attribute("channels_last", 1));
    // The input it would read and the output it would write, made now so that
    // providers judge the node on them; values left unused go with compaction.
    const int known = last_[size_t(x)] >= 0 ? last_[size_t(x)] : converted_to_last_[size_t(x)];
    form.inputs[0] = known >= 0 ? known : permuted_value(x, kToLast, "_nhwc");
    const int y_last = permuted_value(y, kToLast, "_nhwc");
    form.outputs[0] = y_last;
    const int rank = providers_(g_, form), nchw_rank = providers_(g_, node);
    if (rank < 0 || (nchw_rank >= 0 && rank > nchw_rank)) return 0;
    if (known < 0) {  // the value made above becomes a Transpose's
      add_transpose(x, form.inputs[0], kToLast);
      converted_to_last_[size_t(x)] = form.inputs[0];
    }
    g_.opsets.emplace(kMicrosoft, 1);
    --rw_.readers[size_t(x)];
    ++rw_.readers[size_t(form.inputs[0])];
    g_.values[size_t(y)].producer = -1;
    g_.values[size_t(y_last)].producer = n;
    last_[size_t(y)] = y_last;
    g_.nodes[size_t(n)] = std::move(form);
    return 1;
  }

  // An elementwise quantized node reading a channels-last value: it reads
  // every operand channels-last (all rank 4, so broadcasting is unchanged).
  int try_layout_agnostic(int n) {
    const std::vector<size_t> inputs = data_inputs(g_.nodes[size_t(n)]);
    const ir::Node& node = g_.nodes[size_t(n)];
    if (node.outputs.size() != 1 || !rank4(g_, node.outputs[0])) return 0;
    bool any_last = false;
    for (size_t k : inputs) {
      if (k >= node.inputs.size() || !rank4(g_, node.inputs[k])) return 0;
      any_last = any_last || last_[size_t(node.inputs[k])] >= 0;
    }
    if (!any_last) return 0;
    for (size_t k : inputs) {
      const int v = channels_last_of(g_.nodes[size_t(n)].inputs[k]);  // may add a node: index again
      read(g_.nodes[size_t(n)], k, v);
    }
    const int y = g_.nodes[size_t(n)].outputs[0];
    const int y_last = permuted_value(y, kToLast, "_nhwc");
    g_.nodes[size_t(n)].outputs[0] = y_last;
    g_.values[size_t(y)].producer = -1;
    g_.values[size_t(y_last)].producer = n;
    last_[size_t(y)] = y_last;
    return 1;
  }

  GraphRewrite& rw_;
  ir::Graph& g_;
  const ProviderRank& providers_;
  std::vector<int> last_;               // per value: the channels-last value a rewritten node writes instead
  std::vector<int> converted_to_last_;  // per value: its Transpose to channels-last, once made
  std::map<int32_t, bool> transposable_;  // per element type
};

}  // namespace

int use_channels_last(GraphRewrite& rw, const ProviderRank& providers) { return Layout(rw, providers).run(); }

}  // namespace onyx::runtime::optimize
