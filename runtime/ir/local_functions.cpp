// local_functions.cpp: see local_functions.h. Works on the proto, before
// import, so that the importer, shape inference and every later stage see an
// ordinary graph.
#include "ir/local_functions.h"

#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace onyx::runtime::ir {
namespace {

namespace pb = ONNX_NAMESPACE;

// Fields newer than the onnx library Onyx builds against (1.12) arrive as
// unknown fields: FunctionProto.attribute_proto (11, IR 9), .overload (13)
// and NodeProto.overload (8, IR 10).
constexpr int kFunctionAttributeProto = 11, kFunctionOverload = 13, kNodeOverload = 8;

std::vector<std::string> unknown_strings(const google::protobuf::Message& m, int number) {
  std::vector<std::string> out;
  const google::protobuf::UnknownFieldSet& fields = m.GetReflection()->GetUnknownFields(m);
  for (int k = 0; k < fields.field_count(); ++k)
    if (fields.field(k).number() == number &&
        fields.field(k).type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      out.push_back(fields.field(k).length_delimited());
  return out;
}

std::string last_unknown_string(const google::protobuf::Message& m, int number) {
  std::vector<std::string> all = unknown_strings(m, number);
  return all.empty() ? std::string() : all.back();
}

std::string domain_of(const std::string& d) { return d == "ai.onnx" ? std::string() : d; }

std::string key_of(const std::string& domain, const std::string& name, const std::string& overload) {
  return domain_of(domain) + "::" + name + (overload.empty() ? "" : ":" + overload);
}

struct Function {
  const pb::FunctionProto* proto = nullptr;
  std::string key;
  std::map<std::string, pb::AttributeProto> defaults;  // attribute_proto, by name
};

void collect_names(const pb::GraphProto& g, std::set<std::string>& names) {
  for (const auto& v : g.input()) names.insert(v.name());
  for (const auto& v : g.output()) names.insert(v.name());
  for (const auto& t : g.initializer()) names.insert(t.name());
  for (const auto& n : g.node()) {
    names.insert(n.input().begin(), n.input().end());
    names.insert(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_names(a.g(), names);
      for (const auto& sub : a.graphs()) collect_names(sub, names);
    }
  }
}

// "a -> b -> c", with the middle of a long chain left out.
std::string chain_text(const std::vector<std::string>& chain) {
  std::string out;
  for (size_t k = 0; k < chain.size(); ++k) {
    if (chain.size() > 8 && k == 3) {
      out += " -> ... (" + std::to_string(chain.size() - 6) + " more)";
      k = chain.size() - 3;
    }
    out += (out.empty() ? "" : " -> ") + chain[k].substr(0, 200);
  }
  return out;
}

class Inliner {
 public:
  Inliner(std::map<std::string, Function> functions, std::set<std::string> names, std::string what)
      : functions_(std::move(functions)), names_(std::move(names)), what_(std::move(what)) {}

  // Refuses a call graph (from the calls in `g`) with a cycle or deeper than
  // kMaxFunctionDepth, naming the chain; recursion stops at that depth.
  Status check_calls(const pb::GraphProto& g, std::vector<std::string>& chain) {
    for (const pb::NodeProto& node : g.node()) {
      for (const auto& a : node.attribute()) {
        if (a.has_g()) ONYX_RETURN_IF_ERROR(check_calls(a.g(), chain));
        for (const auto& sub : a.graphs()) ONYX_RETURN_IF_ERROR(check_calls(sub, chain));
      }
      auto it = functions_.find(key_of(node.domain(), node.op_type(), last_unknown_string(node, kNodeOverload)));
      if (it == functions_.end() || checked_.count(it->first)) continue;
      const Function& f = it->second;
      chain.push_back(f.key);
      for (size_t k = 0; k + 1 < chain.size(); ++k)
        if (chain[k] == f.key)
          return invalid_argument(what_ + ": local function " + f.key + " calls itself (" + chain_text(chain) + ")");
      if (int(chain.size()) > kMaxFunctionDepth)
        return invalid_argument(what_ + ": local function calls nest deeper than " +
                                std::to_string(kMaxFunctionDepth) + " (" + chain_text(chain) + ")");
      pb::GraphProto body;
      *body.mutable_node() = f.proto->node();
      ONYX_RETURN_IF_ERROR(check_calls(body, chain));
      chain.pop_back();
      // Depth is only bounded along the path found first; a deeper path
      // through `f` from elsewhere still fails in expand().
      checked_.insert(f.key);
    }
    return Status();
  }

  // The nodes `g` holds once expanded (saturating at kMaxInlinedNodes + 1),
  // counted from each function's size once, without expanding anything: a
  // file of a few bytes is refused at once, not after a million copies.
  int64_t expanded_size(const pb::GraphProto& g) {
    int64_t total = 0;
    for (const pb::NodeProto& node : g.node()) {
      auto it = functions_.find(key_of(node.domain(), node.op_type(), last_unknown_string(node, kNodeOverload)));
      int64_t n = 1;
      if (it != functions_.end()) n = size_of(it->second);
      for (const auto& a : node.attribute()) {
        if (a.has_g()) n += expanded_size(a.g());
        for (const auto& sub : a.graphs()) n += expanded_size(sub);
      }
      total = std::min(total + n, kMaxInlinedNodes + 1);
    }
    return total;
  }

  // Expands the calls in `g` (and its subgraphs); `chain` holds the keys of
  // the functions being expanded around it.
  Status expand(pb::GraphProto& g, std::vector<std::string>& chain) {
    std::vector<pb::NodeProto> nodes;
    nodes.reserve(size_t(g.node_size()));
    for (pb::NodeProto& node : *g.mutable_node()) {
      for (pb::AttributeProto& a : *node.mutable_attribute()) {
        if (a.has_g()) ONYX_RETURN_IF_ERROR(expand(*a.mutable_g(), chain));
        for (pb::GraphProto& sub : *a.mutable_graphs()) ONYX_RETURN_IF_ERROR(expand(sub, chain));
      }
      auto it = functions_.find(key_of(node.domain(), node.op_type(), last_unknown_string(node, kNodeOverload)));
      if (it == functions_.end()) {
        nodes.push_back(std::move(node));
        continue;
      }
      const Function& f = it->second;
      chain.push_back(f.key);
      for (size_t k = 0; k + 1 < chain.size(); ++k)
        if (chain[k] == f.key) return invalid_argument(what_ + ": local function " + f.key + " calls itself (" + chain_text(chain) + ")");
      if (int(chain.size()) > kMaxFunctionDepth)
        return invalid_argument(what_ + ": local function calls nest deeper than " + std::to_string(kMaxFunctionDepth) +
                                " (" + chain_text(chain) + ")");
      pb::GraphProto body;
      ONYX_RETURN_IF_ERROR(instantiate(f, node, body));
      ONYX_RETURN_IF_ERROR(expand(body, chain));
      chain.pop_back();
      for (pb::NodeProto& n : *body.mutable_node()) nodes.push_back(std::move(n));
    }
    g.clear_node();
    for (pb::NodeProto& n : nodes) *g.add_node() = std::move(n);
    return Status();
  }

 private:
  std::string fresh(const std::string& base) {
    std::string name = base;
    while (!names_.insert(name).second) name = base + "_" + std::to_string(++counter_);
    return name;
  }

  // `attrs` with references to the caller's attributes resolved (dropped
  // when neither the caller nor the function's defaults give one), recursing
  // into subgraphs, whose names from the function's scope are renamed too.
  Status bind_attributes(google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs, const Function& f,
                         const pb::NodeProto& call, const std::map<std::string, std::string>& renamed) {
    google::protobuf::RepeatedPtrField<pb::AttributeProto> bound;
    for (pb::AttributeProto& a : attrs) {
      if (!a.ref_attr_name().empty()) {
        const pb::AttributeProto* given = nullptr;
        for (const auto& c : call.attribute())
          if (c.name() == a.ref_attr_name()) given = &c;
        auto d = f.defaults.find(a.ref_attr_name());
        if (!given && d == f.defaults.end()) continue;  // the op's own default applies
        pb::AttributeProto resolved = given ? *given : d->second;
        resolved.set_name(a.name());
        *bound.Add() = std::move(resolved);
        continue;
      }
      if (a.has_g()) ONYX_RETURN_IF_ERROR(bind_subgraph(*a.mutable_g(), f, call, renamed));
      for (pb::GraphProto& sub : *a.mutable_graphs()) ONYX_RETURN_IF_ERROR(bind_subgraph(sub, f, call, renamed));
      *bound.Add() = std::move(a);
    }
    attrs.Swap(&bound);
    return Status();
  }

  Status bind_subgraph(pb::GraphProto& g, const Function& f, const pb::NodeProto& call,
                       const std::map<std::string, std::string>& renamed) {
    auto rename = [&](std::string* name) {
      if (auto it = renamed.find(*name); it != renamed.end()) *name = it->second;
    };
    for (pb::NodeProto& n : *g.mutable_node()) {
      for (std::string& in : *n.mutable_input()) rename(&in);
      ONYX_RETURN_IF_ERROR(bind_attributes(*n.mutable_attribute(), f, call, renamed));
    }
    for (pb::ValueInfoProto& out : *g.mutable_output()) rename(out.mutable_name());
    return Status();
  }

  // The body of `f` for one call, with names bound and renamed apart.
  Status instantiate(const Function& f, const pb::NodeProto& call, pb::GraphProto& body) {
    const pb::FunctionProto& fn = *f.proto;
    inlined_ += fn.node_size();
    if (inlined_ > kMaxInlinedNodes)
      return invalid_argument(what_ + ": expanding its local functions takes more than " +
                              std::to_string(kMaxInlinedNodes) + " nodes (at a call of " + f.key + ")");
    const std::string prefix = (call.name().empty() ? call.op_type() : call.name()).substr(0, 200) + "/";
    std::map<std::string, std::string> renamed;  // body name -> graph name
    for (int k = 0; k < fn.input_size(); ++k) renamed[fn.input(k)] = k < call.input_size() ? call.input(k) : "";
    for (int k = 0; k < fn.output_size(); ++k)
      renamed[fn.output(k)] =
          k < call.output_size() && !call.output(k).empty() ? call.output(k) : fresh(prefix + fn.output(k));
    auto map_name = [&](std::string* name) {
      if (name->empty()) return;
      auto it = renamed.find(*name);
      *name = it != renamed.end() ? it->second : (renamed[*name] = fresh(prefix + *name));
    };
    for (const pb::NodeProto& bn : fn.node()) {
      pb::NodeProto* n = body.add_node();
      *n = bn;
      if (!bn.name().empty()) n->set_name(prefix + bn.name());
      for (std::string& in : *n->mutable_input()) map_name(&in);
      for (std::string& out : *n->mutable_output()) map_name(&out);
    }
    // Subgraphs may read body values by name: bind them once every name is known.
    for (pb::NodeProto& n : *body.mutable_node()) ONYX_RETURN_IF_ERROR(bind_attributes(*n.mutable_attribute(), f, call, renamed));
    return Status();
  }

  int64_t size_of(const Function& f) {
    if (auto it = sizes_.find(f.key); it != sizes_.end()) return it->second;
    sizes_[f.key] = kMaxInlinedNodes + 1;  // cycles were refused by check_calls
    pb::GraphProto body;
    *body.mutable_node() = f.proto->node();
    return sizes_[f.key] = expanded_size(body);
  }

  std::map<std::string, Function> functions_;
  std::map<std::string, int64_t> sizes_;
  std::set<std::string> checked_;  // functions whose calls check_calls has walked
  std::set<std::string> names_;
  std::string what_;
  int64_t inlined_ = 0;
  int64_t counter_ = 0;
};

}  // namespace

Status inline_local_functions(pb::ModelProto& model, const std::string& what) {
  if (model.functions_size() == 0) return Status();
  std::map<std::string, int64_t> opsets;
  for (const auto& op : model.opset_import()) opsets[domain_of(op.domain())] = op.version();
  std::map<std::string, Function> functions;
  for (const pb::FunctionProto& fn : model.functions()) {
    Function f;
    f.proto = &fn;
    f.key = key_of(fn.domain(), fn.name(), last_unknown_string(fn, kFunctionOverload));
    if (fn.name().empty()) return invalid_argument(what + ": a local function has no name");
    for (const std::string& bytes : unknown_strings(fn, kFunctionAttributeProto)) {
      pb::AttributeProto a;
      if (!a.ParseFromString(bytes) || a.name().empty())
        return invalid_argument(what + ": local function " + f.key + " has a malformed attribute default");
      f.defaults[a.name()] = std::move(a);
    }
    for (const auto& op : fn.opset_import()) {
      auto [it, added] = opsets.emplace(domain_of(op.domain()), op.version());
      if (!added && it->second != op.version())
        return invalid_argument(what + ": local function " + f.key + " imports opset '" + op.domain() + "' " +
                                std::to_string(op.version()) + ", the model " + std::to_string(it->second) +
                                " (Onyx reads a model in one opset per domain)");
      if (added) {
        pb::OperatorSetIdProto* imported = model.add_opset_import();
        imported->set_domain(op.domain());
        imported->set_version(op.version());
      }
    }
    const std::string key = f.key;
    if (!functions.emplace(key, std::move(f)).second)
      return invalid_argument(what + ": local function " + key + " is defined twice");
  }
  std::set<std::string> names;
  collect_names(model.graph(), names);
  for (const pb::FunctionProto& fn : model.functions())
    for (const pb::NodeProto& n : fn.node()) {
      names.insert(n.input().begin(), n.input().end());
      names.insert(n.output().begin(), n.output().end());
    }
  Inliner inliner(std::move(functions), std::move(names), what);
  std::vector<std::string> chain;
  ONYX_RETURN_IF_ERROR(inliner.check_calls(model.graph(), chain));
  if (inliner.expanded_size(model.graph()) > kMaxInlinedNodes)
    return invalid_argument(what + ": expanding its local functions takes more than " +
                            std::to_string(kMaxInlinedNodes) + " nodes");
  ONYX_RETURN_IF_ERROR(inliner.expand(*model.mutable_graph(), chain));
  model.clear_functions();
  return Status();
}

}  // namespace onyx::runtime::ir
