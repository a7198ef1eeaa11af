// step_record.h: the shared-memory record in which the worker publishes the
// step it is executing (see core/step_observer.h). The parent reads it
// only after the worker has died or been killed, so it needs no locking; it
// treats the strings as untrusted (bounded, NUL forced).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

namespace onyx::runtime::isolate {

struct StepRecord {
  char provider[64];
  char step[448];  // the step's name: "Relu 'relu0'"; empty between runs
};

inline void copy_field(char* field, size_t size, const char* text) {
  std::strncpy(field, text, size - 1);
  field[size - 1] = '\0';
}

inline std::string read_field(const char* field, size_t size) { return std::string(field, strnlen(field, size)); }

}  // namespace onyx::runtime::isolate
