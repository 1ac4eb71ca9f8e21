// Python pickles of plain data, read without running any of their code.
//
// A PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) is a pickle
// that a stranger sends, and unpickling one with Python's pickle.load runs
// whatever functions it names. This reader knows only the opcodes of
// protocols 2 to 5 that build plain data: None, booleans, integers, floats,
// str and bytes, tuples, lists, dicts, sets and the memo. A pickle that names
// a class or a function (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ,
// NEWOBJ, NEWOBJ_EX, PERSID, BINPERSID, EXT1/2/4) or that uses out-of-band
// buffers is refused before anything of it is used. Protocol 2 has no
// opcode for a set or bytes, so Python writes them there as calls, which
// are refused too; Python's default protocol (4 from Python 3.8) writes
// them as data.
//
// The document is stored flat for files of gigabytes: one 16-byte node per
// value, the items of each container in one shared array, the text in one
// arena. The memo shares values (a value retrieved twice is one node), so
// a document is a graph, though never a cycle: a container that holds
// itself, directly or not, is changed after it is used, which is refused.
// It can still nest as deep as its bytes allow, so nothing here walks the
// graph recursively, and a reader of a document follows only the shape it
// expects.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace loupe::prof::import {

// What was wrong with a pickle, and at which byte.
class PickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class PyKind : uint8_t {
  none,
  boolean,
  integer,      // fits in int64
  big_integer,  // does not: its value is not kept
  real,
  text,   // str (UTF-8 as pickled)
  bytes,  // bytes and bytearray
  tuple,
  list,  // lists, sets and frozensets
  dict,
};

// A value of a PickleDoc.
struct PyRef {
  uint32_t node = 0;
};

class PickleDoc {
 public:
  // Reads a whole pickle. Throws PickleError naming the byte offset and what
  // was wrong: not a pickle, a protocol other than 2 to 5, an opcode that
  // names code or is unknown, a truncated file, bytes after STOP, a
  // malformed stack (a MARK missing, items of the wrong kind), a memo
  // index never stored, a container changed after it was used (Python's
  // pickler does that only for a container that holds itself), or limits
  // passed (100,000 values or MARKs waiting on the stack, 2^32 nodes, a str
  // or bytes of 4 GiB). None, True, False, () and each int below 2^16 (as
  // BININT1 and BININT2 write them) are one node wherever they appear.
  // `consumed`, when given, is told now and then how far the reading has
  // come (it reads the bytes twice, counting first): the caller may let go
  // of the bytes before that offset, which are not read again in that pass.
  static PickleDoc read(std::string_view bytes, const std::function<void(size_t)>& consumed = {});

  PyRef root() const;
  PyKind kind(PyRef v) const;

  // The value of a scalar; each throws PickleError when `v` is not of its kind.
  bool boolean(PyRef v) const;
  int64_t integer(PyRef v) const;
  double real(PyRef v) const;            // a float, or an integer converted
  std::string_view text(PyRef v) const;  // text or bytes

  // Items of a tuple or list, pairs of a dict; 0 for a scalar.
  size_t size(PyRef v) const;
  // The i-th item of a tuple or list, or the i-th value of a dict.
  PyRef item(PyRef v, size_t i) const;
  // The i-th key of a dict.
  PyRef key(PyRef dict, size_t i) const;
  // The value under a str key of a dict (the last, if the pickle repeats
  // it); nullopt when absent or when `dict` is not a dict. Linear in the
  // dict's size: for the small dicts of records.
  std::optional<PyRef> find(PyRef dict, std::string_view key) const;

  size_t node_count() const;

 private:
  // One value: its kind, its length (text, bytes, items or pairs), and its
  // payload (an integer's or a float's bits, or where its text or items
  // start).
  struct Node {
    PyKind kind = PyKind::none;
    uint32_t count = 0;
    uint64_t payload = 0;
  };
  const Node& node(PyRef v) const;
  const Node& node(PyRef v, PyKind kind, std::string_view wanted) const;
  size_t checked_index(PyRef v, const Node& n, size_t i) const;

  std::vector<Node> nodes_;
  std::vector<uint32_t> items_;  // containers' items (a dict: key, value, key, value, ...)
  std::string text_;             // the text and bytes of every str and bytes
  uint32_t root_ = 0;
  friend class PickleParser;
};

}  // namespace loupe::prof::import
