#include "engine/sequence.h"

namespace ladder::engine {

bool goes_before(const Sequence& a, const Sequence& b) {
  if (a.scheduling.priority != b.scheduling.priority) return a.scheduling.priority > b.scheduling.priority;
  if (a.scheduling.deadline != b.scheduling.deadline) return a.scheduling.deadline < b.scheduling.deadline;
  return a.arrival < b.arrival;
}

}  // namespace ladder::engine
