// The restricted unpickler on pickles written by Python's own pickle (the
// hex of pickle.dumps, with the expression and protocol beside each, so the
// expected values do not come from the reader), on larger ones built here
// the way Python's pickler writes them, and on every kind of input it must
// refuse: code, old protocols, truncation, bytes after STOP, a memo index
// never stored, a list that holds itself, nesting past the limit.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "import/pickle_reader.h"

using loupe::prof::import::PickleDoc;
using loupe::prof::import::PickleError;
using loupe::prof::import::PyKind;
using loupe::prof::import::PyRef;

namespace {

std::string from_hex(std::string_view hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += char(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return bytes;
}

// The message of the PickleError that reading `bytes` throws, or "" when
// it reads.
std::string error_of(const std::string& bytes) {
  try {
    PickleDoc::read(bytes);
  } catch (const PickleError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_REFUSED(bytes, part) EXPECT_THAT_ERROR_HAS(error_of(bytes), part)
#define EXPECT_THAT_ERROR_HAS(message, part) \
  EXPECT_NE((message).find(part), std::string::npos) << "message: " << (message)

// Opcodes written by hand, for the pickles Python's pickler never writes.
struct Ops {
  std::string bytes = "\x80\x02";  // PROTO 2
  Ops& op(uint8_t code) {
    bytes += char(code);
    return *this;
  }
  Ops& le(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) bytes += char((v >> (8 * i)) & 0xff);
    return *this;
  }
  Ops& repeat(uint8_t code, size_t n) {
    bytes.append(n, char(code));
    return *this;
  }
  // An int as Python's save_long writes it for protocol 2.
  Ops& integer(uint32_t v) {
    if (v < 256) return op('K').le(v, 1);
    if (v < 65536) return op('M').le(v, 2);
    return op('J').le(v, 4);
  }
  Ops& str(std::string_view s) {
    op('X').le(s.size(), 4);
    bytes += s;
    return *this;
  }
  Ops& put(uint32_t index) { return index < 256 ? op('q').le(index, 1) : op('r').le(index, 4); }
  std::string stop() { return bytes + "."; }
};

// The snapshot-like dict below, pickled with each protocol:
//   snap = {'segments': [{'address': 139637976727552, 'total_size': 2097152, 'stream': 0,
//                         'blocks': [{'size': 512, 'state': 'active_allocated'}]}],
//           'device_traces': [[{'action': 'alloc', 'addr': 139637976727552, 'size': 512, 'stream': 0,
//                               'time_us': 1700000000000000,
//                               'frames': [{'filename': 'train.py', 'line': 42, 'name': 'step'}]}]],
//           'ratio': 0.25, 'ok': True, 'bad': False, 'none': None}
//   pickle.dumps(snap, protocol=N).hex()
const char* const kSnapshotV2 =
    "80027d71002858080000007365676d656e747371015d71027d71032858070000006164647265737371048a0600000000007f580a0000"
    "00746f74616c5f73697a6571054a00002000580600000073747265616d71064b005806000000626c6f636b7371075d71087d71092858"
    "0400000073697a65710a4d000258050000007374617465710b58100000006163746976655f616c6c6f6361746564710c75617561580d"
    "0000006465766963655f747261636573710d5d710e5d710f7d7110285806000000616374696f6e71115805000000616c6c6f63711258"
    "040000006164647271138a0600000000007f680a4d000268064b00580700000074696d655f757371148a0700401e18240a0658060000"
    "006672616d657371155d71167d711728580800000066696c656e616d6571185808000000747261696e2e7079711958040000006c696e"
    "65711a4b2a58040000006e616d65711b580400000073746570711c75617561615805000000726174696f711d473fd000000000000058"
    "020000006f6b711e885803000000626164711f8958040000006e6f6e6571204e752e";
const char* const kSnapshotV4 =
    "80049534010000000000007d94288c087365676d656e7473945d947d94288c0761646472657373948a0600000000007f8c0a746f7461"
    "6c5f73697a65944a000020008c0673747265616d944b008c06626c6f636b73945d947d94288c0473697a65944d00028c057374617465"
    "948c106163746976655f616c6c6f636174656494756175618c0d6465766963655f747261636573945d945d947d94288c06616374696f"
    "6e948c05616c6c6f63948c0461646472948a0600000000007f680a4d000268064b008c0774696d655f7573948a0700401e18240a068c"
    "066672616d6573945d947d94288c0866696c656e616d65948c08747261696e2e7079948c046c696e65944b2a8c046e616d65948c0473"
    "7465709475617561618c05726174696f94473fd00000000000008c026f6b94888c0362616494898c046e6f6e65944e752e";
const char* const kSnapshotV5 =
    "80059534010000000000007d94288c087365676d656e7473945d947d94288c0761646472657373948a0600000000007f8c0a746f7461"
    "6c5f73697a65944a000020008c0673747265616d944b008c06626c6f636b73945d947d94288c0473697a65944d00028c057374617465"
    "948c106163746976655f616c6c6f636174656494756175618c0d6465766963655f747261636573945d945d947d94288c06616374696f"
    "6e948c05616c6c6f63948c0461646472948a0600000000007f680a4d000268064b008c0774696d655f7573948a0700401e18240a068c"
    "066672616d6573945d947d94288c0866696c656e616d65948c08747261696e2e7079948c046c696e65944b2a8c046e616d65948c0473"
    "7465709475617561618c05726174696f94473fd00000000000008c026f6b94888c0362616494898c046e6f6e65944e752e";

PyRef at(const PickleDoc& doc, PyRef dict, std::string_view key) {
  std::optional<PyRef> v = doc.find(dict, key);
  EXPECT_TRUE(v.has_value()) << "no key " << key;
  return v.value_or(PyRef{});
}

// ---------------------------------------------------------------------------
// What Python writes, read back

TEST(PickleRead, SnapshotOfEachProtocol) {
  // Protocol 3 only added bytes, so for this snapshot Python writes
  // protocol 2's opcodes under PROTO 3 ("8003" then kSnapshotV2's rest).
  const std::string v3 = "8003" + std::string(kSnapshotV2 + 4);
  for (const char* hex : {kSnapshotV2, v3.c_str(), kSnapshotV4, kSnapshotV5}) {
    SCOPED_TRACE(std::string(hex, 4));
    PickleDoc doc = PickleDoc::read(from_hex(hex));
    PyRef root = doc.root();
    ASSERT_EQ(doc.kind(root), PyKind::dict);
    EXPECT_EQ(doc.size(root), 6u);
    EXPECT_EQ(doc.text(doc.key(root, 0)), "segments");

    PyRef segments = at(doc, root, "segments");
    ASSERT_EQ(doc.kind(segments), PyKind::list);
    ASSERT_EQ(doc.size(segments), 1u);
    PyRef segment = doc.item(segments, 0);
    EXPECT_EQ(doc.integer(at(doc, segment, "address")), 139637976727552);
    EXPECT_EQ(doc.integer(at(doc, segment, "total_size")), 2097152);
    EXPECT_EQ(doc.integer(at(doc, segment, "stream")), 0);
    PyRef block = doc.item(at(doc, segment, "blocks"), 0);
    EXPECT_EQ(doc.integer(at(doc, block, "size")), 512);
    EXPECT_EQ(doc.text(at(doc, block, "state")), "active_allocated");

    PyRef traces = at(doc, root, "device_traces");
    ASSERT_EQ(doc.size(traces), 1u);
    ASSERT_EQ(doc.size(doc.item(traces, 0)), 1u);
    PyRef event = doc.item(doc.item(traces, 0), 0);
    EXPECT_EQ(doc.text(at(doc, event, "action")), "alloc");
    EXPECT_EQ(doc.integer(at(doc, event, "addr")), 139637976727552);
    EXPECT_EQ(doc.integer(at(doc, event, "size")), 512);
    EXPECT_EQ(doc.integer(at(doc, event, "time_us")), 1700000000000000);
    PyRef frame = doc.item(at(doc, event, "frames"), 0);
    EXPECT_EQ(doc.text(at(doc, frame, "filename")), "train.py");
    EXPECT_EQ(doc.integer(at(doc, frame, "line")), 42);
    EXPECT_EQ(doc.text(at(doc, frame, "name")), "step");

    EXPECT_EQ(doc.real(at(doc, root, "ratio")), 0.25);
    EXPECT_TRUE(doc.boolean(at(doc, root, "ok")));
    EXPECT_FALSE(doc.boolean(at(doc, root, "bad")));
    EXPECT_EQ(doc.kind(at(doc, root, "none")), PyKind::none);
    EXPECT_FALSE(doc.find(root, "absent").has_value());
    EXPECT_FALSE(doc.find(segments, "segments").has_value());  // not a dict
  }
}

TEST(PickleRead, NestedDictListTuple) {
  // pickle.dumps({'t': (1, (2, 3), [4, {'k': ()}]), 'e': [], 'f': {}}, protocol=2)
  PickleDoc doc = PickleDoc::read(from_hex(
      "80027d71002858010000007471014b014b024b038671025d7103284b047d710458010000006b710529736587710658010000006571"
      "075d710858010000006671097d710a752e"));
  PyRef t = at(doc, doc.root(), "t");
  ASSERT_EQ(doc.kind(t), PyKind::tuple);
  ASSERT_EQ(doc.size(t), 3u);
  EXPECT_EQ(doc.integer(doc.item(t, 0)), 1);
  PyRef pair = doc.item(t, 1);
  EXPECT_EQ(doc.kind(pair), PyKind::tuple);
  EXPECT_EQ(doc.integer(doc.item(pair, 1)), 3);
  PyRef list = doc.item(t, 2);
  ASSERT_EQ(doc.kind(list), PyKind::list);
  EXPECT_EQ(doc.integer(doc.item(list, 0)), 4);
  PyRef empty = at(doc, doc.item(list, 1), "k");
  EXPECT_EQ(doc.kind(empty), PyKind::tuple);
  EXPECT_EQ(doc.size(empty), 0u);
  EXPECT_EQ(doc.kind(at(doc, doc.root(), "e")), PyKind::list);
  EXPECT_EQ(doc.size(at(doc, doc.root(), "e")), 0u);
  EXPECT_EQ(doc.kind(at(doc, doc.root(), "f")), PyKind::dict);
  EXPECT_EQ(doc.size(at(doc, doc.root(), "f")), 0u);
}

TEST(PickleRead, TuplesOfEachLength) {
  // pickle.dumps((1, (1, 2), (1, 2, 3), (1, 2, 3, 4)), protocol=2): MARK ... TUPLE, TUPLE2, TUPLE3
  PickleDoc doc =
      PickleDoc::read(from_hex("8002284b014b014b028671004b014b024b03877101284b014b024b034b047471027471032e"));
  ASSERT_EQ(doc.size(doc.root()), 4u);
  for (size_t i = 1; i < 4; ++i) {
    PyRef t = doc.item(doc.root(), i);
    ASSERT_EQ(doc.size(t), i + 1);
    EXPECT_EQ(doc.integer(doc.item(t, i)), int64_t(i + 1));
  }
}

TEST(PickleRead, MemoSharesOneNode) {
  // x = {'a': 1}; pickle.dumps([x, x, 'ab', 'ab'], protocol=2): the second x and 'ab' are BINGETs
  PickleDoc doc = PickleDoc::read(from_hex("80025d7100287d710158010000006171024b017368015802000000616271036803652e"));
  PyRef list = doc.root();
  ASSERT_EQ(doc.size(list), 4u);
  EXPECT_EQ(doc.item(list, 0).node, doc.item(list, 1).node);
  EXPECT_EQ(doc.item(list, 2).node, doc.item(list, 3).node);
  EXPECT_EQ(doc.integer(at(doc, doc.item(list, 1), "a")), 1);
  EXPECT_EQ(doc.text(doc.item(list, 3)), "ab");

  // s = 'shared text'; pickle.dumps([s, s], protocol=4): MEMOIZE, then BINGET 1
  PickleDoc v4 = PickleDoc::read(from_hex("80049515000000000000005d94288c0b7368617265642074657874946801652e"));
  EXPECT_EQ(v4.item(v4.root(), 0).node, v4.item(v4.root(), 1).node);
  EXPECT_EQ(v4.text(v4.item(v4.root(), 1)), "shared text");
}

TEST(PickleRead, IntegersOfEveryWidth) {
  // pickle.dumps([2**63, -2**70, 2**63-1, -2**63, 0, -1, 255, 256, 65535, 65536, -2**31, 2**31-1, 2**31],
  //              protocol=2)
  PickleDoc doc = PickleDoc::read(from_hex(
      "80025d7100288a090000000000000080008a090000000000000000c08a08ffffffffffffff7f8a0800000000000000804b004aff"
      "ffffff4bff4d00014dffff4a000001004a000000804affffff7f8a050000008000652e"));
  PyRef l = doc.root();
  ASSERT_EQ(doc.size(l), 13u);
  EXPECT_EQ(doc.kind(doc.item(l, 0)), PyKind::big_integer);
  EXPECT_EQ(doc.kind(doc.item(l, 1)), PyKind::big_integer);
  EXPECT_EQ(doc.integer(doc.item(l, 2)), INT64_MAX);
  EXPECT_EQ(doc.integer(doc.item(l, 3)), INT64_MIN);
  std::vector<int64_t> small = {0, -1, 255, 256, 65535, 65536, -2147483648LL, 2147483647, 2147483648LL};
  for (size_t i = 0; i < small.size(); ++i) EXPECT_EQ(doc.integer(doc.item(l, 4 + i)), small[i]) << i;
  EXPECT_EQ(doc.real(doc.item(l, 7)), 256.0);  // an int read as a float converts
  EXPECT_THROW(doc.integer(doc.item(l, 0)), PickleError);
  EXPECT_THROW(doc.real(doc.item(l, 0)), PickleError);
}

TEST(PickleRead, LongWithRedundantSignBytesStillFits) {
  // LONG1 of 10 bytes: -2 followed by sign bytes (Python writes the fewest, but the number is the same).
  PickleDoc doc = PickleDoc::read(Ops{}.op(0x8a).le(10, 1).le(0xfffffffffffffffe, 8).le(0xffff, 2).stop());
  EXPECT_EQ(doc.integer(doc.root()), -2);
  // LONG4 of 0 bytes is 0.
  EXPECT_EQ(PickleDoc::read(Ops{}.op(0x8b).le(0, 4).stop()).integer(PyRef{0}), 0);
}

TEST(PickleRead, Floats) {
  // pickle.dumps([0.5, -1.25e300, float('inf'), 3.0], protocol=2)
  PickleDoc doc = PickleDoc::read(
      from_hex("80025d710028473fe000000000000047fe3ddd4baa009303477ff0000000000000474008000000000000652e"));
  EXPECT_EQ(doc.real(doc.item(doc.root(), 0)), 0.5);
  EXPECT_EQ(doc.real(doc.item(doc.root(), 1)), -1.25e300);
  EXPECT_TRUE(std::isinf(doc.real(doc.item(doc.root(), 2))));
  EXPECT_EQ(doc.real(doc.item(doc.root(), 3)), 3.0);
}

TEST(PickleRead, UnicodeTextAsUtf8) {
  // pickle.dumps('h\u00e9llo \u2713 \U0001F600', protocol=3)
  PickleDoc doc = PickleDoc::read(from_hex("8003580f00000068c3a96c6c6f20e29c9320f09f988071002e"));
  EXPECT_EQ(doc.kind(doc.root()), PyKind::text);
  EXPECT_EQ(doc.text(doc.root()), "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80");
}

TEST(PickleRead, BytesAndBytearray) {
  // pickle.dumps([b'\x00\xffab', b''], protocol=3)
  PickleDoc doc = PickleDoc::read(from_hex("80035d710028430400ff6162710143007102652e"));
  EXPECT_EQ(doc.kind(doc.item(doc.root(), 0)), PyKind::bytes);
  EXPECT_EQ(doc.text(doc.item(doc.root(), 0)), std::string("\x00\xff"
                                                           "ab",
                                                           4));
  EXPECT_EQ(doc.text(doc.item(doc.root(), 1)), "");
  // pickle.dumps(bytearray(b'xyz'), protocol=5): BYTEARRAY8
  PickleDoc v5 = PickleDoc::read(from_hex("8005950e0000000000000096030000000000000078797a942e"));
  EXPECT_EQ(v5.kind(v5.root()), PyKind::bytes);
  EXPECT_EQ(v5.text(v5.root()), "xyz");
}

TEST(PickleRead, SetsAreLists) {
  // pickle.dumps({1, 2, 3}, protocol=4): EMPTY_SET, ADDITEMS
  PickleDoc set = PickleDoc::read(from_hex("8004950b000000000000008f94284b014b024b03902e"));
  ASSERT_EQ(set.kind(set.root()), PyKind::list);
  ASSERT_EQ(set.size(set.root()), 3u);
  EXPECT_EQ(set.integer(set.item(set.root(), 2)), 3);
  // pickle.dumps(frozenset({7}), protocol=4): FROZENSET
  PickleDoc frozen = PickleDoc::read(from_hex("8004950600000000000000284b0791942e"));
  ASSERT_EQ(frozen.kind(frozen.root()), PyKind::list);
  EXPECT_EQ(frozen.integer(frozen.item(frozen.root(), 0)), 7);
}

TEST(PickleRead, DictOfManyBatches) {
  // The bytes of pickle.dumps({f'k{i}': i for i in range(2345)}, protocol=2): SETITEMS every 1,000 pairs.
  constexpr uint32_t n = 2345;
  Ops ops;
  ops.op('}').put(0);
  for (uint32_t i = 0; i < n; ++i) {
    if (i % 1000 == 0) ops.op('(');
    ops.str("k" + std::to_string(i)).put(i + 1).integer(i);
    if (i % 1000 == 999 || i == n - 1) ops.op('u');
  }
  PickleDoc doc = PickleDoc::read(ops.stop());
  ASSERT_EQ(doc.size(doc.root()), n);
  for (uint32_t i = 0; i < n; i += 117) {
    EXPECT_EQ(doc.text(doc.key(doc.root(), i)), "k" + std::to_string(i));
    EXPECT_EQ(doc.integer(doc.item(doc.root(), i)), i);
  }
  EXPECT_EQ(doc.integer(at(doc, doc.root(), "k2344")), 2344);
  EXPECT_EQ(doc.integer(at(doc, doc.root(), "k1000")), 1000);
}

TEST(PickleRead, ListOfManyBatches) {
  // The bytes of pickle.dumps(list(range(2500)), protocol=2): APPENDS every 1,000 items.
  Ops ops;
  ops.op(']').put(0);
  for (uint32_t i = 0; i < 2500; ++i) {
    if (i % 1000 == 0) ops.op('(');
    ops.integer(i);
    if (i % 1000 == 999 || i == 2499) ops.op('e');
  }
  PickleDoc doc = PickleDoc::read(ops.stop());
  ASSERT_EQ(doc.size(doc.root()), 2500u);
  for (uint32_t i = 0; i < 2500; ++i) ASSERT_EQ(doc.integer(doc.item(doc.root(), i)), i);
}

TEST(PickleRead, RepeatedKeyFindsTheLast) {
  // Python's pickler never repeats a key, but its unpickler keeps the last.
  PickleDoc doc = PickleDoc::read(Ops{}.op('}').op('(').str("a").integer(1).str("a").integer(2).op('u').stop());
  EXPECT_EQ(doc.size(doc.root()), 2u);
  EXPECT_EQ(doc.integer(*doc.find(doc.root(), "a")), 2);
}

TEST(PickleRead, DeepDocumentBuiltByTuple1) {
  // ((((...),),),) 200,000 deep: the stack stays one value deep, so it is
  // read, and walked here without recursion.
  constexpr size_t depth = 200'000;
  PickleDoc doc = PickleDoc::read(Ops{}.op(')').repeat(0x85, depth).stop());
  PyRef v = doc.root();
  size_t levels = 0;
  while (doc.size(v) == 1) v = doc.item(v, 0), ++levels;
  EXPECT_EQ(levels, depth);
}

TEST(PickleRead, ContainersBuiltFromMarks) {
  // MARK 1 2 LIST, MARK 'a' 3 DICT, then APPEND onto the list built by LIST.
  PickleDoc doc = PickleDoc::read(Ops{}
                                      .op('(')
                                      .op('(')
                                      .integer(1)
                                      .integer(2)
                                      .op('l')
                                      .integer(9)
                                      .op('a')
                                      .op('(')
                                      .str("a")
                                      .integer(3)
                                      .op('d')
                                      .op('t')
                                      .stop());
  PyRef list = doc.item(doc.root(), 0);
  ASSERT_EQ(doc.size(list), 3u);
  EXPECT_EQ(doc.integer(doc.item(list, 2)), 9);
  EXPECT_EQ(doc.integer(*doc.find(doc.item(doc.root(), 1), "a")), 3);
}

TEST(PickleRead, StackOpcodes) {
  // [1, 2] with DUP, POP and POP_MARK along the way: 5 POP, MARK 6 7 POP_MARK, DUP of 2 then POP.
  PickleDoc doc = PickleDoc::read(Ops{}
                                      .op(']')
                                      .op('(')
                                      .integer(1)
                                      .integer(5)
                                      .op('0')
                                      .op('(')
                                      .integer(6)
                                      .integer(7)
                                      .op('1')
                                      .integer(2)
                                      .op('2')
                                      .op('0')
                                      .op('e')
                                      .stop());
  ASSERT_EQ(doc.size(doc.root()), 2u);
  EXPECT_EQ(doc.integer(doc.item(doc.root(), 1)), 2);
}

// ---------------------------------------------------------------------------
// Accessors on the wrong kind

TEST(PickleAccess, WrongKindSaysWhichKinds) {
  PickleDoc doc = PickleDoc::read(from_hex(kSnapshotV4));
  PyRef ratio = at(doc, doc.root(), "ratio");
  try {
    doc.integer(ratio);
    FAIL() << "an int from a float";
  } catch (const PickleError& e) {
    EXPECT_THAT_ERROR_HAS(std::string(e.what()), "is a float, not an int");
  }
  EXPECT_THROW(doc.text(ratio), PickleError);
  EXPECT_THROW(doc.boolean(ratio), PickleError);
  EXPECT_THROW(doc.item(ratio, 0), PickleError);
  EXPECT_THROW(doc.key(at(doc, doc.root(), "segments"), 0), PickleError);
  EXPECT_THROW(doc.item(doc.root(), 6), PickleError);  // past the end
  EXPECT_THROW(doc.kind(PyRef{uint32_t(doc.node_count())}), PickleError);
  EXPECT_EQ(doc.size(ratio), 0u);
}

// ---------------------------------------------------------------------------
// What is refused

TEST(PickleRefuse, ClassInstanceNamesCode) {
  // pickle.dumps(collections.OrderedDict(a=1), protocol=2): GLOBAL collections OrderedDict, REDUCE
  std::string message =
      error_of(from_hex("800263636f6c6c656374696f6e730a4f726465726564446963740a71002952710158010000006171024b01732e"));
  EXPECT_THAT_ERROR_HAS(message, "byte 2: opcode 0x63 (GLOBAL) names code and is refused");
  EXPECT_THAT_ERROR_HAS(message, "loupe never runs a pickle's code");
}

TEST(PickleRefuse, FunctionNamesCode) {
  // pickle.dumps(os.system, protocol=4): STACK_GLOBAL posix system
  EXPECT_REFUSED(from_hex("80049514000000000000008c05706f736978948c0673797374656d9493942e"),
                 "byte 28: opcode 0x93 (STACK_GLOBAL) names code");
}

TEST(PickleRefuse, EachOpcodeOfCodeOrBuffersOrTextProtocol) {
  for (uint8_t code : std::vector<uint8_t>{'R', 'b', 'i', 'o', 0x81, 0x92, 'P', 'Q', 0x82, 0x83, 0x84}) {
    EXPECT_REFUSED(Ops{}.op('N').op(code).stop(), "names code") << int(code);
  }
  for (uint8_t code : std::vector<uint8_t>{0x97, 0x98}) EXPECT_REFUSED(Ops{}.op(code).stop(), "buffer") << int(code);
  for (uint8_t code : std::vector<uint8_t>{'I', 'L', 'F', 'S', 'V', 'g', 'p'}) {
    EXPECT_REFUSED(Ops{}.op(code).stop(), "text protocol 0") << int(code);
  }
  EXPECT_REFUSED(Ops{}.op(0xff).stop(), "byte 2: unknown opcode 0xff");
  EXPECT_REFUSED(Ops{}.op(0x99).stop(), "unknown opcode 0x99");
}

TEST(PickleRefuse, ProtocolsZeroAndOne) {
  // pickle.dumps({'a': 1}, protocol=0) and protocol=1: no PROTO opcode
  EXPECT_REFUSED(from_hex("286470300a56610a70310a49310a732e"), "byte 0: not a pickle of protocol 2 or later");
  EXPECT_REFUSED(from_hex("7d710058010000006171014b01732e"), "not a pickle of protocol 2 or later");
  EXPECT_REFUSED(std::string(), "not a pickle of protocol 2 or later");
  EXPECT_REFUSED(std::string("\x80\x01N.", 4), "protocol 1 is refused");
  EXPECT_REFUSED(std::string("\x80\x06N.", 4), "protocol 6 is refused");
  EXPECT_REFUSED(Ops{}.op(0x80).le(2, 1).op('N').stop(), "PROTO again");
}

TEST(PickleRefuse, EveryTruncation) {
  for (const char* hex : {kSnapshotV2, kSnapshotV4}) {
    std::string whole = from_hex(hex);
    for (size_t n = 0; n < whole.size(); ++n) {
      EXPECT_THROW(PickleDoc::read(whole.substr(0, n)), PickleError) << n << " bytes of " << whole.size();
    }
  }
  EXPECT_REFUSED(from_hex(kSnapshotV2).substr(0, 20), "truncated");
}

TEST(PickleRefuse, LengthsPastTheEnd) {
  EXPECT_REFUSED(Ops{}.op(0x8d).le(uint64_t(1) << 63, 8).stop(), "byte 2: BINUNICODE8 says 9223372036854775808 bytes");
  EXPECT_REFUSED(Ops{}.op(0x8b).le(0x7fffffff, 4).stop(), "truncated");
  EXPECT_REFUSED(Ops{}.op(0x8b).le(0xffffffff, 4).stop(), "a length is never negative");
  EXPECT_REFUSED(Ops{}.op('T').le(0x80000000, 4).stop(), "a length is never negative");
  EXPECT_REFUSED(Ops{}.op(0x95).le(1000, 8).op('N').stop(), "FRAME of 1000 bytes but 2 are left");
  EXPECT_REFUSED(Ops{}.op('J').le(7, 2).bytes, "BININT needs 4 bytes of argument but 2 are left");
}

TEST(PickleRefuse, BytesAfterStop) { EXPECT_REFUSED(from_hex(kSnapshotV4) + "N", "1 bytes follow STOP"); }

TEST(PickleRefuse, MemoIndexNeverStored) {
  EXPECT_REFUSED(Ops{}.op('N').op('q').le(0, 1).op('h').le(1, 1).op('t').stop(),
                 "byte 5: BINGET of memo index 1, which no opcode stored");
  EXPECT_REFUSED(Ops{}.op('j').le(7, 4).stop(), "LONG_BINGET of memo index 7");
  EXPECT_REFUSED(Ops{}.op('N').op('r').le(4000000000u, 4).stop(), "far past");
}

// l = []; l.append(l); pickle.dumps(l, protocol=2) is PROTO 2, EMPTY_LIST,
// BINPUT 0, BINGET 0, APPEND, STOP. The list is used (as the item) before
// it is changed, so it is refused, as is a cycle through two lists.
TEST(PickleRefuse, ListHoldingItself) {
  EXPECT_EQ(from_hex("80025d71006800612e"), Ops{}.op(']').put(0).op('h').le(0, 1).op('a').stop());
  EXPECT_REFUSED(from_hex("80025d71006800612e"), "byte 7: APPEND changes a list after it was used");
  // a = []; b = [a]; a.append(b); pickle.dumps(a, protocol=2)
  EXPECT_REFUSED(from_hex("80025d71005d7101680061612e"), "changed after it was used");
  // A dict holding itself as a value.
  EXPECT_REFUSED(Ops{}.op('}').put(0).str("me").op('h').le(0, 1).op('s').stop(), "SETITEM changes a dict");
  // A list popped (and so used), then changed through the memo.
  EXPECT_REFUSED(Ops{}.op(']').put(0).op('0').op('h').le(0, 1).op('N').op('a').op('t').stop(), "after it was used");
}

TEST(PickleRefuse, MalformedStack) {
  EXPECT_REFUSED(Ops{}.op('a').stop(), "APPEND needs 2 values above the last MARK but finds 0");
  EXPECT_REFUSED(Ops{}.op('}').op('N').op('a').stop(), "APPEND onto a dict, not a list");
  EXPECT_REFUSED(Ops{}.op(']').op('(').op('N').op('N').op('u').stop(), "SETITEMS onto a list, not a dict");
  EXPECT_REFUSED(Ops{}.op(']').op('(').op('N').op(0x90).stop(), "ADDITEMS onto a list, not a set");
  EXPECT_REFUSED(Ops{}.op(0x8f).op('(').op('N').op('e').stop(), "APPENDS onto a set, not a list");
  EXPECT_REFUSED(Ops{}.op('N').op(0x85).op('N').op('a').stop(), "APPEND onto a tuple, not a list");
  EXPECT_REFUSED(Ops{}.op('}').op('(').op('N').op('u').stop(), "odd number");
  EXPECT_REFUSED(Ops{}.op('N').op('t').stop(), "TUPLE with no MARK before it");
  EXPECT_REFUSED(Ops{}.op('(').op('N').op('e').stop(), "APPENDS finds no container below its MARK");
  EXPECT_REFUSED(Ops{}.op(']').op('(').op('N').op('a').stop(), "APPEND needs 2 values above the last MARK");
  EXPECT_REFUSED(Ops{}.op('0').stop(), "POP of an empty stack");
  EXPECT_REFUSED(Ops{}.op('N').op('N').stop(), "STOP with 2 values on the stack");
  EXPECT_REFUSED(Ops{}.op('N').op('(').stop(), "STOP inside a MARK");
  EXPECT_REFUSED(Ops{}.stop(), "STOP with 0 values");
  EXPECT_REFUSED(Ops{}.op('q').le(0, 1).stop(), "BINPUT needs 1 values");
}

TEST(PickleRefuse, NestingPastTheLimitIsAnErrorNotACrash) {
  EXPECT_REFUSED(Ops{}.repeat('(', 200'000).stop(), "more than 100,000 MARKs");
  EXPECT_REFUSED(Ops{}.repeat(']', 200'000).stop(), "more than 100,000 values");
  EXPECT_REFUSED(Ops{}.repeat('N', 200'000).stop(), "more than 100,000 values");
}

}  // namespace
