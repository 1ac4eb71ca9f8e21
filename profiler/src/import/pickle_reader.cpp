// The restricted unpickler behind PickleDoc: one pass over the opcodes with
// a stack of node indices, as Python's Unpickler does, where each value is a
// 16-byte node instead of an object.
//
// Memory is what limits a gigabyte snapshot, so before that pass a census
// counts the nodes, items and text the pickle will make and the document's
// arrays are reserved once: growing them by doubling would hold two copies
// at the moment of each copy. A container's items gather in a reusable
// buffer while it is open (on the stack, still being filled) and move next
// to each other into the shared items array when it is used, so that every
// container ends as one run of items.
#include "import/pickle_reader.h"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstring>
#include <new>

namespace loupe::prof::import {
namespace {

// The argument that follows an opcode: nothing, a little-endian number of
// 1, 2, 4 or 8 bytes, or a length of 1, 4 (unsigned or signed) or 8 bytes
// and that many bytes.
enum class Arg : uint8_t { none, u8, u16, u32, u64, len1, len4, slen4, len8 };

// What a snapshot may use an opcode for.
enum class Use : uint8_t {
  unknown,        // no opcode of any protocol (first: what a zeroed entry says)
  plain,          // builds plain data: read
  names_code,     // names a class or a function to call
  text_protocol,  // protocol 0's text forms, which no pickler of protocol 2 or later writes
  out_of_band,    // a buffer handed over beside the pickle (protocol 5)
};

// What an opcode adds to the document, counted ahead by the census. A wrong
// entry here costs only a reallocation, never a wrong value.
enum class Adds : uint8_t {
  nothing,
  node,    // a new node and a stack entry
  shared,  // a stack entry for a node made once (None, booleans, ints below 2^16, ())
  text,    // a new node whose argument goes to the text arena
  ref,     // a stack entry for a node that exists (DUP, the memo)
  memo,    // a memo entry
};

// Every opcode of pickle protocols 0 to 5, as Python's Lib/pickletools.py
// lists them: its byte, its name, its argument, its use, what it adds.
#define LOUPE_PICKLE_OPCODES(X)                        \
  X(0x80, PROTO, u8, plain, nothing)                   \
  X(0x95, FRAME, u64, plain, nothing)                  \
  X(0x2e, STOP, none, plain, nothing)                  \
  X(0x4e, NONE, none, plain, shared)                   \
  X(0x88, NEWTRUE, none, plain, shared)                \
  X(0x89, NEWFALSE, none, plain, shared)               \
  X(0x4a, BININT, u32, plain, node)                    \
  X(0x4b, BININT1, u8, plain, shared)                  \
  X(0x4d, BININT2, u16, plain, shared)                 \
  X(0x8a, LONG1, len1, plain, node)                    \
  X(0x8b, LONG4, slen4, plain, node)                   \
  X(0x47, BINFLOAT, u64, plain, node)                  \
  X(0x8c, SHORT_BINUNICODE, len1, plain, text)         \
  X(0x58, BINUNICODE, len4, plain, text)               \
  X(0x8d, BINUNICODE8, len8, plain, text)              \
  X(0x55, SHORT_BINSTRING, len1, plain, text)          \
  X(0x54, BINSTRING, slen4, plain, text)               \
  X(0x43, SHORT_BINBYTES, len1, plain, text)           \
  X(0x42, BINBYTES, len4, plain, text)                 \
  X(0x8e, BINBYTES8, len8, plain, text)                \
  X(0x96, BYTEARRAY8, len8, plain, text)               \
  X(0x29, EMPTY_TUPLE, none, plain, shared)            \
  X(0x85, TUPLE1, none, plain, node)                   \
  X(0x86, TUPLE2, none, plain, node)                   \
  X(0x87, TUPLE3, none, plain, node)                   \
  X(0x74, TUPLE, none, plain, node)                    \
  X(0x28, MARK, none, plain, nothing)                  \
  X(0x5d, EMPTY_LIST, none, plain, node)               \
  X(0x61, APPEND, none, plain, nothing)                \
  X(0x65, APPENDS, none, plain, nothing)               \
  X(0x6c, LIST, none, plain, node)                     \
  X(0x7d, EMPTY_DICT, none, plain, node)               \
  X(0x73, SETITEM, none, plain, nothing)               \
  X(0x75, SETITEMS, none, plain, nothing)              \
  X(0x64, DICT, none, plain, node)                     \
  X(0x8f, EMPTY_SET, none, plain, node)                \
  X(0x90, ADDITEMS, none, plain, nothing)              \
  X(0x91, FROZENSET, none, plain, node)                \
  X(0x30, POP, none, plain, nothing)                   \
  X(0x31, POP_MARK, none, plain, nothing)              \
  X(0x32, DUP, none, plain, ref)                       \
  X(0x71, BINPUT, u8, plain, memo)                     \
  X(0x72, LONG_BINPUT, u32, plain, memo)               \
  X(0x94, MEMOIZE, none, plain, memo)                  \
  X(0x68, BINGET, u8, plain, ref)                      \
  X(0x6a, LONG_BINGET, u32, plain, ref)                \
  X(0x63, GLOBAL, none, names_code, nothing)           \
  X(0x93, STACK_GLOBAL, none, names_code, nothing)     \
  X(0x52, REDUCE, none, names_code, nothing)           \
  X(0x62, BUILD, none, names_code, nothing)            \
  X(0x69, INST, none, names_code, nothing)             \
  X(0x6f, OBJ, none, names_code, nothing)              \
  X(0x81, NEWOBJ, none, names_code, nothing)           \
  X(0x92, NEWOBJ_EX, none, names_code, nothing)        \
  X(0x50, PERSID, none, names_code, nothing)           \
  X(0x51, BINPERSID, none, names_code, nothing)        \
  X(0x82, EXT1, none, names_code, nothing)             \
  X(0x83, EXT2, none, names_code, nothing)             \
  X(0x84, EXT4, none, names_code, nothing)             \
  X(0x97, NEXT_BUFFER, none, out_of_band, nothing)     \
  X(0x98, READONLY_BUFFER, none, out_of_band, nothing) \
  X(0x49, INT, none, text_protocol, nothing)           \
  X(0x4c, LONG, none, text_protocol, nothing)          \
  X(0x46, FLOAT, none, text_protocol, nothing)         \
  X(0x53, STRING, none, text_protocol, nothing)        \
  X(0x56, UNICODE, none, text_protocol, nothing)       \
  X(0x67, GET, none, text_protocol, nothing)           \
  X(0x70, PUT, none, text_protocol, nothing)

namespace op {
enum : uint8_t {
#define LOUPE_PICKLE_OP_CODE(code, name, arg, use, adds) name = code,
  LOUPE_PICKLE_OPCODES(LOUPE_PICKLE_OP_CODE)
#undef LOUPE_PICKLE_OP_CODE
};
}  // namespace op

struct OpInfo {
  const char* name = nullptr;
  Arg arg = Arg::none;
  Use use = Use::unknown;
  Adds adds = Adds::nothing;
};

constexpr std::array<OpInfo, 256> kOps = [] {
  std::array<OpInfo, 256> ops{};
#define LOUPE_PICKLE_OP_INFO(code, name, arg, use, adds) ops[code] = {#name, Arg::arg, Use::use, Adds::adds};
  LOUPE_PICKLE_OPCODES(LOUPE_PICKLE_OP_INFO)
#undef LOUPE_PICKLE_OP_INFO
  return ops;
}();

constexpr uint32_t kNoNode = UINT32_MAX;  // also why a document holds fewer than 2^32 nodes
constexpr size_t kMaxDepth = 100'000;
// Python's pickler numbers its memo 0, 1, 2, ...; an index may run this far
// ahead of the nodes read so far, and no further, so that a hostile index
// cannot make the memo huge.
constexpr uint64_t kMemoSlack = 256;
// The nodes `shared` makes at most: None, True, False, () and 2^16 ints.
constexpr uint64_t kSharedNodes = 4 + (uint64_t(1) << 16);

// The containers that APPEND(S), SETITEM(S) and ADDITEMS fill: the kind of
// their node, whether it is a set, and their name in a message.
struct Holder {
  PyKind kind;
  bool set;
  std::string_view name;
};
constexpr Holder kList{PyKind::list, false, "list"}, kDict{PyKind::dict, false, "dict"},
    kSet{PyKind::list, true, "set"};

// "is <phrase>, not <phrase>"
std::string_view kind_phrase(PyKind k) {
  switch (k) {
    case PyKind::none: return "None";
    case PyKind::boolean: return "a bool";
    case PyKind::integer: return "an int";
    case PyKind::big_integer: return "an int past 64 bits";
    case PyKind::real: return "a float";
    case PyKind::text: return "a str";
    case PyKind::bytes: return "a bytes";
    case PyKind::tuple: return "a tuple";
    case PyKind::list: return "a list";
    case PyKind::dict: return "a dict";
  }
  return "a value of no known kind";
}

// Portable whatever the machine's byte order; compilers make it one load.
uint64_t load_le(const uint8_t* p, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

uint64_t byteswap64(uint64_t v) { return __builtin_bswap64(v); }

}  // namespace

class PickleParser {
 public:
  PickleParser(std::string_view bytes, const std::function<void(size_t)>& consumed)
      : in_(reinterpret_cast<const uint8_t*>(bytes.data())), size_(bytes.size()), consumed_(consumed) {}

  PickleDoc run() {
    read_protocol();
    reserve_by_census();
    for (;;) {
      if (pos_ == size_) fail_at(size_, "the pickle ends before its STOP: it is truncated");
      op_pos_ = pos_;
      op_ = in_[pos_++];
      Operand a = operand(kOps[op_].arg);
      if (op_ == op::STOP) break;
      apply(a);
      if (pos_ >= release_at_) tell_consumed();
    }
    stop();
    if (pos_ != size_) fail_at(pos_, fmt::format("{} bytes follow STOP, where a pickle ends", size_ - pos_));
    return std::move(doc_);
  }

 private:
  using Node = PickleDoc::Node;

  // An opcode's argument: its number, or its length and bytes.
  struct Operand {
    uint64_t n = 0;
    const uint8_t* data = nullptr;
  };

  // The items of a list, set or dict still being filled.
  struct OpenContainer {
    std::vector<uint32_t> items;
    bool is_set = false;
  };

  // --- Errors: each names the byte of the opcode that was wrong.

  [[noreturn]] void fail_at(size_t offset, std::string_view what) const {
    throw PickleError(fmt::format("byte {}: {}", offset, what));
  }
  [[noreturn]] void fail(std::string_view what) const { fail_at(op_pos_, what); }
  const char* name() const { return kOps[op_].name; }

  [[noreturn]] void refuse() const {
    const OpInfo& info = kOps[op_];
    constexpr std::string_view kWhy = "a snapshot holds only plain data; loupe never runs a pickle's code";
    switch (info.use) {
      case Use::plain: fail(fmt::format("opcode {:#04x} ({}) has no reader: a bug in loupe", op_, info.name));
      case Use::names_code:
        fail(fmt::format("opcode {:#04x} ({}) names code and is refused: {}", op_, info.name, kWhy));
      case Use::text_protocol:
        fail(fmt::format("opcode {:#04x} ({}) of the text protocol 0 is refused: {}", op_, info.name, kWhy));
      case Use::out_of_band:
        fail(fmt::format("opcode {:#04x} ({}) takes a buffer from outside the pickle and is refused: {}", op_,
                         info.name, kWhy));
      case Use::unknown: fail(fmt::format("unknown opcode {:#04x} is refused: {}", op_, kWhy));
    }
    fail(fmt::format("opcode {:#04x} is refused", op_));
  }

  // --- Reading the bytes. Every length is checked against what is left
  // before it is used.

  void read_protocol() {
    if (size_ == 0 || in_[0] != op::PROTO) {
      fail_at(0, "not a pickle of protocol 2 or later (it does not begin with PROTO)");
    }
    if (size_ < 2) fail_at(0, "the pickle ends inside PROTO: it is truncated");
    if (in_[1] < 2 || in_[1] > 5) {
      fail_at(0, fmt::format("protocol {} is refused: loupe reads pickles of protocols 2 to 5", in_[1]));
    }
    pos_ = 2;
  }

  uint64_t fixed(size_t width) {
    if (width > size_ - pos_) {
      fail(fmt::format("{} needs {} bytes of argument but {} are left: the pickle is truncated", name(), width,
                       size_ - pos_));
    }
    uint64_t v = load_le(in_ + pos_, width);
    pos_ += width;
    return v;
  }

  Operand counted(uint64_t length) {
    if (length > size_ - pos_) {
      fail(fmt::format("{} says {} bytes follow but {} are left: the pickle is truncated", name(), length,
                       size_ - pos_));
    }
    Operand a{length, in_ + pos_};
    pos_ += length;
    return a;
  }

  Operand operand(Arg arg) {
    switch (arg) {
      case Arg::none: return {};
      case Arg::u8: return {fixed(1)};
      case Arg::u16: return {fixed(2)};
      case Arg::u32: return {fixed(4)};
      case Arg::u64: return {fixed(8)};
      case Arg::len1: return counted(fixed(1));
      case Arg::len4: return counted(fixed(4));
      case Arg::len8: return counted(fixed(8));
      case Arg::slen4: {
        auto length = int32_t(uint32_t(fixed(4)));
        if (length < 0) fail(fmt::format("{} says {} bytes follow: a length is never negative", name(), length));
        return counted(uint64_t(length));
      }
    }
    fail("an argument of no known shape");
  }

  // --- The census: what the pickle will make, for reserving it once. It
  // stops at the first opcode it cannot read; the real pass then reports
  // whatever is wrong at its place, after any earlier error.

  struct Census {
    uint64_t nodes = 0, shared = 0, pushes = 0, text_bytes = 0, memo = 0;
  };

  Census take_census() {
    Census c;
    try {
      while (pos_ < size_) {
        op_pos_ = pos_;
        op_ = in_[pos_++];
        const OpInfo& info = kOps[op_];
        if (info.use != Use::plain || op_ == op::STOP) break;
        Operand a = operand(info.arg);
        count(info.adds, a, c);
        if (pos_ >= release_at_) tell_consumed();
      }
    } catch (const PickleError&) {
    }
    return c;
  }

  static void count(Adds adds, const Operand& a, Census& c) {
    switch (adds) {
      case Adds::nothing: return;
      case Adds::node: ++c.nodes, ++c.pushes; return;
      case Adds::shared: ++c.shared, ++c.pushes; return;
      case Adds::text: ++c.nodes, ++c.pushes, c.text_bytes += a.n; return;
      case Adds::ref: ++c.pushes; return;
      case Adds::memo: ++c.memo; return;
    }
  }

  // Every kReleaseStep bytes read, and at the end of the census.
  void tell_consumed() {
    if (consumed_) consumed_(pos_);
    release_at_ = pos_ + kReleaseStep;
  }

  void reserve_by_census() {
    size_t start = pos_;
    Census c = take_census();
    tell_consumed();
    pos_ = start;
    release_at_ = start + kReleaseStep;
    // A pickle that makes nothing but garbage could ask for more than the
    // machine has; a reservation only saves copies, so do without it then.
    try {
      doc_.nodes_.reserve(c.nodes + std::min(c.shared, kSharedNodes));
      doc_.items_.reserve(c.pushes);
      doc_.text_.reserve(c.text_bytes);
      memo_.reserve(std::min(c.memo, c.nodes + kMemoSlack));
    } catch (const std::bad_alloc&) {
    }
  }

  // --- The opcodes that build plain data; any other is refused.

  void apply(const Operand& a) {
    if (!apply_value(a) && !apply_container(a)) refuse();
  }

  // The opcodes that push one value; false for any other.
  bool apply_value(const Operand& a) {
    switch (op_) {
      case op::PROTO: fail("PROTO again: a pickle names its protocol once, at its start");
      case op::FRAME: check_frame(a.n); return true;
      case op::NONE: push(shared(none_, PyKind::none, 0)); return true;
      case op::NEWTRUE: push(shared(true_, PyKind::boolean, 1)); return true;
      case op::NEWFALSE: push(shared(false_, PyKind::boolean, 0)); return true;
      case op::BININT: push(integer(int32_t(uint32_t(a.n)))); return true;
      case op::BININT1:
      case op::BININT2: push(small_int(a.n)); return true;
      case op::LONG1:
      case op::LONG4: push(long_integer(a)); return true;
      case op::BINFLOAT: push(add_node(PyKind::real, 0, byteswap64(a.n))); return true;  // big-endian
      case op::SHORT_BINUNICODE:
      case op::BINUNICODE:
      case op::BINUNICODE8:
      case op::SHORT_BINSTRING:
      case op::BINSTRING: push(text(PyKind::text, a)); return true;
      case op::SHORT_BINBYTES:
      case op::BINBYTES:
      case op::BINBYTES8:
      case op::BYTEARRAY8: push(text(PyKind::bytes, a)); return true;
      case op::EMPTY_TUPLE: push(shared(empty_tuple_, PyKind::tuple, 0)); return true;
      default: return false;
    }
  }

  // The opcodes that build containers, move values on the stack or use the
  // memo; false for any other.
  bool apply_container(const Operand& a) {
    switch (op_) {
      case op::TUPLE1: push(sealed(PyKind::tuple, need(1))); return true;
      case op::TUPLE2: push(sealed(PyKind::tuple, need(2))); return true;
      case op::TUPLE3: push(sealed(PyKind::tuple, need(3))); return true;
      case op::TUPLE: push(sealed(PyKind::tuple, pop_mark())); return true;
      case op::FROZENSET: push(sealed(PyKind::list, pop_mark())); return true;
      case op::MARK: push_mark(); return true;
      case op::EMPTY_LIST: push(open(PyKind::list, false, stack_.size())); return true;
      case op::EMPTY_DICT: push(open(PyKind::dict, false, stack_.size())); return true;
      case op::EMPTY_SET: push(open(PyKind::list, true, stack_.size())); return true;
      case op::LIST: push(open(PyKind::list, false, pop_mark())); return true;
      case op::DICT: push(open(PyKind::dict, false, pairs(pop_mark()))); return true;
      case op::APPEND: add_items(need(2) + 1, kList); return true;
      case op::SETITEM: add_items(need(3) + 1, kDict); return true;
      case op::APPENDS: add_items(mark_above_container(), kList); return true;
      case op::SETITEMS: add_items(mark_above_container(), kDict); return true;
      case op::ADDITEMS: add_items(mark_above_container(), kSet); return true;
      case op::POP: pop(); return true;
      case op::POP_MARK: discard(pop_mark()); return true;
      case op::DUP: push(stack_[need(1)]); return true;
      case op::BINPUT:
      case op::LONG_BINPUT: put(a.n); return true;
      case op::MEMOIZE: put(memo_count_); return true;
      case op::BINGET:
      case op::LONG_BINGET: get(a.n); return true;
      default: return false;
    }
  }

  void check_frame(uint64_t length) {
    if (length > size_ - pos_) {
      fail(fmt::format("FRAME of {} bytes but {} are left: the pickle is truncated", length, size_ - pos_));
    }
  }

  void stop() {
    if (!marks_.empty()) fail("STOP inside a MARK that no opcode closed");
    if (stack_.size() != 1) fail(fmt::format("STOP with {} values on the stack, not 1", stack_.size()));
    doc_.root_ = stack_[0];
    use(doc_.root_);
  }

  // --- Values.

  uint32_t add_node(PyKind kind, uint32_t count, uint64_t payload) {
    if (doc_.nodes_.size() >= kNoNode) fail("the pickle holds 2^32 values or more, past what loupe reads");
    doc_.nodes_.push_back(Node{kind, count, payload});
    return uint32_t(doc_.nodes_.size() - 1);
  }

  // Values that are alike whatever their place (None, True, 7, ()) are one
  // node, made the first time.
  uint32_t shared(uint32_t& node, PyKind kind, uint64_t payload) {
    if (node == kNoNode) node = add_node(kind, 0, payload);
    return node;
  }

  uint32_t integer(int64_t v) { return add_node(PyKind::integer, 0, uint64_t(v)); }

  // Sizes, line numbers and streams repeat, and are most of a snapshot's ints.
  uint32_t small_int(uint64_t v) {
    if (small_ints_.empty()) small_ints_.assign(size_t(1) << 16, kNoNode);
    return shared(small_ints_[v], PyKind::integer, v);
  }

  // LONG1 and LONG4: little-endian two's complement of any length. Python
  // writes the fewest bytes, but a longer form with sign bytes only is the
  // same number and still fits.
  uint32_t long_integer(const Operand& a) {
    if (a.n == 0) return integer(0);
    size_t width = std::min<size_t>(a.n, 8);
    uint64_t v = load_le(a.data, width);
    bool negative = (a.data[width - 1] & 0x80) != 0;
    if (width < 8 && negative) v |= ~uint64_t(0) << (8 * width);
    uint8_t sign_byte = negative ? 0xff : 0x00;
    for (uint64_t i = 8; i < a.n; ++i) {
      if (a.data[i] != sign_byte) return add_node(PyKind::big_integer, 0, 0);
    }
    return integer(int64_t(v));
  }

  uint32_t text(PyKind kind, const Operand& a) {
    if (a.n > UINT32_MAX) fail(fmt::format("{} of {} bytes: loupe reads values shorter than 4 GiB", name(), a.n));
    uint64_t offset = doc_.text_.size();
    doc_.text_.append(reinterpret_cast<const char*>(a.data), a.n);
    return add_node(kind, uint32_t(a.n), offset);
  }

  // A tuple or frozenset of the values from `from` up: complete at once.
  uint32_t sealed(PyKind kind, size_t from) {
    use_from(from);
    uint64_t offset = doc_.items_.size();
    doc_.items_.insert(doc_.items_.end(), stack_.begin() + ptrdiff_t(from), stack_.end());
    auto count = uint32_t(stack_.size() - from);  // below kMaxDepth
    stack_.resize(from);
    return add_node(kind, count, offset);
  }

  // A list, set or dict holding the values from `from` up, open to more.
  uint32_t open(PyKind kind, bool is_set, size_t from) {
    use_from(from);
    uint32_t slot = take_buffer();
    OpenContainer& c = open_[slot];
    c.is_set = is_set;
    c.items.assign(stack_.begin() + ptrdiff_t(from), stack_.end());
    stack_.resize(from);
    uint32_t v = add_node(kind, slot, 0);  // the count is the buffer's until sealed
    set_open(v, true);
    return v;
  }

  uint32_t take_buffer() {
    if (!free_buffers_.empty()) {
      uint32_t slot = free_buffers_.back();
      free_buffers_.pop_back();
      return slot;
    }
    open_.emplace_back();
    return uint32_t(open_.size() - 1);
  }

  size_t pairs(size_t from) {
    if ((stack_.size() - from) % 2 != 0) fail(fmt::format("{} with an odd number of keys and values", name()));
    return from;
  }

  // --- The stack. A MARK hides what is below it, as in Python, where each
  // MARK starts a new stack.

  size_t base() const { return marks_.empty() ? 0 : marks_.back(); }

  void push(uint32_t v) {
    if (stack_.size() >= kMaxDepth) fail("more than 100,000 values wait on the stack: the pickle nests too deep");
    stack_.push_back(v);
  }

  void push_mark() {
    if (marks_.size() >= kMaxDepth) fail("more than 100,000 MARKs are open: the pickle nests too deep");
    marks_.push_back(uint32_t(stack_.size()));
  }

  // Where the last `n` values start, once they are known to be above the
  // last MARK.
  size_t need(size_t n) const {
    size_t there = stack_.size() - base();
    if (there < n) fail(fmt::format("{} needs {} values above the last MARK but finds {}", name(), n, there));
    return stack_.size() - n;
  }

  size_t pop_mark() {
    if (marks_.empty()) fail(fmt::format("{} with no MARK before it", name()));
    size_t mark = marks_.back();
    marks_.pop_back();
    return mark;
  }

  size_t mark_above_container() {
    size_t mark = pop_mark();
    if (mark == base()) fail(fmt::format("{} finds no container below its MARK", name()));
    return mark;
  }

  void pop() {
    if (stack_.size() > base()) {
      use(stack_.back());
      stack_.pop_back();
    } else if (!marks_.empty()) {
      marks_.pop_back();  // Python's POP drops an empty MARK too
    } else {
      fail("POP of an empty stack");
    }
  }

  void discard(size_t from) {
    use_from(from);
    stack_.resize(from);
  }

  // --- Containers: a value taken off the stack is used, and a container
  // used is sealed: its items move to the document's items array in one run.

  // One bit a node, rather than a look at the node: every value used is
  // asked, and the nodes of values taken from the memo lie far apart.
  bool is_open(uint32_t v) const {
    size_t word = v / 64;
    return word < open_bits_.size() && ((open_bits_[word] >> (v % 64)) & 1) != 0;
  }

  void set_open(uint32_t v, bool now_open) {
    size_t word = v / 64;
    if (word >= open_bits_.size()) open_bits_.resize(word + 1);
    uint64_t bit = uint64_t(1) << (v % 64);
    open_bits_[word] = now_open ? open_bits_[word] | bit : open_bits_[word] & ~bit;
  }

  void use(uint32_t v) {
    if (is_open(v)) seal(v);
  }

  void use_from(size_t from) {
    for (size_t i = from; i < stack_.size(); ++i) use(stack_[i]);
  }

  void seal(uint32_t v) {
    Node& n = doc_.nodes_[v];
    uint32_t slot = n.count;
    std::vector<uint32_t>& items = open_[slot].items;
    uint64_t count = n.kind == PyKind::dict ? items.size() / 2 : items.size();
    if (count > UINT32_MAX) fail("a container of 2^32 items or more, past what loupe reads");
    n.payload = doc_.items_.size();
    n.count = uint32_t(count);
    doc_.items_.insert(doc_.items_.end(), items.begin(), items.end());
    items.clear();
    free_buffers_.push_back(slot);
    set_open(v, false);
  }

  // APPEND(S), SETITEM(S), ADDITEMS: the values from `from` up go into the
  // container just below them. They are used first, so that a container
  // given to itself is sealed by then and refused rather than filled.
  void add_items(size_t from, const Holder& holder) {
    if (holder.kind == PyKind::dict) pairs(from);
    use_from(from);
    uint32_t container = stack_[from - 1];
    check_holder(container, holder);
    std::vector<uint32_t>& items = open_[doc_.nodes_[container].count].items;
    items.insert(items.end(), stack_.begin() + ptrdiff_t(from), stack_.end());
    stack_.resize(from);
  }

  void check_holder(uint32_t container, const Holder& holder) const {
    const Node& n = doc_.nodes_[container];
    if (n.kind != holder.kind) fail(fmt::format("{} onto {}, not a {}", name(), kind_phrase(n.kind), holder.name));
    if (!is_open(container)) {
      fail(
          fmt::format("{} changes a {} after it was used: a container changed after it was used, such as one "
                      "that holds itself, is refused",
                      name(), holder.name));
    }
    bool is_set = open_[n.count].is_set;
    if (is_set != holder.set) {
      fail(fmt::format("{} onto a {}, not a {}", name(), is_set ? "set" : "list", holder.name));
    }
  }

  // --- The memo: indices to nodes, so that a value retrieved is shared.

  void put(uint64_t index) {
    uint32_t v = stack_[need(1)];
    if (index >= memo_.size()) {
      if (index >= doc_.nodes_.size() + kMemoSlack) {
        fail(fmt::format("{} of memo index {}, far past the {} values so far (Python numbers its memo 0, 1, 2, ...)",
                         name(), index, doc_.nodes_.size()));
      }
      memo_.resize(index + 1, kNoNode);
    }
    if (memo_[index] == kNoNode) ++memo_count_;
    memo_[index] = v;
  }

  void get(uint64_t index) {
    if (index >= memo_.size() || memo_[index] == kNoNode) {
      fail(fmt::format("{} of memo index {}, which no opcode stored", name(), index));
    }
    push(memo_[index]);
  }

  // How often the caller hears how far the reading has come.
  static constexpr size_t kReleaseStep = size_t(32) << 20;

  const uint8_t* in_;
  size_t size_;
  const std::function<void(size_t)>& consumed_;
  size_t release_at_ = kReleaseStep;
  size_t pos_ = 0;
  size_t op_pos_ = 0;  // where the opcode being read starts
  uint8_t op_ = 0;

  PickleDoc doc_;
  std::vector<uint32_t> stack_;
  std::vector<uint32_t> marks_;  // stack sizes at each open MARK
  std::vector<uint32_t> memo_;   // memo index -> node, kNoNode where never stored
  uint64_t memo_count_ = 0;      // indices stored: MEMOIZE's next index
  std::vector<OpenContainer> open_;
  std::vector<uint32_t> free_buffers_;  // entries of open_ free for the next container
  std::vector<uint64_t> open_bits_;     // which nodes are open containers
  uint32_t none_ = kNoNode, true_ = kNoNode, false_ = kNoNode, empty_tuple_ = kNoNode;
  std::vector<uint32_t> small_ints_;  // BININT1's and BININT2's values, once the first is read
};

PickleDoc PickleDoc::read(std::string_view bytes, const std::function<void(size_t)>& consumed) {
  return PickleParser(bytes, consumed).run();
}

// --- Accessors.

const PickleDoc::Node& PickleDoc::node(PyRef v) const {
  if (v.node >= nodes_.size()) {
    throw PickleError(fmt::format("pickle value {} does not exist: the document has {}", v.node, nodes_.size()));
  }
  return nodes_[v.node];
}

const PickleDoc::Node& PickleDoc::node(PyRef v, PyKind kind, std::string_view wanted) const {
  const Node& n = node(v);
  if (n.kind != kind) {
    throw PickleError(fmt::format("pickle value {} is {}, not {}", v.node, kind_phrase(n.kind), wanted));
  }
  return n;
}

PyRef PickleDoc::root() const { return {root_}; }

PyKind PickleDoc::kind(PyRef v) const { return node(v).kind; }

bool PickleDoc::boolean(PyRef v) const { return node(v, PyKind::boolean, "a bool").payload != 0; }

int64_t PickleDoc::integer(PyRef v) const { return int64_t(node(v, PyKind::integer, "an int").payload); }

double PickleDoc::real(PyRef v) const {
  const Node& n = node(v);
  if (n.kind == PyKind::integer) return double(int64_t(n.payload));
  return std::bit_cast<double>(node(v, PyKind::real, "a float or an int").payload);
}

std::string_view PickleDoc::text(PyRef v) const {
  const Node& n = node(v);
  if (n.kind != PyKind::text && n.kind != PyKind::bytes) node(v, PyKind::text, "a str or bytes");  // throws
  return std::string_view(text_).substr(n.payload, n.count);
}

size_t PickleDoc::size(PyRef v) const {
  const Node& n = node(v);
  bool container = n.kind == PyKind::tuple || n.kind == PyKind::list || n.kind == PyKind::dict;
  return container ? n.count : 0;
}

PyRef PickleDoc::item(PyRef v, size_t i) const {
  const Node& n = node(v);
  if (n.kind == PyKind::dict) return {items_[n.payload + 2 * checked_index(v, n, i) + 1]};
  if (n.kind != PyKind::tuple && n.kind != PyKind::list) node(v, PyKind::list, "a tuple, list or dict");  // throws
  return {items_[n.payload + checked_index(v, n, i)]};
}

PyRef PickleDoc::key(PyRef dict, size_t i) const {
  const Node& n = node(dict, PyKind::dict, "a dict");
  return {items_[n.payload + 2 * checked_index(dict, n, i)]};
}

size_t PickleDoc::checked_index(PyRef v, const Node& n, size_t i) const {
  if (i >= n.count) {
    throw PickleError(
        fmt::format("pickle value {} ({}) has {} items, not an item {}", v.node, kind_phrase(n.kind), n.count, i));
  }
  return i;
}

std::optional<PyRef> PickleDoc::find(PyRef dict, std::string_view key) const {
  const Node& d = node(dict);
  if (d.kind != PyKind::dict) return std::nullopt;
  for (size_t i = d.count; i-- > 0;) {  // the last of a repeated key, as Python keeps
    const Node& k = nodes_[items_[d.payload + 2 * i]];
    if (k.kind == PyKind::text && k.count == key.size() &&
        std::memcmp(text_.data() + k.payload, key.data(), key.size()) == 0) {
      return PyRef{items_[d.payload + 2 * i + 1]};
    }
  }
  return std::nullopt;
}

size_t PickleDoc::node_count() const { return nodes_.size(); }

}  // namespace loupe::prof::import
