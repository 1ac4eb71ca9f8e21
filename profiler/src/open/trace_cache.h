// The cache of imported traces: a folder of loupe trace files, each the
// model of one foreign trace, named by the content it was imported from
// (its hash and size) and by the versions of the trace format and of loupe
// that imported it, so that a new loupe never reads an old mapping. A
// profile run of several hosts is kept as a job's folder the same way.
//
// An entry is written like every other trace (trace_writer.h: beside its
// name, renamed into place when complete) and read like every other
// (load_trace's checks): one that fails them is removed and rebuilt,
// never trusted. Entries are used most recently first; past the size cap
// the least recently used go. docs/import.md, "The cache".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "loupe/prof/trace_model.h"
#include "open/content_hash.h"

namespace loupe::prof::open {

class TraceCache {
 public:
  TraceCache(std::string dir, uint64_t max_bytes);

  const std::string& dir() const { return dir_; }
  // Creates the folder if needed: "" when entries can be written there,
  // else why not ("/x/cache: cannot create: Permission denied").
  std::string usable() const;

  // The entry of a trace with this content (a file), or of a profile
  // run whose hosts' contents combine into it (a job's folder).
  std::string trace_entry(const ContentHash& content) const;
  std::string job_entry(const ContentHash& content) const;

  // The model the entry holds, or nothing when there is none or it is not
  // a valid trace (it is then removed). A hit counts as a use.
  std::optional<TraceModel> read_trace(const std::string& entry) const;
  // Whether the entry is a job loupe can read (one that is not is removed).
  bool has_job(const std::string& entry) const;

  // Writes `m` as the entry, then keeps the cap. Throws StoreError or
  // FileError; the entry is then absent, never partial.
  void write_trace(const TraceModel& m, const std::string& entry) const;
  // Removes the least recently used entries until the folder holds at most
  // max_bytes, sparing `keep`; temporary files of writes that died go too.
  void keep_cap(const std::string& keep) const;

 private:
  std::string dir_;
  uint64_t max_bytes_;
};

}  // namespace loupe::prof::open
