// value_kinds.h: which values of a graph are sequences or optionals rather
// than tensors, and their element types, where the model does not declare
// them (intermediate values without value_info), from the ops that produce
// them; and the element types of tensors that ops on sequences and
// optionals produce (SequenceAt, SequenceLength, OptionalHasElement, ...)
// and the string ops (RegexFullMatch, StringSplit, ...),
// so that providers can claim the nodes that read them.
#pragma once

#include "ir/graph.h"

namespace onyx::runtime::ir {

// Sets Value::kind, elem_kind and elem_dtype of node outputs (and dtype of
// tensor outputs) from their op (SequenceConstruct, SplitToSequence,
// Optional, SequenceMap, SequenceAt, ...; Identity, If and Loop pass their
// inputs' or subgraphs' on). What the model declares is kept. Runs on
// subgraphs first. Idempotent.
void infer_value_kinds(Graph& graph);

// True when the value is a sequence, optional or map (host-only values).
bool is_host_only_kind(ValueKind kind);

}  // namespace onyx::runtime::ir
