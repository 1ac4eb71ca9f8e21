// The pickle reader on any bytes. Bad input may only end in a PickleError;
// a document it accepts is walked whole (every node once, with a worklist,
// since a document may share values and nest deeper than any call stack)
// through every accessor, each of which must answer or throw PickleError.
#include <vector>

#include "fuzz_input.h"
#include "import/pickle_reader.h"

namespace {

using loupe::prof::import::PickleDoc;
using loupe::prof::import::PickleError;
using loupe::prof::import::PyKind;
using loupe::prof::import::PyRef;

// Calls `read`, which may answer or throw PickleError, nothing else.
template <typename Read>
void answer_or_refuse(Read read) {
  try {
    (void)read();
  } catch (const PickleError&) {
  }
}

// A scalar's value by each accessor, right or wrong for its kind.
void read_scalar(const PickleDoc& doc, PyRef v) {
  answer_or_refuse([&] { return doc.boolean(v); });
  answer_or_refuse([&] { return doc.integer(v); });
  answer_or_refuse([&] { return doc.real(v); });
  answer_or_refuse([&] { return doc.text(v); });
}

// A container's items go on the worklist; a dict's str keys are found back.
void read_container(const PickleDoc& doc, PyRef v, std::vector<PyRef>& work) {
  size_t n = doc.size(v);
  bool dict = doc.kind(v) == PyKind::dict;
  for (size_t i = 0; i < n; ++i) {
    work.push_back(doc.item(v, i));
    if (!dict) continue;
    PyRef key = doc.key(v, i);
    work.push_back(key);
    if (doc.kind(key) == PyKind::text) (void)doc.find(v, doc.text(key));
  }
  answer_or_refuse([&] { return doc.item(v, n); });  // one past the end
}

void walk(const PickleDoc& doc) {
  std::vector<bool> seen(doc.node_count());
  std::vector<PyRef> work = {doc.root()};
  while (!work.empty()) {
    PyRef v = work.back();
    work.pop_back();
    if (seen.at(v.node)) continue;
    seen[v.node] = true;
    read_scalar(doc, v);
    read_container(doc, v, work);
    (void)doc.find(v, "frames");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    walk(PickleDoc::read(std::string_view(reinterpret_cast<const char*>(data), size)));
  } catch (const PickleError&) {
  }
  return 0;
}
