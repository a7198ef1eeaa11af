// graph_view.h: builds the ABI's read-only OnyxGraphView of an ir::Graph.
// The view borrows strings and tensor data from the graph: keep the graph
// alive and unchanged while the view is used.
#pragma once

#include <onyx_provider.h>

#include <deque>
#include <memory>
#include <vector>

#include "ir/graph.h"

namespace onyx::runtime {

class GraphView {
 public:
  explicit GraphView(const ir::Graph& graph);
  GraphView(const GraphView&) = delete;
  GraphView& operator=(const GraphView&) = delete;
  const OnyxGraphView* get() const { return &view_; }

 private:
  OnyxGraphView view_{};
  std::vector<OnyxValueInfo> values_;
  std::vector<OnyxNodeView> nodes_;
  std::deque<std::vector<int32_t>> index_lists_;
  std::deque<std::vector<OnyxAttribute>> attribute_lists_;
  std::deque<std::vector<const char*>> string_lists_;
  std::deque<OnyxTensorView> tensors_;
  std::deque<std::unique_ptr<GraphView>> subgraphs_;
};

}  // namespace onyx::runtime
