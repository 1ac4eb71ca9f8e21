// Parses a batch of a JSON trace's events into compact events, with the
// Chrome trace format's and Kineto's vocabulary of fields and arguments.
// One per thread: it owns a simdjson parser and the batch-local string and
// lane tables.
#pragma once

#include <memory>

#include "import/json_batch.h"

namespace loupe::prof::import {

class EventParser {
 public:
  EventParser();
  ~EventParser();
  EventParser(const EventParser&) = delete;
  EventParser& operator=(const EventParser&) = delete;

  // Fills the batch's results; a malformed event sets batch.failed, with
  // the error and its offset, instead of throwing.
  void parse(Batch& batch);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loupe::prof::import
