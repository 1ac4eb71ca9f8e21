// The importers' string table: each distinct string once, numbered in the
// order it first comes. write_imported() hands the strings to the trace
// writer in that order, so the ids the importers put in rows are the ids
// the file holds.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

#include "loupe/prof/trace_rows.h"  // StringId

namespace loupe::prof::import {

class StringPool {
 public:
  StringPool() { intern(""); }  // id 0 is the empty string, as in the file
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  StringId intern(std::string_view text) {
    auto it = ids_.find(text);
    if (it != ids_.end()) return it->second;
    StringId id = StringId(texts_.size());
    const std::string& stored = texts_.emplace_back(text);  // a deque never moves what it holds
    ids_.emplace(stored, id);
    return id;
  }
  // The text of an interned string; empty for an id the pool never gave.
  std::string_view text(StringId id) const { return id < texts_.size() ? std::string_view(texts_[id]) : ""; }
  size_t size() const { return texts_.size(); }

 private:
  std::deque<std::string> texts_;
  std::unordered_map<std::string_view, StringId> ids_;
};

}  // namespace loupe::prof::import
