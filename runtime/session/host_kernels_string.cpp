// host_kernels_string.cpp: ops on STRING tensors, which only the host
// carries: StringConcat, StringSplit, StringNormalizer, RegexFullMatch
// (RE2 syntax, as the spec asks, with the RE2 library), Equal and Identity,
// as the ONNX operator spec defines them.
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/string_tensor.h"
#include "session/host_kernels.h"

namespace onyx::runtime {
namespace {

StatusOr<std::span<const std::string>> strings(const HostKernelCall& call, size_t k, Tensor* t) {
  ONYX_ASSIGN_OR_RETURN(*t, call.tensor(k));
  if (t->dtype() != ONYX_DTYPE_STRING)
    return invalid_argument(call.name + ": input " + std::to_string(k) + " must be a string tensor, got " +
                            dtype_name(t->dtype()));
  return strings_of(*t);
}

// Numpy broadcasting of two shapes: the output shape and, per output
// element, the element of each input it reads.
struct Broadcast {
  Shape dims;
  std::vector<int64_t> a, b;
};

StatusOr<Broadcast> broadcast(const Shape& x, const Shape& y, const std::string& what) {
  const size_t rank = std::max(x.size(), y.size());
  Shape xs(rank - x.size(), 1), ys(rank - y.size(), 1);
  xs.insert(xs.end(), x.begin(), x.end());
  ys.insert(ys.end(), y.begin(), y.end());
  Broadcast out;
  for (size_t d = 0; d < rank; ++d) {
    if (xs[d] != ys[d] && xs[d] != 1 && ys[d] != 1)
      return invalid_argument(what + ": shapes " + shape_string(x) + " and " + shape_string(y) + " do not broadcast");
    out.dims.push_back(xs[d] == 1 ? ys[d] : xs[d]);
  }
  const int64_t count = element_count(out.dims);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, ia = 0, ib = 0, sa = 1, sb = 1;
    for (size_t d = rank; d-- > 0;) {
      const int64_t coord = rest % out.dims[d];
      rest /= out.dims[d];
      ia += (xs[d] == 1 ? 0 : coord) * sa;
      ib += (ys[d] == 1 ? 0 : coord) * sb;
      sa *= xs[d];
      sb *= ys[d];
    }
    out.a.push_back(ia);
    out.b.push_back(ib);
  }
  return out;
}

Status string_concat(HostKernelCall& call) {
  Tensor xt, yt;
  ONYX_ASSIGN_OR_RETURN(auto x, strings(call, 0, &xt));
  ONYX_ASSIGN_OR_RETURN(auto y, strings(call, 1, &yt));
  ONYX_ASSIGN_OR_RETURN(Broadcast b, broadcast(xt.shape(), yt.shape(), call.name));
  std::vector<std::string> out;
  for (size_t i = 0; i < b.a.size(); ++i) out.push_back(x[size_t(b.a[i])] + y[size_t(b.b[i])]);
  call.outputs[0] = make_string_tensor(b.dims, std::move(out));
  return Status();
}

// Equal on strings (the numeric types run on providers).
Status string_equal(HostKernelCall& call) {
  Tensor xt, yt;
  ONYX_ASSIGN_OR_RETURN(auto x, strings(call, 0, &xt));
  ONYX_ASSIGN_OR_RETURN(auto y, strings(call, 1, &yt));
  ONYX_ASSIGN_OR_RETURN(Broadcast b, broadcast(xt.shape(), yt.shape(), call.name));
  Tensor out = Tensor::allocate(ONYX_DTYPE_BOOL, b.dims);
  for (size_t i = 0; i < b.a.size(); ++i) out.data_as<uint8_t>()[i] = x[size_t(b.a[i])] == y[size_t(b.b[i])];
  call.outputs[0] = out;
  return Status();
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Python's str.split(): on `delimiter`, or (empty delimiter) on runs of
// whitespace with leading and trailing whitespace dropped; at most
// `maxsplit` splits when maxsplit >= 0.
std::vector<std::string> split(const std::string& s, const std::string& delimiter, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (delimiter.empty()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && is_space(s[i])) ++i;
      if (i == s.size()) break;
      if (maxsplit >= 0 && int64_t(parts.size()) == maxsplit) {  // the rest, trailing whitespace dropped
        size_t end = s.size();
        while (end > i && is_space(s[end - 1])) --end;
        parts.push_back(s.substr(i, end - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !is_space(s[j])) ++j;
      parts.push_back(s.substr(i, j - i));
      i = j;
    }
    return parts;
  }
  size_t start = 0;
  while (maxsplit < 0 || int64_t(parts.size()) < maxsplit) {
    size_t at = s.find(delimiter, start);
    if (at == std::string::npos) break;
    parts.push_back(s.substr(start, at - start));
    start = at + delimiter.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

Status string_split(HostKernelCall& call) {
  Tensor xt;
  ONYX_ASSIGN_OR_RETURN(auto x, strings(call, 0, &xt));
  const ir::Attribute* d = call.node.attr("delimiter");
  const std::string delimiter = d ? d->s : "";
  const int64_t maxsplit = call.node.attr_int("maxsplit", -1);
  std::vector<std::vector<std::string>> parts;
  size_t widest = 0;
  for (const std::string& s : x) {
    parts.push_back(split(s, delimiter, maxsplit));
    widest = std::max(widest, parts.back().size());
  }
  Shape dims = xt.shape();
  dims.push_back(int64_t(widest));
  std::vector<std::string> y;
  Tensor z = Tensor::allocate(ONYX_DTYPE_INT64, xt.shape());
  for (size_t i = 0; i < parts.size(); ++i) {
    z.data_as<int64_t>()[i] = int64_t(parts[i].size());
    parts[i].resize(widest);
    for (std::string& p : parts[i]) y.push_back(std::move(p));
  }
  call.outputs[0] = make_string_tensor(dims, std::move(y));
  if (call.outputs.size() > 1) call.outputs[1] = z;
  return Status();
}

std::string change_case(std::string s, const std::string& action) {
  if (action == "LOWER") std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (action == "UPPER") std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

// StringNormalizer: drops the elements that are stopwords (compared
// ignoring ASCII case unless is_case_sensitive), then changes the case of
// the rest (ASCII letters). Input [C] or [1, C]; when nothing is left the
// output is one "" ([1] or [1, 1]).
Status string_normalizer(HostKernelCall& call) {
  Tensor xt;
  ONYX_ASSIGN_OR_RETURN(auto x, strings(call, 0, &xt));
  const Shape& dims = xt.shape();
  if (!(dims.size() == 1 || (dims.size() == 2 && dims[0] == 1)))
    return invalid_argument(call.name + ": the input must be [C] or [1, C], got " + shape_string(dims));
  const ir::Attribute* a = call.node.attr("case_change_action");
  const std::string action = a ? a->s : "NONE";
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    return invalid_argument(call.name + ": case_change_action '" + action + "' is not NONE, LOWER or UPPER");
  const bool sensitive = call.node.attr_int("is_case_sensitive", 0) != 0;
  std::set<std::string> stops;
  if (const ir::Attribute* s = call.node.attr("stopwords"))
    for (const std::string& w : s->strings) stops.insert(sensitive ? w : change_case(w, "LOWER"));
  std::vector<std::string> kept;
  for (const std::string& s : x)
    if (!stops.count(sensitive ? s : change_case(s, "LOWER"))) kept.push_back(change_case(s, action));
  if (kept.empty()) kept.push_back("");
  Shape out_dims = {int64_t(kept.size())};
  if (dims.size() == 2) out_dims.insert(out_dims.begin(), 1);
  call.outputs[0] = make_string_tensor(out_dims, std::move(kept));
  return Status();
}

Status regex_full_match(HostKernelCall& call) {
  Tensor xt;
  ONYX_ASSIGN_OR_RETURN(auto x, strings(call, 0, &xt));
  const ir::Attribute* p = call.node.attr("pattern");
  if (!p) return invalid_argument(call.name + ": the pattern attribute is missing");
  RE2::Options options;
  options.set_log_errors(false);
  RE2 regex(p->s, options);
  if (!regex.ok()) return invalid_argument(call.name + ": pattern '" + p->s + "' is not valid RE2: " + regex.error());
  Tensor out = Tensor::allocate(ONYX_DTYPE_BOOL, xt.shape());
  for (size_t i = 0; i < x.size(); ++i) out.data_as<uint8_t>()[i] = RE2::FullMatch(x[i], regex);
  call.outputs[0] = out;
  return Status();
}

}  // namespace

std::vector<HostKernelEntry> string_host_kernels() {
  return {{"StringConcat", string_concat},
          {"StringSplit", string_split},
          {"StringNormalizer", string_normalizer},
          {"RegexFullMatch", regex_full_match},
          {"Equal", string_equal}};
}

}  // namespace onyx::runtime
