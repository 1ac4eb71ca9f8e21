// The signature of a jitted call, and why a call missed the cache: the
// difference against the closest earlier signature, worded as JAX words
// its cache-miss explanations.
#pragma once

#include <string>
#include <vector>

#include "loupe/rt/tree.h"

namespace loupe::rt::compile {

struct LeafSig {
  bool is_array = true;
  Dtype dtype = Dtype::f32;
  Shape shape;
  Device device;
  StaticValue value;
  int arg = 0;
  bool operator==(const LeafSig&) const = default;
};

struct Signature {
  std::vector<LeafSig> leaves;
  std::vector<uint64_t> structure;
  size_t hash = 0;
  bool operator==(const Signature& o) const { return hash == o.hash && leaves == o.leaves && structure == o.structure; }
  // "f32[256,784], i32[256], training=true" (devices other than the default shown).
  std::string text(const std::vector<std::string>& arg_names) const;
};

Signature make_signature(const tree::Flat& flat);

// "arg 1 `x`: now f32[31,128], before f32[32,128]" (several differences
// joined by "; "), against the closest of `before`; empty if `before` is.
// `paths` is the call's arguments flattened with paths.
std::string explain_miss(const Signature& now, const std::vector<const Signature*>& before, const tree::Flat& paths,
                         const std::vector<std::string>& arg_names);

}  // namespace loupe::rt::compile
